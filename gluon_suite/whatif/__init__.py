"""Is the network the bottleneck? A step-time model (``model``: compute, gradient bytes,
bandwidth, workers, GPUs per host, compression, overlap), a profiler that measures the compute side
of a real network (``profiler``), profiles as files (``profiles``), the choice of compression for a
cluster (``advise``) and a multi-host testbed in network namespaces (``testbed``). Never imports
cv/nlp/graph or the model zoo."""
from .advise import advise, candidate_list
from .model import StepProfile, allreduce_s, check, fuse, min_ratio, predict, ring_allreduce_s
from .profiler import profile_model
from .profiles import load_profile, profile_record, save_profile

__all__ = ["StepProfile", "advise", "allreduce_s", "candidate_list", "check", "fuse", "load_profile", "min_ratio",
           "predict", "profile_model", "profile_record", "ring_allreduce_s", "save_profile"]
