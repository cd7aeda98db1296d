"""The distributed-training layer: communicators (Horovod, single process) and, as the suite grows,
compressors, synchronisation algorithms, optimizers and schedules. Never imports cv/nlp/graph."""
from .comm import Communicator, CommStats, LocalCommunicator, HorovodCommunicator, get_communicator

__all__ = ["Communicator", "CommStats", "LocalCommunicator", "HorovodCommunicator", "get_communicator"]
from .compression import COMPRESSORS, Compressor, make_compressor
from .algorithms import ALGORITHMS, Algorithm, make_algorithm
from .trainer import DistributedTrainer

__all__ += ["COMPRESSORS", "Compressor", "make_compressor", "ALGORITHMS", "Algorithm",
            "make_algorithm", "DistributedTrainer"]
from . import optim  # registers 'lans' and 'adaalter' with mx.optimizer
from .schedules import ElasticRamp, Sequential, WarmupConstantDecay, WarmupCosine, WarmupMultiStep

__all__ += ["ElasticRamp", "Sequential", "WarmupConstantDecay", "WarmupCosine", "WarmupMultiStep"]
