"""``gluon-suite info``: versions of the installed stack, Horovod's build (MXNet extension, Gloo,
MPI), the CPU count and the devices MXNet and Horovod can use; a broken Horovod ends in one line
that names the fix."""
import json
import os
import platform

from .. import __version__
from ..utils.errors import GluonSuiteError


_PACKAGES = ("mxnet", "numpy", "gluoncv", "gluonnlp", "horovod")

HOROVOD_FIX = ("rebuild it with `make setup` (or: HOROVOD_WITH_MXNET=1 HOROVOD_WITH_GLOO=1 "
               "HOROVOD_WITHOUT_MPI=1 pip install --no-build-isolation --no-cache-dir --force-reinstall "
               "horovod==0.28.1 after mxnet is installed)")


class HorovodBroken(GluonSuiteError):
    """Horovod is missing, or was built without its MXNet extension or without Gloo."""


def _version(dist):
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def horovod_build():
    """Return ``{'mxnet': bool, 'gloo': bool, 'mpi': bool}`` for the installed Horovod.

    Raises ``HorovodBroken`` with a one-line fix when Horovod or its MXNet extension cannot be loaded:
    importing ``horovod.mxnet`` loads the compiled extension, which is what breaks when Horovod was
    built before MXNet was installed, or against another MXNet.
    """
    try:
        import horovod  # noqa: F401
    except ImportError as exc:
        raise HorovodBroken(f"Horovod is not installed ({exc}); {HOROVOD_FIX}") from None
    try:
        import horovod.mxnet as hvd
    except Exception as exc:  # the extension raises ImportError, OSError or its own errors
        first = " ".join(str(exc).split())[:200]
        raise HorovodBroken(f"Horovod's MXNet extension cannot be loaded ({first}); {HOROVOD_FIX}") from None
    # the import above loaded the compiled MXNet extension: that is what "built with MXNet" means
    build = {"mxnet": True, "gloo": bool(hvd.gloo_built()), "mpi": bool(hvd.mpi_built())}
    if not (build["mxnet"] and build["gloo"]):
        missing = " and ".join(k for k in ("mxnet", "gloo") if not build[k])
        raise HorovodBroken(f"Horovod was built without {missing}; {HOROVOD_FIX}")
    return build


def info():
    """Collect versions of the stack, Horovod's build and the CPU count; raise HorovodBroken when
    Horovod cannot run MXNet jobs over Gloo."""
    facts = {
        "gluon_suite": __version__,
        "python": platform.python_version(),
        **{name: _version(name) for name in _PACKAGES},
        "cpu_count": os.cpu_count(),
    }
    try:
        import mxnet as mx
        facts["mxnet_features"] = sorted(f.name for f in mx.runtime.Features().values() if f.enabled)
    except Exception as exc:  # a broken mxnet is reported, not hidden
        raise GluonSuiteError(f"MXNet cannot be imported ({' '.join(str(exc).split())[:200]}); "
                              "reinstall the pinned stack with `make setup`") from None
    facts["horovod_build"] = horovod_build()
    from ..utils.devices import device_facts
    facts["devices"] = device_facts()
    return facts


def _cmd_info(args):
    facts = info()
    if args.json:
        print(json.dumps(facts, indent=2, sort_keys=True))
        return 0
    hb = facts["horovod_build"]
    frameworks = ", ".join(n for n, k in (("MXNet", "mxnet"),) if hb[k]) or "none"
    controllers = ", ".join(n for n, k in (("Gloo", "gloo"), ("MPI", "mpi")) if hb[k]) or "none"
    rows = [("gluon_suite", facts["gluon_suite"]), ("python", facts["python"])]
    rows += [(n, facts[n] or "not installed") for n in _PACKAGES]
    dev = facts["devices"]
    gpu_ops = ", ".join(n for n, k in (("NCCL", "nccl"), ("CUDA", "cuda")) if dev["horovod_gpu_ops"][k])
    rows += [("horovod frameworks", frameworks), ("horovod controllers", controllers),
             ("horovod gpu operations", gpu_ops or "none (CPU collectives only)"),
             ("cpu count", facts["cpu_count"]),
             ("gpus", f"{len(dev['gpus_visible'])} visible, {dev['mxnet_gpus']} usable by MXNet"
              + (f" ({', '.join(dev['gpus_visible'])})" if dev["gpus_visible"] else "")),
             ("mxnet cuda / cudnn / nccl", " / ".join("yes" if dev[k] else "no" for k in
                                                      ("mxnet_cuda", "mxnet_cudnn", "mxnet_nccl")))]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    if dev["advice"]:
        print(f"note: {dev['advice']}")
    return 0


def add_parser(sub):
    """Add the ``info`` command to the subparsers ``sub`` of ``gluon-suite``."""
    pi = sub.add_parser("info", help="versions of the stack and Horovod's build (MXNet, Gloo)")
    pi.add_argument("--json", action="store_true", help="print the facts as JSON")
    pi.set_defaults(func=_cmd_info)
