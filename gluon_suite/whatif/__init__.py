"""Is the network the bottleneck? A step-time model (``model``: compute, gradient bytes,
bandwidth, workers, compression, overlap), a profiler that measures the compute side of a real
network (``profiler``) and a multi-host testbed in network namespaces (``testbed``). Never
imports cv/nlp/graph or the model zoo."""
from .model import StepProfile, check, fuse, min_ratio, predict, ring_allreduce_s
from .profiler import profile_model

__all__ = ["StepProfile", "check", "fuse", "min_ratio", "predict", "ring_allreduce_s", "profile_model"]
