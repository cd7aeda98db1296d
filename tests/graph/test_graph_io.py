"""``save_graphs``/``load_graphs`` in the package's own format (magic line, JSON header, MXNet
NDArray payload): structure, id types, features of several dtypes and labels round-trip from two
contexts; ``idx_list``; writing is atomic; a foreign, truncated, corrupt or wrong-version file is
refused with a one-line ``DGLError`` naming the file. References: the arrays that were saved."""
import hashlib
import json
import os

import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl
from gluon_suite.graph import io as gio

CASES = [(c, t) for c in (mx.cpu(0), mx.cpu(1)) for t in ("int32", "int64")]
IDS = [f"cpu{c.device_id}-{t}" for c, t in CASES]


def graphs(ctx, idtype):
    rs = np.random.RandomState(1)
    g = dgl.graph(([0, 0, 3, 2, 4], [1, 1, 2, 2, 0]), num_nodes=6, idtype=idtype, device=ctx)
    g.ndata["feat"] = mx.nd.array(rs.normal(size=(6, 3)), ctx=ctx)
    g.ndata["label"] = mx.nd.array(rs.randint(0, 5, 6), dtype="int64", ctx=ctx)
    g.ndata["odd name/é"] = mx.nd.array(rs.normal(size=(6, 2, 2)), dtype="float64", ctx=ctx)
    g.edata["w"] = mx.nd.array(rs.uniform(size=(5,)), dtype="float16", ctx=ctx)
    g.edata["t"] = mx.nd.array([1, 0, 2, 1, 1], dtype="int32", ctx=ctx)
    empty = dgl.graph(([], []), num_nodes=3, idtype=idtype, device=ctx)
    named = dgl.heterograph({("user", "follows", "user"): ([0, 1], [1, 2])}, idtype=idtype, device=ctx)
    bip = dgl.heterograph({("u", "r", "v"): ([0, 1, 1], [2, 0, 1])}, num_nodes_dict={"u": 2, "v": 4},
                          idtype=idtype, device=ctx)
    bip.srcdata["a"] = mx.nd.array(rs.normal(size=(2, 1)), ctx=ctx)
    bip.dstdata["b"] = mx.nd.array(rs.normal(size=(4,)), ctx=ctx)
    block = dgl.to_block(dgl.sampling.sample_neighbors(g, [1, 2], -1), [1, 2])
    return [g, empty, named, bip, block]


def same(a, b):
    assert type(a) is type(b) and a.idtype == b.idtype and a.device == mx.cpu()
    assert (a.num_src_nodes(), a.num_dst_nodes()) == (b.num_src_nodes(), b.num_dst_nodes())
    assert a.canonical_etypes == b.canonical_etypes
    for x, y in zip(a.edges(), b.edges()):
        assert x.dtype == y.dtype and x.asnumpy().tolist() == y.asnumpy().tolist()
    frames = ["edata"] + (["srcdata", "dstdata"] if a._two_sides else ["ndata"])
    for f in frames:
        fa, fb = getattr(a, f), getattr(b, f)
        assert sorted(fa) == sorted(fb)
        for k in fa:
            assert fa[k].dtype == fb[k].dtype and fa[k].shape == fb[k].shape
            np.testing.assert_array_equal(fa[k].asnumpy(), fb[k].asnumpy())


@pytest.mark.parametrize("ctx, idtype", CASES, ids=IDS)
def test_graphs_and_labels_round_trip(tmp_path, ctx, idtype):
    gs = graphs(ctx, idtype)
    labels = {"y": mx.nd.array([3, 1, 4, 1, 5], dtype="int64", ctx=ctx), "score": np.linspace(0, 1, 5)}
    path = tmp_path / "graphs.bin"
    dgl.save_graphs(str(path), gs, labels)
    loaded, got = dgl.load_graphs(str(path))
    assert len(loaded) == len(gs)
    for a, b in zip(loaded, gs):
        same(a, b)
    assert sorted(got) == ["score", "y"] and got["y"].dtype == np.int64 and got["score"].dtype == np.float64
    assert got["y"].asnumpy().tolist() == [3, 1, 4, 1, 5] and got["y"].context == mx.cpu()
    np.testing.assert_array_equal(got["score"].asnumpy(), labels["score"])
    picked, _ = dgl.load_graphs(path, [3, 0])                          # os.PathLike too; the order asked for
    same(picked[0], gs[3])
    same(picked[1], gs[0])
    assert picked[0].ntypes == ["u", "v"] and loaded[2].ntypes == ["user"] and loaded[2].etypes == ["follows"]
    assert loaded[4].srcdata[dgl.NID].asnumpy().tolist() == gs[4].srcdata[dgl.NID].asnumpy().tolist()


def test_one_graph_without_labels_and_the_file_layout(tmp_path):
    g = dgl.graph(([0, 1], [1, 2]))
    g.ndata["h"] = np.arange(3.0)
    path = str(tmp_path / "one.bin")
    dgl.save_graphs(path, g)
    loaded, labels = dgl.load_graphs(path)
    assert labels == {} and len(loaded) == 1 and loaded[0].ndata["h"].asnumpy().tolist() == [0, 1, 2]
    data = open(path, "rb").read()
    magic, header, payload = data.split(b"\n", 2)
    header = json.loads(header)
    assert magic == b"GLUON-SUITE-GRAPHS" and header["format"] == "gluon_suite.graph" and header["version"] == 1
    assert header["payload"] == {"bytes": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}
    arrays = mx.nd.load_frombuffer(payload)                            # the payload is an MXNet NDArray file
    entry = header["graphs"][0]
    assert arrays[entry["src"]].asnumpy().tolist() == [0, 1] and entry["ndata"] == {"h": "g0.n0"}


def test_writing_is_atomic_and_leaves_no_temporary_files(tmp_path, monkeypatch):
    path = tmp_path / "g.bin"
    dgl.save_graphs(str(path), [dgl.graph(([0], [1]))])
    before = path.read_bytes()

    def broken(fname, data):
        open(fname, "wb").write(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(gio.mx.nd, "save", broken)
    with pytest.raises(dgl.DGLError, match="cannot write .*No space left"):
        dgl.save_graphs(str(path), [dgl.graph(([0, 1], [1, 2]))])
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["g.bin"]
    assert len(dgl.load_graphs(str(path))[0][0].edges()[0]) == 1


def rewrite(path, header=None, payload=None, mutate=None):
    magic, head, body = open(path, "rb").read().split(b"\n", 2)
    head = json.loads(head)
    if mutate:
        mutate(head)
    body = body if payload is None else payload
    open(path, "wb").write(magic + b"\n" + (header or json.dumps(head).encode()) + b"\n" + body)


def corruptions(tmp_path):
    good = tmp_path / "good.bin"
    dgl.save_graphs(str(good), [dgl.graph(([0, 1], [1, 2]))], {"y": mx.nd.ones(1)})
    data = good.read_bytes()
    cases = {}

    def case(name, match, make):
        p = tmp_path / f"{name}.bin"
        p.write_bytes(data)
        make(p)
        cases[name] = (p, match)

    case("random", "not a graph file", lambda p: p.write_bytes(np.random.RandomState(0).bytes(300)))
    case("empty", "not a graph file", lambda p: p.write_bytes(b""))
    case("ndarray", "MXNet NDArray file without the graph header", lambda p: mx.nd.save(str(p), {"a": mx.nd.ones(2)}))
    case("truncated", "truncated", lambda p: p.write_bytes(data[:-7]))
    case("cut_in_header", "truncated or corrupt", lambda p: p.write_bytes(data[:40]))
    case("flipped", "checksum", lambda p: p.write_bytes(data[:-3] + bytes([data[-3] ^ 0xFF]) + data[-2:]))
    case("extra", "corrupt: its arrays take", lambda p: p.write_bytes(data + b"\0"))
    case("not_json", "not valid JSON", lambda p: rewrite(p, header=b"{not json"))
    case("version", "version 2; this package reads version 1",
         lambda p: rewrite(p, mutate=lambda h: h.update(version=2)))
    case("format", "no format", lambda p: rewrite(p, mutate=lambda h: h.update(format="other")))
    case("missing_array", "does not hold",
         lambda p: rewrite(p, mutate=lambda h: h["graphs"][0].update(src="g9.src")))
    case("bad_idtype", "id type", lambda p: rewrite(p, mutate=lambda h: h["graphs"][0].update(idtype="float32")))
    case("wrong_idtype", "1-D int32", lambda p: rewrite(p, mutate=lambda h: h["graphs"][0].update(idtype="int32")))
    case("too_few_nodes", "out of range",
         lambda p: rewrite(p, mutate=lambda h: h["graphs"][0].update(num_src_nodes=2, num_dst_nodes=2)))
    case("no_payload_info", "does not describe the payload", lambda p: rewrite(p, mutate=lambda h: h.pop("payload")))
    return cases


def test_foreign_truncated_and_corrupt_files_are_refused_in_one_line_naming_the_file(tmp_path):
    for name, (path, match) in corruptions(tmp_path).items():
        with pytest.raises(dgl.DGLError, match=match) as info:
            dgl.load_graphs(str(path))
        msg = str(info.value)
        assert str(path) in msg and "\n" not in msg, name


def test_bad_requests_are_one_line_errors(tmp_path):
    g = dgl.graph(([0], [1]))
    path = str(tmp_path / "g.bin")
    dgl.save_graphs(path, [g, g])
    for call, match in ((lambda: dgl.load_graphs(path, [2]), "holds 2 graphs"),
                        (lambda: dgl.load_graphs(str(tmp_path / "nope.bin")), "does not exist"),
                        (lambda: dgl.save_graphs(path, ["not a graph"]), "a graph, a heterograph or a list of them"),
                        (lambda: dgl.save_graphs(path, g, labels=[1, 2]), "labels must be a dict"),
                        (lambda: dgl.save_graphs(str(tmp_path / "no" / "g.bin"), g), "does not exist")):
        with pytest.raises(dgl.DGLError, match=match) as info:
            call()
        assert "\n" not in str(info.value)
    assert len(dgl.load_graphs(path)[0]) == 2                          # the failed saves left the file alone
