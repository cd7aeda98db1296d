"""Worker program for test_registry.py: the registered ``every_other`` algorithm and ``strided``
compressor of plugin_algorithms.py trained through ``DistributedTrainer`` on real Horovod workers,
given by name (``module:name`` and, once the module is imported, the bare name), by options and
by object. Writes each configuration's trajectory of parameters (bias then weight) to
$OUT/rank{R}.json."""
import json
import os

from gluon_suite.distributed import get_communicator, make_algorithm, make_compressor
from gluon_suite.distributed.registry import resolve_algorithm
# the same network, data and loop as the unregistered compressor's job
from tests.distributed._custom_compressor_job import B, D, LR, O, STEPS, data, run  # noqa: F401

MODULE = "tests.distributed.plugin_algorithms"

CONFIGS = {   # each is a function: the module is imported by the first name that needs it
    "every_other": lambda: dict(algorithm=f"{MODULE}:every_other"),
    "every_other_offset1": lambda: dict(algorithm=make_algorithm("every_other", offset=1)),
    "strided": lambda: dict(algorithm="sync", compressor=make_compressor("strided", ratio=2)),
    "strided_by_name": lambda: dict(algorithm={"name": "sync", "compressor": "strided"}),
}


def main():
    comm = get_communicator()
    out = {}
    for name, cfg in CONFIGS.items():
        out[name] = run(comm, cfg()).tolist()
        c = cfg()
        out[name + ".config"] = resolve_algorithm(c["algorithm"], c.get("compressor")).config()
    with open(os.path.join(os.environ["OUT"], f"rank{comm.rank}.json"), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
