"""The distributed-training layer: communicators (Horovod, single process), compressors,
synchronisation algorithms, ``DistributedTrainer``, elastic state and the launcher. Never imports
cv/nlp/graph; the optimizers and LR schedules it works with live one layer below, in
``gluon_suite.optim`` (imported here so that ``'lans'`` and ``'adaalter'`` are registered).

Algorithms and compressors are found by name only in ``registry``: importing this package
registers the built-in ones (``register_algorithm``/``register_compressor`` add yours)."""
from .. import optim  # noqa: F401  registers 'lans' and 'adaalter' with mx.optimizer
from .comm import Communicator, CommStats, LocalCommunicator, HorovodCommunicator, get_communicator
from .registry import (ALGORITHMS, COMPRESSORS, AlgorithmOptions, CompressorOptions, make_algorithm,
                       make_compressor, register_algorithm, register_compressor)
from .compression import Compressor, Payload
from . import shared_random  # noqa: F401  registers grbs and randomk
from . import bfloat16  # noqa: F401  registers bf16
from .base import Algorithm
from . import algorithms  # noqa: F401  registers sync, ef, local and cser
from . import local_adaalter  # noqa: F401  registers local_adaalter
from . import auto  # noqa: F401  registers auto
from .trainer import DistributedTrainer

__all__ = ["Communicator", "CommStats", "LocalCommunicator", "HorovodCommunicator", "get_communicator",
           "COMPRESSORS", "Compressor", "Payload", "make_compressor", "ALGORITHMS", "Algorithm",
           "make_algorithm", "register_algorithm", "register_compressor", "AlgorithmOptions",
           "CompressorOptions", "DistributedTrainer"]
