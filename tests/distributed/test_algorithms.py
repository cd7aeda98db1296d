"""Synchronisation algorithms on 2 real Horovod workers, against float64 NumPy references of the
update rules in docs/methods.md ("CSER"), plus the CSER invariant, shared GRBS masks and wire bytes. Every
configuration runs twice: with buckets (the default: one bucket, bias then weight) and with one
bucket per tensor (``bucket_mb=0``, suffix '.pt')."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from gluon_suite.distributed.compression import make_compressor

from ..conftest import HOROVODRUN, REPO, job_output

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import _algo_job as job  # noqa: E402

N = 2
LAYOUTS = ["", ".pt"]  # one bucket for both parameters / one bucket per tensor


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("algo")
    env = dict(os.environ, OUT=str(out), OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([HOROVODRUN, "-np", str(N), "-H", f"localhost:{N}", "--gloo", sys.executable,
                        os.path.join(HERE, "_algo_job.py")], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, job_output(p)
    ranks = [dict(np.load(out / f"rank{r}.npz")) for r in range(N)]
    meta = [json.load(open(out / f"rank{r}.json")) for r in range(N)]
    return ranks, meta


# ---- float64 references written from docs/methods.md ------------------------------------------------
SHAPES = [(job.O,), (job.O, job.D)]  # sorted parameter names: bias, then weight


def split(flat):
    return [flat[:job.O].astype(np.float64), flat[job.O:].reshape(job.O, job.D).astype(np.float64)]


def grads(x, rank):
    X, Y = (a.astype(np.float64) for a in job.data(rank))
    b, W = x
    gp = (X @ W.T + b - Y) / job.O / job.B
    return [gp.sum(0), gp.T @ X]


def reference_cser(x0, c1, c2, period, steps=job.STEPS, operand="update", reset_step="both"):
    """CSER exactly as in docs/methods.md (momentum SGD, wd in the gradient), for N workers; c1/c2 map
    a step to the 0/1 masks of the tensors (identity: all ones; zero: all zeros). ``operand``
    'model': C1 averages the block of the local model after the full update (x_i - x_hat = e_i - p_i)
    and zeroes the error there; ``reset_step`` 'c2_only': no C1 on every period-th step."""
    lr, mu, wd = job.OPT["learning_rate"], job.OPT["momentum"], job.OPT["wd"]
    x = [[a.copy() for a in x0] for _ in range(N)]
    e = [[np.zeros_like(a) for a in x0] for _ in range(N)]
    m = [[np.zeros_like(a) for a in x0] for _ in range(N)]
    hist = []
    for t in range(steps):
        p = []
        for i in range(N):
            g = grads(x[i], i)
            for k in range(len(x0)):
                m[i][k] = mu * m[i][k] + g[k] + wd * x[i][k]
            p.append([lr * mk for mk in m[i]])
        reset = (t + 1) % period == 0
        masks = ZEROS(t) if (reset and reset_step == "c2_only") else c1(t)
        for k, shape in enumerate(SHAPES):
            mask = masks[k]
            if operand == "model":
                dev = [e[i][k] - p[i][k] for i in range(N)]       # local model minus x_hat
                c = sum(mask * d for d in dev) / N
                for i in range(N):
                    x[i][k] = x[i][k] - p[i][k] - mask * dev[i] + c
                    e[i][k] = dev[i] - mask * dev[i]
                continue
            c = sum(mask * p[i][k] for i in range(N)) / N
            for i in range(N):
                r = p[i][k] - mask * p[i][k]
                x[i][k] = x[i][k] - c - r
                e[i][k] = e[i][k] - r
        if reset:
            masks = c2(t)
            for k, shape in enumerate(SHAPES):
                mask = masks[k]
                ce = sum(mask * e[i][k] for i in range(N)) / N
                for i in range(N):
                    re = e[i][k] - mask * e[i][k]
                    x[i][k] = x[i][k] - e[i][k] + ce + re
                    e[i][k] = re
        hist.append([np.concatenate([a.ravel() for a in x[i]]) for i in range(N)])
    return hist


def reference_sync(x0, steps=job.STEPS):
    """Synchronous momentum SGD on the averaged gradient."""
    lr, mu, wd = job.OPT["learning_rate"], job.OPT["momentum"], job.OPT["wd"]
    x = [a.copy() for a in x0]
    m = [np.zeros_like(a) for a in x0]
    hist = []
    for _ in range(steps):
        g = [sum(gs) / N for gs in zip(*(grads(x, i) for i in range(N)))]
        for k in range(len(x)):
            m[k] = mu * m[k] + g[k] + wd * x[k]
            x[k] = x[k] - lr * m[k]
        hist.append(np.concatenate([a.ravel() for a in x]))
    return hist


ONES = lambda t: [np.ones(s) for s in SHAPES]  # noqa: E731
ZEROS = lambda t: [np.zeros(s) for s in SHAPES]  # noqa: E731


def reference_grbs_region(shape, ratio, seed, key, step):
    """The published per-tensor GRBS rule with our documented choices (docs/distributed.md):
    a = min(r, d0) blocks of ceil(d0/a) rows, b = min(r/n0, d1) blocks of ceil(d1/b) columns,
    participation with probability n0*n1/r, three uniforms per (seed, step, key) from Philox.
    Returns (begin, end) over the first one or two axes, or None."""
    d0 = shape[0]
    k0 = max(1, int(np.ceil(d0 / min(ratio, d0))))
    n0 = -(-d0 // k0)
    k1 = n1 = 1
    if len(shape) >= 2:
        d1 = shape[1]
        k1 = max(1, int(np.ceil(d1 / max(1.0, min(ratio / n0, d1)))))
        n1 = -(-d1 // k1)
    u = np.random.Generator(np.random.Philox(key=[seed, step * 1_000_003 + key])).random(3)
    if u[0] >= min(1.0, n0 * n1 / ratio):
        return None
    i0 = min(int(u[1] * n0), n0 - 1) * k0
    if len(shape) >= 2:
        i1 = min(int(u[2] * n1), n1 - 1) * k1
        return (i0, i1), (min(i0 + k0, d0), min(i1 + k1, shape[1]))
    return (i0,), (min(i0 + k0, d0),)


def reference_mask(shape, ratio, seed, key, step):
    m = np.zeros(shape)
    reg = reference_grbs_region(shape, ratio, seed, key, step)
    if reg is not None:
        m[tuple(slice(b, e) for b, e in zip(*reg))] = 1.0
    return m


def grbs_masks(ratio, seed, structure, t):
    """GRBS's masks at step t: per tensor (keys = sorted parameter index: bias 0, weight 1; the
    same inside the one bucket and with one bucket per tensor), or, with structure 'flat', on the
    bucket's concatenated vector (bias, then weight; key 0, its first member)."""
    if structure == "tensor":
        return [reference_mask(s, ratio, seed, k, t) for k, s in enumerate(SHAPES)]
    return split(reference_mask((job.O * (job.D + 1),), ratio, seed, 0, t))


# ---- tests ---------------------------------------------------------------------------------------
def test_initial_parameters_are_broadcast_from_rank0(runs):
    ranks, _ = runs
    for name in job.CONFIGS:
        assert np.array_equal(ranks[0][f"{name}.traj"][0], ranks[1][f"{name}.traj"][0])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_sync_matches_float64_reference(runs, layout):
    ranks, _ = runs
    x0 = split(ranks[0][f"sync{layout}.traj"][0])
    ref = reference_sync(x0)
    for r in range(N):
        traj = ranks[r][f"sync{layout}.traj"][1:]
        assert np.abs(traj - np.array(ref)).max() <= 1e-5


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", ["cser_identity", "ef_identity"])
def test_identity_compression_equals_sync(runs, name, layout):
    ranks, _ = runs
    for r in range(N):
        diff = np.abs(ranks[r][f"{name}{layout}.traj"] - ranks[r][f"sync{layout}.traj"]).max()
        assert diff <= 1e-6, f"{name} rank {r}: max abs diff {diff}"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_cser_with_zero_c1_and_identity_c2_equals_local_sgd(runs, layout):
    ranks, _ = runs
    for r in range(N):
        diff = np.abs(ranks[r][f"cser_zero_identity{layout}.traj"] - ranks[r][f"local{layout}.traj"]).max()
        assert diff <= 1e-6
    # and local SGD itself matches the reference with C1 = 0, C2 = identity
    ref = reference_cser(split(ranks[0][f"local{layout}.traj"][0]), ZEROS, ONES, period=4)
    for r in range(N):
        assert np.abs(ranks[r][f"local{layout}.traj"][1:] - np.array([h[r] for h in ref])).max() <= 1e-5
    # models differ between averagings and agree right after one (step 4, 8, ...)
    t = ranks[0][f"local{layout}.traj"], ranks[1][f"local{layout}.traj"]
    assert np.abs(t[0][3] - t[1][3]).max() > 1e-4
    assert np.abs(t[0][4] - t[1][4]).max() <= 1e-6


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("structure", ["tensor", "flat"])
def test_cser_grbs_matches_float64_reference(runs, layout, structure):
    """GRBS per tensor (the default) inside the one bucket and with one bucket per tensor, and the
    flat-vector form (one contiguous slab of the bucket)."""
    ranks, _ = runs
    name = f"cser_grbs{'_flat' if structure == 'flat' else ''}{layout}"
    if structure == "flat" and layout == ".pt":
        structure = "tensor"     # a one-tensor bucket is the tensor itself
    ref = reference_cser(split(ranks[0][f"{name}.traj"][0]), lambda t: grbs_masks(4, 0, structure, t),
                         lambda t: grbs_masks(2, 7919, structure, t), period=3)
    for r in range(N):
        diff = np.abs(ranks[r][f"{name}.traj"][1:] - np.array([h[r] for h in ref])).max()
        assert diff <= 1e-5, f"rank {r}: {diff}"
    # local models really differ (otherwise the test above would not test much)
    assert np.abs(ranks[0][f"{name}.traj"][-1] - ranks[1][f"{name}.traj"][-1]).max() > 1e-4


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("variant, operand, reset_step", [
    ("model", "model", "both"), ("c2only", "update", "c2_only"), ("authors", "model", "c2_only")])
def test_cser_variants_match_float64_reference(runs, layout, variant, operand, reset_step):
    """The released code's C1 operand (the local model's block) and reset step (C2 instead of C1),
    alone and together, against the float64 reference on 2 workers."""
    ranks, _ = runs
    name = f"cser_grbs_{variant}{layout}"
    ref = reference_cser(split(ranks[0][f"{name}.traj"][0]), lambda t: grbs_masks(4, 0, "tensor", t),
                         lambda t: grbs_masks(2, 7919, "tensor", t), period=3, operand=operand,
                         reset_step=reset_step)
    for r in range(N):
        diff = np.abs(ranks[r][f"{name}.traj"][1:] - np.array([h[r] for h in ref])).max()
        assert diff <= 1e-5, f"rank {r}: {diff}"
    # the variant really changes the trajectory
    assert np.abs(ranks[0][f"{name}.traj"] - ranks[0][f"cser_grbs{layout}.traj"]).max() > 1e-5


@pytest.mark.parametrize("layout", LAYOUTS)
def test_cser_invariant_x_minus_e_identical_on_all_workers(runs, layout):
    ranks, _ = runs
    for name in (f"cser_grbs{layout}", f"cser_grbs_flat{layout}", f"cser_zero_identity{layout}",
                 f"cser_grbs_model{layout}", f"cser_grbs_c2only{layout}", f"cser_grbs_authors{layout}"):
        xe = [ranks[r][f"{name}.traj"][1:] - ranks[r][f"{name}.err"] for r in range(N)]
        assert np.abs(xe[0] - xe[1]).max() <= 1e-6, name


@pytest.mark.parametrize("name", ["ef_topk", "ef_sign", "sync_fp16", "ef_topk.pt", "ef_sign.pt",
                                  "sync_fp16.pt"])
def test_global_model_algorithms_keep_workers_identical(runs, name):
    ranks, _ = runs
    assert np.abs(ranks[0][f"{name}.traj"] - ranks[1][f"{name}.traj"]).max() <= 1e-6
    assert np.abs(ranks[0][f"{name}.traj"][-1] - ranks[0][f"{name}.traj"][0]).max() > 1e-3


def test_buckets_give_the_same_result_as_per_tensor_for_sync_and_lossless_algorithms(runs):
    ranks, _ = runs
    for name in ("sync", "sync_fp16", "ef_identity", "cser_identity", "local", "cser_zero_identity"):
        for r in range(N):
            diff = np.abs(ranks[r][f"{name}.traj"] - ranks[r][f"{name}.pt.traj"]).max()
            assert diff <= 1e-6, f"{name} rank {r}: {diff}"


def test_averaged_context_gives_worker_mean_and_restores(runs):
    ranks, _ = runs
    final = [ranks[r]["cser_grbs.traj"][-1] for r in range(N)]
    for r in range(N):
        assert np.abs(ranks[r]["cser_grbs.avg"] - (final[0] + final[1]) / 2).max() <= 1e-6
        assert np.array_equal(ranks[r]["cser_grbs.after"], final[r])


def test_grbs_per_tensor_inside_a_multi_tensor_bucket_matches_float64_reference(runs):
    """Six tensors (4-D, 2-D, 1-D) in one bucket: each takes part with its own probability and
    sends its own block (keys: its parameter index); the one payload averages to the float64
    mean over workers of the per-tensor masked values, the same on both workers, with at most one
    collective per step (none when no tensor takes part)."""
    ranks, _ = runs
    indices = ranks[0]["grbs_bucket.indices"].tolist()
    took_part = set()
    for step in range(job.GRBS_BUCKET_STEPS):
        want, payload = [], 0
        for i in indices:
            shape = job.GRBS_BUCKET_SHAPES[i - 3]
            mask = reference_mask(shape, 16, 21, i, step)
            payload += int(mask.sum())
            if mask.any():
                took_part.add((i, step))
            vals = [job.grbs_bucket_values(r, step)[i - 3].astype(np.float64) for r in range(N)]
            want.append((sum(mask * v for v in vals) / N).ravel())
        want = np.concatenate(want)
        for r in range(N):
            np.testing.assert_allclose(ranks[r]["grbs_bucket.avg"][step], want, rtol=1e-6, atol=1e-7)
            assert ranks[r]["grbs_bucket.payload"][step] == payload
            assert ranks[r]["grbs_bucket.calls"][step] == (1 if payload else 0)
    # some tensors take part and some sit out at the same step: the structure is exercised
    per_step = [sum((i, s) in took_part for i in indices) for s in range(job.GRBS_BUCKET_STEPS)]
    assert max(per_step) >= 2 and min(per_step) < len(indices)


def test_grbs_masks_identical_across_workers_despite_different_global_rng(runs):
    ranks, _ = runs
    a, b = ranks[0]["grbs_regions"], ranks[1]["grbs_regions"]
    assert np.array_equal(a, b)
    assert len(set(a.tolist())) > 20  # the slabs do move around


@pytest.mark.parametrize("cname, ratio", [("none", 1), ("fp16", 2), ("grbs", 32), ("randomk", 32),
                                          ("topk", 32), ("sign", 32)])
@pytest.mark.parametrize("layout", ["", ".bucket"])
def test_bytes_per_step_within_10_percent_of_dense_over_ratio(runs, cname, ratio, layout):
    _, meta = runs
    for r in range(N):
        w = meta[r]["wire"][cname + layout]
        # payload: what this worker hands to the collective; for allreduce with n = 2 the ring
        # estimate equals it, for allgather it is (n-1) x payload = payload
        assert w["payload_per_step"] == pytest.approx(w["dense"] / ratio, rel=0.10)
        assert w["wire_per_step"] == pytest.approx(w["dense"] / ratio, rel=0.10)


def test_deferred_init_is_broadcast_before_first_use_and_split_step_works(runs):
    ranks, _ = runs
    np.testing.assert_array_equal(ranks[0]["deferred.first_output"], ranks[1]["deferred.first_output"])
    # allreduce_grads() + update() averaged different per-rank gradients: models stay identical
    np.testing.assert_array_equal(ranks[0]["deferred.after"], ranks[1]["deferred.after"])


# ---- Local AdaAlter (docs/methods.md) ------------------------------------------------------------------
def reference_local_adaalter(x0, period, warmup, steps=12, pad="constant"):
    """Synchronous AdaAlter (mean gradient) for `warmup` steps, then local steps with B frozen at
    the last sync plus eps (pad 'constant') or k*eps at the k-th local step (pad 'per_step'), A
    accumulating squares, averaging of models and A every `period`."""
    lr, eps = job.ADA_OPT["learning_rate"], job.ADA_OPT["epsilon"]
    x = [[a.copy() for a in x0] for _ in range(N)]
    Bs = [np.zeros_like(a) for a in x0]
    A = [[np.zeros_like(a) for a in x0] for _ in range(N)]
    hist = []
    for t in range(steps):
        if t < warmup:
            g = [sum(gs) / N for gs in zip(*(grads(x[i], i) for i in range(N)))]
            for i in range(N):
                x[i] = [xk - lr * gk / np.sqrt(Bk + eps) for xk, gk, Bk in zip(x[i], g, Bs)]
            Bs = [Bk + gk * gk for Bk, gk in zip(Bs, g)]
        else:
            k = (t - warmup) % period + 1 if pad == "per_step" else 1
            for i in range(N):
                g = grads(x[i], i)
                x[i] = [xk - lr * gk / np.sqrt(Bk + k * eps) for xk, gk, Bk in zip(x[i], g, Bs)]
                A[i] = [Ak + gk * gk for Ak, gk in zip(A[i], g)]
            if (t - warmup + 1) % period == 0:
                mean_x = [sum(xs) / N for xs in zip(*x)]
                Bs = [Bk + sum(As) / N for Bk, As in zip(Bs, zip(*A))]
                x = [[a.copy() for a in mean_x] for _ in range(N)]
                A = [[np.zeros_like(a) for a in x0] for _ in range(N)]
        hist.append(([np.concatenate([a.ravel() for a in x[i]]) for i in range(N)],
                     np.concatenate([a.ravel() for a in Bs])))
    return hist


@pytest.mark.parametrize("pad", ["constant", "per_step"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_local_adaalter_matches_float64_reference(runs, layout, pad):
    ranks, _ = runs
    name = f"ladaalter{'_per_step' if pad == 'per_step' else ''}{layout}"
    ref = reference_local_adaalter(split(ranks[0][f"{name}.traj"][0]), period=3, warmup=2, pad=pad)
    for r in range(N):
        xs = np.array([h[0][r] for h in ref])
        assert np.abs(ranks[r][f"{name}.traj"][1:] - xs).max() <= 1e-5
        # the optimizer state holds B_s: frozen between syncs, grown by mean(A) at each sync
        assert np.abs(ranks[r][f"{name}.B"] - np.array([h[1] for h in ref])).max() <= 1e-5


def test_local_adaalter_models_and_accumulators_identical_after_every_sync(runs):
    ranks, _ = runs
    t0, t1 = ranks[0]["ladaalter.traj"], ranks[1]["ladaalter.traj"]
    B0, B1 = ranks[0]["ladaalter.B"], ranks[1]["ladaalter.B"]
    syncs = [s for s in range(12) if s < 2 or (s - 2 + 1) % 3 == 0]  # warm-up steps and every 3rd
    for s in syncs:
        assert np.array_equal(t0[s + 1], t1[s + 1]), s
        assert np.array_equal(B0[s], B1[s]), s
    assert np.abs(t0[4] - t1[4]).max() > 1e-5  # between syncs the local models differ
    # the two paddings differ from the second local step on (k*eps vs eps), not before
    c, p = ranks[0]["ladaalter.traj"], ranks[0]["ladaalter_per_step.traj"]
    assert np.array_equal(c[:4], p[:4]) and np.abs(c[4] - p[4]).max() > 1e-6


def test_local_adaalter_rejects_an_unknown_padding():
    from gluon_suite.distributed.local_adaalter import LocalAdaAlter
    with pytest.raises(ValueError, match="pad must be one of constant, per_step"):
        LocalAdaAlter(4, pad="k")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_local_adaalter_with_period_1_equals_synchronous_adaalter(runs, layout):
    ranks, _ = runs
    a, b = f"ladaalter_h1_same_data{layout}", f"adaalter_sync_same_data{layout}"
    for r in range(N):
        assert np.abs(ranks[r][f"{a}.traj"] - ranks[r][f"{b}.traj"]).max() <= 1e-6
        assert np.abs(ranks[r][f"{a}.B"] - ranks[r][f"{b}.B"]).max() <= 1e-6


def test_local_adaalter_requires_the_adaalter_optimizer():
    from mxnet import gluon
    from gluon_suite.distributed import DistributedTrainer
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    with pytest.raises(ValueError, match="needs the 'adaalter' optimizer, got 'sgd'"):
        DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, algorithm="local_adaalter")


@pytest.mark.parametrize("name", ["cser", "ef"])
def test_reset_for_resize_folds_or_drops_the_residual(name):
    """Elastic resize: CSER's x <- x - e, e <- 0 (x - e is the common model); EF drops its gradient
    residual and leaves the model alone. Checked against float64 NumPy copies taken before."""
    import mxnet as mx
    from mxnet import autograd, gluon

    from gluon_suite.distributed import DistributedTrainer, LocalCommunicator
    mx.random.seed(3)
    net = gluon.nn.Dense(5, in_units=7)
    net.initialize()
    kw = {"algorithm": name, "compressor": "grbs" if name == "cser" else "topk", "ratio": 4}
    if name == "cser":
        kw["period"] = 100  # no error reset inside the 5 steps: the residual stays non-zero
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                            communicator=LocalCommunicator(), **kw)
    x = mx.nd.random.normal(shape=(8, 7))
    for _ in range(5):
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
        tr.step(8)
    params = [p for _, p in sorted(net.collect_params().items())]
    names = sorted(net.collect_params().keys())
    before = [p.data().asnumpy().astype(np.float64) for p in params]
    errs = {i: tr.algorithm.view("err", i).asnumpy().astype(np.float64) for i in range(len(tr._params))}
    assert any(np.abs(e).max() > 0 for e in errs.values())          # there is something to fold
    tr.algorithm.reset_for_resize()
    index = {p.name: i for i, p in enumerate(tr._params)}
    for n, p, b in zip(names, params, before):
        e = errs[index[p.name]]
        want = b - e if name == "cser" else b
        np.testing.assert_allclose(p.data().asnumpy(), want, rtol=0, atol=1e-6, err_msg=n)
    assert all(np.abs(e.asnumpy()).max() == 0 for e in tr.algorithm.err)


@pytest.mark.parametrize("ratio, lr, epochs, want", [
    (128, 0.05, None, 10.0),     # the authors' CIFAR reference point
    (32, 0.1, None, 5.0),        # 32 * 5/128 * 2 * 2 = 5
    (16, 0.05, None, 4.0),       # round(1.25) = 1, floor of 4 epochs
    (1024, 0.05, None, 80.0),
    (1024, 0.05, 60, 30.0),      # at most half of the run
    (32, 0.1, 15, 5.0),
    (float("inf"), 0.1, 15, 1.0),  # C1 = zero (CSER-PL): no ratio to grow with
])
def test_cser_warmup_grows_with_the_first_ratio_as_the_authors_scripts(ratio, lr, epochs, want):
    from gluon_suite.distributed.algorithms import cser_warmup_epochs
    assert cser_warmup_epochs(ratio, lr, epochs) == want


def test_cser_variant_options_are_checked():
    from gluon_suite.distributed import make_algorithm
    with pytest.raises(ValueError, match="option c1_operand: unknown C1 operand 'error'; use one of model, update"):
        make_algorithm("cser", compressor="grbs", ratio=8, c1_operand="error")
    with pytest.raises(ValueError, match="option reset_step: unknown reset step 'c1_only'"):
        make_algorithm("cser", compressor="grbs", ratio=8, reset_step="c1_only")
    with pytest.raises(ValueError, match="algorithm 'sync' takes no option c1_operand"):
        make_algorithm("sync", c1_operand="model")
    cfg = make_algorithm("cser", compressor="grbs", ratio=8, c1_operand="model", reset_step="c2_only").config()
    assert (cfg["c1_operand"], cfg["reset_step"], cfg["c1"]["structure"]) == ("model", "c2_only", "tensor")
