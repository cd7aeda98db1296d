"""The distributed-training layer: communicators (Horovod, single process), compressors,
synchronisation algorithms, ``DistributedTrainer``, elastic state and the launcher. Never imports
cv/nlp/graph; the optimizers and LR schedules it works with live one layer below, in
``gluon_suite.optim`` (imported here so that ``'lans'`` and ``'adaalter'`` are registered)."""
from .. import optim  # noqa: F401  registers 'lans' and 'adaalter' with mx.optimizer
from .comm import Communicator, CommStats, LocalCommunicator, HorovodCommunicator, get_communicator
from .compression import COMPRESSORS, Compressor, make_compressor
from .algorithms import Algorithm
from .factory import ALGORITHMS, make_algorithm
from .trainer import DistributedTrainer

__all__ = ["Communicator", "CommStats", "LocalCommunicator", "HorovodCommunicator", "get_communicator",
           "COMPRESSORS", "Compressor", "make_compressor", "ALGORITHMS", "Algorithm",
           "make_algorithm", "DistributedTrainer"]
