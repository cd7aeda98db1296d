"""Error-feedback SGD on 2 real Horovod workers against a float64 NumPy reference of its rule
(docs/methods.md): p_i = u_i + e_i, x <- x - mean_i C(p_i), e_i <- p_i - C(p_i), with every lossy
compressor (top-k, scaled sign, random-k, float16, bfloat16), one bucket (bias then weight) and one
bucket per tensor, on the compiled compression kernels (when loaded) and on MXNet's operators. The
``ef`` algorithm (the residual updated by ``compress_feedback``, before the payload is sent) equals
the error feedback written out (compress, send, subtract) exactly, and a reference that dropped the
residual is far from what the workers did (the mutation "residual dropped" fails every case).

float16 and bfloat16 round each value: a value the float32 workers and the float64 reference put on
either side of a rounding boundary (a few in a thousand) makes the two differ by one unit in the last
place there for a step, before the residual carries it back. Those two are therefore held to the
reference in most entries and in the whole trajectory's norm, and the dropped residual's distance is
required to be several times larger."""
import os
import subprocess
import sys

import numpy as np
import pytest

from ..conftest import HOROVODRUN, REPO, job_output

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _algo_job as job  # noqa: E402
import _ef_job as efjob  # noqa: E402
from .test_comm_kernels_more import strata_reference  # noqa: E402

N = 2
SHAPES = [(job.O,), (job.O, job.D)]   # trainer (sorted) order: bias, then weight
TOL = dict(rtol=1e-5, atol=2e-6)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("ef")
    env = dict(os.environ, OUT=str(out), OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([HOROVODRUN, "-np", str(N), "-H", f"localhost:{N}", "--gloo", sys.executable,
                        os.path.join(HERE, "_ef_job.py")], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, job_output(p)
    return [dict(np.load(out / f"rank{r}.npz")) for r in range(N)]


def topk(p, ratio=2):
    """C(p): the k largest |p| (ties to the lowest index), k = max(1, round(n / (2 ratio)))."""
    k = max(1, min(p.size, int(round(p.size / (2.0 * ratio)))))
    keep = np.argsort(-np.abs(p), kind="stable")[:k]
    c = np.zeros_like(p)
    c[keep] = p[keep]
    return c


def sign(p):
    """C(p) = mean |p| * sign(p), sign(0) = +1."""
    return np.abs(p).mean() * np.where(p >= 0, 1.0, -1.0)


def randomk(p, key, step, ratio=2, seed=0):
    """C(p): random-k's documented coordinates (RandomKCompressor: k = ceil(n / ratio) strata, the
    table from the seed and n, the step's rotation and shift from (seed, step, key))."""
    n = p.size
    k = max(1, int(np.ceil(n / ratio)))
    table = np.random.Generator(np.random.Philox(key=[seed, 2 ** 62 + n])).random(k)
    g = np.random.Generator(np.random.Philox(key=[seed, step * 1_000_003 + key]))
    idx = strata_reference(n, table, int(g.integers(k)), float(g.random()))
    c = np.zeros_like(p)
    c[idx] = p[idx]
    return c


def fp16(p):
    """C(p): each value rounded to float16 (from its float32 value, as the workers hold it)."""
    return p.astype(np.float32).astype(np.float16).astype(np.float64)


def bf16(p):
    """C(p): each value's float32 bits rounded to 16, to nearest with ties to even."""
    bits = p.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


COMPRESS = {"ef_topk": topk, "ef_sign": sign, "ef_randomk": randomk, "ef_fp16": fp16, "ef_bf16": bf16}
ROUNDING = ("ef_fp16", "ef_bf16")


def grads(x, rank):
    X, Y = (a.astype(np.float64) for a in job.data(rank))
    b, W = x
    gp = (X @ W.T + b - Y) / job.O / job.B
    return [gp.sum(0), gp.T @ X]


def reference_ef(x0, name, per_tensor, keep_residual=True, steps=efjob.STEPS):
    """EF-SGD in float64 for N workers (momentum SGD, wd in the gradient, momentum local): the
    model after each step and each worker's residual, flattened in trainer order. Random-k's key is
    the bucket's first member's trainer index (bias 0, weight 1; one bucket: key 0);
    float16 payloads are summed by Horovod in float16 (two workers: the sum rounded once)."""
    compress = COMPRESS[name]
    lr, mu, wd = job.OPT["learning_rate"], job.OPT["momentum"], job.OPT["wd"]
    x = [a.copy() for a in x0]
    m = [[np.zeros_like(a) for a in x0] for _ in range(N)]
    e = [[np.zeros_like(a) for a in x0] for _ in range(N)]
    xs, es = [], [[] for _ in range(N)]
    for step in range(steps):
        cs = []
        for i in range(N):
            g = grads(x, i)
            m[i] = [mu * mk + gk + wd * xk for mk, gk, xk in zip(m[i], g, x)]
            p = [lr * mk + ek for mk, ek in zip(m[i], e[i])]
            if name == "ef_randomk":
                one = (lambda v, key: randomk(v, key, step))
            else:
                one = (lambda v, key: compress(v))
            if per_tensor:   # bias (trainer index 0), weight (1)
                c = [one(pk.ravel(), key).reshape(pk.shape) for key, pk in enumerate(p)]
            else:   # one bucket: bias then weight, one flat vector
                flat = one(np.concatenate([pk.ravel() for pk in p]), 0)
                c = [flat[:job.O], flat[job.O:].reshape(SHAPES[1])]
            e[i] = [pk - ck if keep_residual else np.zeros_like(pk) for pk, ck in zip(p, c)]
            cs.append(c)
        if name == "ef_fp16":
            total = [fp16(sum(c[k] for c in cs)) for k in range(len(x))]
        else:
            total = [sum(c[k] for c in cs) for k in range(len(x))]
        x = [xk - tk / N for xk, tk in zip(x, total)]
        xs.append(np.concatenate([a.ravel() for a in x]))
        for i in range(N):
            es[i].append(np.concatenate([a.ravel() for a in e[i]]))
    return np.array(xs), [np.array(a) for a in es]


def paths(ranks):
    return ["compiled", "mxnet"] if bool(ranks[0]["loaded"]) else ["mxnet"]


CASES = [(name, layout) for name in efjob.CONFIGS for layout in ("", ".pt")]


@pytest.mark.parametrize("name,layout", CASES)
def test_ef_matches_its_float64_reference_on_two_workers(runs, name, layout):
    for path in paths(runs):
        key = f"{path}.fused.{name}{layout}"
        traj0 = runs[0][f"{key}.traj"]
        x0 = [traj0[0][:job.O].astype(np.float64), traj0[0][job.O:].reshape(SHAPES[1]).astype(np.float64)]
        want_x, want_e = reference_ef(x0, name, per_tensor=layout == ".pt")
        dropped_x, _ = reference_ef(x0, name, per_tensor=layout == ".pt", keep_residual=False)
        for r in range(N):
            traj, errs = runs[r][f"{key}.traj"], runs[r][f"{key}.err"]
            gap = np.linalg.norm(traj[1:] - dropped_x)
            if name in ROUNDING:
                # most entries at float32's precision; the trajectory's distance to the reference a
                # small fraction of its distance to the reference without the residual
                off = ~np.isclose(traj[1:], want_x, **TOL)
                assert off.mean() <= 0.02, f"{key} rank {r}: {off.sum()} of {off.size} entries off"
                assert np.linalg.norm(traj[1:] - want_x) <= 0.2 * gap, (key, r)
                off_e = ~np.isclose(errs, want_e[r], **TOL)
                assert off_e.mean() <= 0.02, f"{key} rank {r} residual: {off_e.sum()} of {off_e.size} off"
            else:
                np.testing.assert_allclose(traj[1:], want_x, **TOL, err_msg=f"{key} rank {r}")
                np.testing.assert_allclose(errs, want_e[r], **TOL, err_msg=f"{key} rank {r} residual")
                # the residual matters here: without it the model goes elsewhere
                assert np.abs(traj[1:] - dropped_x).max() > 1e-3, key
            assert gap > 0, key
        assert np.abs(want_e[0][-1]).max() > 0


@pytest.mark.parametrize("name,layout", CASES)
def test_ef_with_compress_feedback_equals_the_written_out_error_feedback_exactly(runs, name, layout):
    for path in paths(runs):
        for r in range(N):
            for what in ("traj", "err"):
                fused = runs[r][f"{path}.fused.{name}{layout}.{what}"]
                unfused = runs[r][f"{path}.unfused.{name}{layout}.{what}"]
                np.testing.assert_array_equal(fused, unfused, err_msg=f"{path} {name}{layout} {what} rank {r}")
