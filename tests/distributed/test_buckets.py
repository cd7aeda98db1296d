"""Buckets on one process: the layout (reverse network order, dtype groups, size threshold,
min_size), gradients as views of one flat vector with grad_req 'write'/'add'/'null' and mixed
dtypes, and per-bucket compressors against float64 NumPy references of their definitions on the
bucket's concatenated vector."""
import mxnet as mx
import numpy as np
import pytest
from mxnet import autograd, gluon

from gluon_suite.distributed import DistributedTrainer, LocalCommunicator
from gluon_suite.distributed.buckets import layout_buckets
from gluon_suite.distributed.compression import make_compressor


class Mixed(gluon.Block):
    """float32 and float16 parameters, one frozen (grad_req 'null') and one accumulating ('add')."""

    def __init__(self):
        super().__init__(prefix="mixed_")
        with self.name_scope():
            self.a = self.params.get("a", shape=(6, 5))
            self.h = self.params.get("h", shape=(5,), dtype="float16")
            self.frozen = self.params.get("frozen", shape=(4,), grad_req="null")
            self.acc = self.params.get("acc", shape=(4,), grad_req="add")
            self.b = self.params.get("b", shape=(4,))

    def forward(self, x):
        y = mx.nd.dot(x, self.a.data())
        # element-wise in float16 (CPU dot has no float16)
        z = mx.nd.broadcast_mul(y.astype("float16"), self.h.data()).astype("float32")
        z = mx.nd.slice_axis(z, axis=1, begin=0, end=4)
        return z + self.frozen.data() + self.acc.data() * self.b.data()


def mixed_net(seed=0):
    mx.random.seed(seed)
    net = Mixed()
    net.initialize(mx.init.Normal(0.5))
    return net


def run_mixed(trainer_factory, steps=4):
    net = mixed_net()
    tr = trainer_factory(net)
    rs = np.random.RandomState(0)
    for _ in range(steps):
        for _ in range(2):  # two backward passes per step: 'add' accumulates, 'write' overwrites
            x = mx.nd.array(rs.normal(size=(3, 6)))
            with autograd.record():
                loss = (net(x) ** 2).mean()
            loss.backward()
        tr.step(3)
        net.acc.zero_grad()
    return net, tr


def values(net):
    return {n: p.data().asnumpy().astype(np.float64) for n, p in net.collect_params().items()}


@pytest.mark.parametrize("bucket_mb", [25, 0, 1e-4])
def test_mixed_dtypes_and_grad_reqs_match_gluon_trainer(bucket_mb):
    opt = {"learning_rate": 0.05, "momentum": 0.9}
    ref, _ = run_mixed(lambda net: gluon.Trainer(net.collect_params(), "sgd", dict(opt)))
    got, tr = run_mixed(lambda net: DistributedTrainer(net.collect_params(), "sgd", dict(opt),
                                                       communicator=LocalCommunicator(),
                                                       bucket_mb=bucket_mb))
    for name, want in values(ref).items():
        np.testing.assert_array_equal(values(got)[name], want, err_msg=name)
    buckets = tr.algorithm.buckets
    names = [[p.name for _, p in b.members] for b in buckets]
    assert all(len({str(p.dtype) for _, p in b.members}) == 1 for b in buckets)  # one dtype each
    assert "mixed_frozen" not in sum(names, [])                                  # 'null' is left out
    assert sorted(sum(names, [])) == ["mixed_a", "mixed_acc", "mixed_b", "mixed_h"]
    if bucket_mb == 25:
        # reverse network order within a dtype; buckets in the order backward completes them
        # (h's gradient is ready before a's)
        assert names == [["mixed_h"], ["mixed_b", "mixed_acc", "mixed_a"]]
    if bucket_mb == 0:
        assert all(len(n) == 1 for n in names)
    # the gradients are views of the bucket's flat vector
    for b in buckets:
        for (_, p), view in zip(b.members, b.views(b.grad)):
            p.grad()[:] = 7
            assert (view.asnumpy() == 7).all()


@pytest.mark.parametrize("bucket_mb", [25, 0])
@pytest.mark.parametrize("algo", [dict(algorithm="ef", compressor="none"),
                                  dict(algorithm="cser", compressor="none", compressor2="none", period=2),
                                  dict(algorithm="local", period=2)])
def test_lossless_algorithms_on_mixed_buckets_equal_gluon_trainer(algo, bucket_mb):
    opt = {"learning_rate": 0.05, "momentum": 0.9}
    ref, _ = run_mixed(lambda net: gluon.Trainer(net.collect_params(), "sgd", dict(opt)))
    got, _ = run_mixed(lambda net: DistributedTrainer(net.collect_params(), "sgd", dict(opt),
                                                      communicator=LocalCommunicator(),
                                                      bucket_mb=bucket_mb, **algo))
    for name, want in values(ref).items():
        tol = 2e-3 if name == "mixed_h" else 1e-6  # float16: (before - after) loses bits
        np.testing.assert_allclose(values(got)[name], want, rtol=0, atol=tol, err_msg=name)


def test_layout_threshold_and_min_size():
    params = [(i, gluon.Parameter(f"p{i}", shape=s)) for i, s in
              enumerate([(1000, 1000), (10,), (500, 500), (20,), (250, 1000)])]
    for _, p in params:
        p.initialize()
    buckets = layout_buckets(params, bucket_mb=2.0, min_size=100)  # 4 MB, 1 MB, 1 MB tensors
    got = [(b.indices, b.small) for b in buckets]
    # reverse order; the big ones close a 2 MB bucket when reached; the two small ones apart;
    # buckets in the order backward completes them
    assert got == [([4, 2], False), ([3, 1], True), ([0], False)]
    with pytest.raises(ValueError, match="bucket_mb must be >= 0"):
        layout_buckets(params, bucket_mb=-1)


# ---- compressors on a bucket = their definition on the concatenated vector (float64 NumPy) ----
def one_ef_step(compressor, ratio=4, seed=0):
    """One EF step on one worker: returns the concatenated update u (bucket order, float64), the
    residual e and the applied change x_before - x_after, both concatenated the same way."""
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(7, in_units=9), gluon.nn.Dense(5, in_units=7))
    mx.random.seed(seed)
    net.initialize(mx.init.Normal(0.5))
    tr = DistributedTrainer(net.collect_params(), "sgd", {"learning_rate": 0.1},
                            communicator=LocalCommunicator(), algorithm="ef",
                            compressor=compressor, ratio=ratio)
    x = mx.nd.array(np.random.RandomState(seed).normal(size=(4, 9)))
    with autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    tr.bind()  # the layout exists from the first step on
    (bucket,) = tr.algorithm.buckets
    before = np.concatenate([p.data().asnumpy().ravel() for _, p in bucket.members]).astype(np.float64)
    grads = np.concatenate([p.grad().asnumpy().ravel() for _, p in bucket.members]).astype(np.float64)
    tr.step(1)
    after = np.concatenate([p.data().asnumpy().ravel() for _, p in bucket.members]).astype(np.float64)
    u = 0.1 * grads  # plain SGD, lr 0.1: the update
    return u, tr.algorithm.err[0].asnumpy().astype(np.float64), before - after, tr, bucket


def test_bucket_order_is_reverse_network_order():
    _, _, _, tr, bucket = one_ef_step("none")
    # network order: Dense(7, in 9) weight, bias, Dense(5, in 7) weight, bias; reversed, by shape
    # (names carry a process-wide counter, 'dense10' < 'dense9', so they cannot tell the order)
    assert [tuple(p.shape) for _, p in bucket.members] == [(5,), (5, 7), (7,), (7, 9)]
    assert [p.name.split("_")[-1] for _, p in bucket.members] == ["bias", "weight", "bias", "weight"]


@pytest.mark.parametrize("name", ["topk", "sign", "randomk", "grbs", "fp16"])
def test_per_bucket_compressor_is_its_definition_on_the_concatenated_vector(name):
    # GRBS on the flat vector is the named option structure='flat' (the default is per tensor)
    u, e, applied, tr, bucket = one_ef_step(
        make_compressor("grbs", ratio=4, structure="flat") if name == "grbs" else name)
    n = u.size
    comp = tr.algorithm.compressor
    if name == "topk":
        k = max(1, round(n / 8))
        c = np.zeros(n)
        keep = np.argsort(-np.abs(u))[:k]
        c[keep] = u[keep]
    elif name == "sign":
        c = np.where(u >= 0, 1.0, -1.0) * np.abs(u).mean()
    elif name == "randomk":
        idx = comp.indices(n, bucket.key, 0).asnumpy().astype(np.int64)
        k = int(np.ceil(n / 4))
        bounds = np.arange(k + 1) * n // k
        assert len(idx) == k and ((idx >= bounds[:-1]) & (idx < bounds[1:])).all()  # one per stratum
        c = np.zeros(n)
        c[idx] = u[idx]
    elif name == "grbs":
        begin, end = comp.region((n,), bucket.key, 0)
        c = np.zeros(n)
        c[begin[0]:end[0]] = u[begin[0]:end[0]]
        assert end[0] - begin[0] == int(np.ceil(n / 4))  # one contiguous slab of the flat vector
    else:
        c = u.astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(applied, c, rtol=1e-4, atol=1e-6)   # x = x_before - C(u)
    np.testing.assert_allclose(e, u - c, rtol=1e-4, atol=1e-6)     # e = u - C(u)


@pytest.mark.parametrize("seed", range(6))
def test_grbs_per_tensor_in_a_bucket_selects_each_members_own_block(seed):
    """structure='tensor' (default) inside a four-tensor bucket: C(u) is, member by member, the
    block the published per-tensor rule picks for that member's shape and parameter index
    (float64 NumPy, written from docs/distributed.md), or nothing when it sits the step out."""
    ratio = 8
    u, e, applied, tr, bucket = one_ef_step(make_compressor("grbs", ratio=ratio, seed=seed), seed=seed)
    c, off = np.zeros_like(u), 0
    for shape, key in zip(bucket.shapes, bucket.indices):
        n = int(np.prod(shape))
        d0 = shape[0]
        k0 = max(1, int(np.ceil(d0 / min(ratio, d0))))
        n0 = -(-d0 // k0)
        k1 = n1 = 1
        if len(shape) >= 2:
            k1 = max(1, int(np.ceil(shape[1] / max(1.0, min(ratio / n0, shape[1])))))
            n1 = -(-shape[1] // k1)
        draw = np.random.Generator(np.random.Philox(key=[seed, key])).random(3)   # step 0
        if draw[0] < min(1.0, n0 * n1 / ratio):
            mask = np.zeros(shape)
            i0 = min(int(draw[1] * n0), n0 - 1) * k0
            if len(shape) >= 2:
                i1 = min(int(draw[2] * n1), n1 - 1) * k1
                mask[i0:i0 + k0, i1:i1 + k1] = 1
            else:
                mask[i0:i0 + k0] = 1
            c[off:off + n] = (mask * u[off:off + n].reshape(shape)).ravel()
        off += n
    np.testing.assert_allclose(applied, c, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(e, u - c, rtol=1e-4, atol=1e-6)


def test_grbs_rejects_an_unknown_structure():
    with pytest.raises(ValueError, match="structure must be one of tensor, flat"):
        make_compressor("grbs", structure="rows")


def test_randomk_mask_is_shared_and_covers_every_coordinate_about_equally():
    a, b = make_compressor("randomk", ratio=8, seed=3), make_compressor("randomk", ratio=8, seed=3)
    np.random.seed(1)
    counts = np.zeros(1000)
    masks = set()
    for step in range(400):
        ia = a.indices(1000, 5, step).asnumpy().astype(np.int64)
        ib = b.indices(1000, 5, step).asnumpy().astype(np.int64)
        assert np.array_equal(ia, ib) and len(set(ia.tolist())) == 125
        counts[ia] += 1
        masks.add(tuple(ia.tolist()))
    assert abs(counts.mean() - 50) < 1e-9 and counts.min() > 20 and counts.max() < 85
    # about k x n = 125,000 joint masks (k rotations, n shift intervals): 400 draws repeat one
    # about 0.6 times in expectation
    assert len(masks) >= 395


def test_randomk_indices_follow_the_documented_rule():
    """u_j = frac(T[(j + s) mod k] + t), index = start_j + floor(u_j * width_j), in float64 NumPy
    from the compressor's table and the shared generator's two draws."""
    comp = make_compressor("randomk", ratio=7, seed=11)
    for n, key, step in [(1000, 0, 0), (999, 3, 5), (50_001, 2, 17), (7, 1, 1)]:
        got = comp.indices(n, key, step).asnumpy()
        k = int(np.ceil(n / 7))
        table = np.random.Generator(np.random.Philox(key=[11, 2 ** 62 + n])).random(k)
        g = np.random.Generator(np.random.Philox(key=[11, step * 1_000_003 + key]))
        s, t = int(g.integers(k)), float(g.random())
        starts = np.arange(k + 1) * n // k
        u = np.mod(table[(np.arange(k) + s) % k] + t, 1.0)
        want = starts[:-1] + np.floor(u * np.diff(starts)).astype(np.int64)
        np.testing.assert_array_equal(got, want)
        assert ((want >= starts[:-1]) & (want < starts[1:])).all()
