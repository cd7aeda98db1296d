"""The distributed-training layer: communicators (Horovod, single process) and, as the suite grows,
compressors, synchronisation algorithms, optimizers and schedules. Never imports cv/nlp/graph."""
from .comm import Communicator, CommStats, LocalCommunicator, HorovodCommunicator, get_communicator

__all__ = ["Communicator", "CommStats", "LocalCommunicator", "HorovodCommunicator", "get_communicator"]
