"""Worker script for tests/distributed/test_ef_reference.py: runs under horovodrun and trains the
linear model of ``_algo_job`` for a few steps with error feedback (every lossy compressor: top-k,
scaled sign, random-k, float16 and bfloat16; one bucket and one bucket per tensor), with the compiled compression kernels (when they are loaded) and with
MXNet's operators, each with the ``ef`` algorithm as it is and with ``UnfusedEF`` (the error
feedback written out: compress, send, then subtract C(p) from the residual). Saves the
trajectories and residuals per rank."""
import os

import numpy as np

import _algo_job as job
from gluon_suite.distributed import get_communicator, native
from gluon_suite.distributed.algorithms import ErrorFeedbackSGD, sync_payload

STEPS = 6
CONFIGS = {"ef_topk": ("topk", 2), "ef_sign": ("sign", None), "ef_randomk": ("randomk", 2),
           "ef_fp16": ("fp16", None), "ef_bf16": ("bf16", None)}


class UnfusedEF(ErrorFeedbackSGD):
    """EF-SGD with the residual update after the payload is sent, one compressor call and one
    ``add_to`` (the form of the algorithm before ``compress_feedback``)."""

    def after_update(self, before, step):
        work = []
        for b, wb, e in zip(self.buckets, before, self.err):
            ws = b.weights()
            e += wb
            e -= b.gather_weights("after")
            es = b.shaped(e)
            pl = self.compressor.compress(es, b.key, step, dense=b.small, layout=b)
            work.append((b, ws, wb, es, pl, sync_payload(self.comm, pl, f"ef.b{b.key}")))
        for b, ws, wb, es, pl, ex in work:
            pl.add_to(es, pl.tensors, -1.0)
            ex.add_to(b.shaped(wb), -1.0)
            b.scatter(wb, ws)


def main():
    job.STEPS = STEPS
    comm = get_communicator()
    out = {"loaded": np.array(native.LOADED)}
    paths = ["compiled", "mxnet"] if native.LOADED else ["mxnet"]
    for path in paths:
        native.LOADED = path == "compiled"
        for name, (cname, ratio) in CONFIGS.items():
            kw = {} if ratio is None else {"ratio": ratio}
            for layout, bucket in (("", {}), (".pt", {"bucket_mb": 0})):
                for form in ("fused", "unfused"):
                    if form == "fused":
                        cfg = dict(algorithm="ef", compressor=cname, **kw, **bucket)
                    else:
                        cfg = dict(algorithm=UnfusedEF(ErrorFeedbackSGD.Options(compressor=cname, **kw)
                                                       .compressor_object()), **bucket)
                    traj, errs, _, _ = job.run(comm, cfg)
                    key = f"{path}.{form}.{name}{layout}"
                    out[f"{key}.traj"], out[f"{key}.err"] = traj, errs
    np.savez(os.path.join(os.environ["OUT"], f"rank{comm.rank}.npz"), **out)


if __name__ == "__main__":
    main()
