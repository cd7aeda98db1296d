"""``save_graphs``/``load_graphs`` with heterographs of several relations: every relation's edges in
order, every node type's count and features and every relation's features come back as they were
written (compared with the arrays the test built), beside ordinary graphs in the same file; a file
whose heterograph entry is damaged is refused in one line naming the file."""
import json

import mxnet as mx
import numpy as np
import pytest

import gluon_suite.graph as dgl

FOLLOWS = ([0, 1, 2, 2], [1, 2, 0, 3])
PLAYS = ([0, 3, 3], [1, 0, 2])


def _hetero(idtype):
    g = dgl.heterograph({("user", "follows", "user"): FOLLOWS, ("user", "plays", "game"): PLAYS},
                        num_nodes_dict={"user": 5, "game": 4}, idtype=idtype)
    g.nodes["user"].data["h"] = mx.nd.array(np.arange(10).reshape(5, 2), dtype="float32")
    g.nodes["game"].data["price"] = mx.nd.array([1.5, 2.5, 3.5, 4.5], dtype="float64")
    g.edges["plays"].data["hours"] = mx.nd.array([3, 1, 4], dtype="int32")
    return g


@pytest.mark.parametrize("idtype", ["int32", "int64"])
def test_a_heterograph_round_trips_with_its_types_counts_and_features(tmp_path, idtype):
    path = str(tmp_path / "h.bin")
    plain = dgl.graph(([0, 1], [1, 0]))
    dgl.save_graphs(path, [_hetero(idtype), plain], {"y": mx.nd.array([7, 8])})
    (h, p), labels = dgl.load_graphs(path)
    assert h.ntypes == ["game", "user"] and h.canonical_etypes == [("user", "follows", "user"),
                                                                  ("user", "plays", "game")]
    assert (h.num_nodes("user"), h.num_nodes("game")) == (5, 4) and np.dtype(h.idtype).name == idtype
    for etype, (u, v) in (("follows", FOLLOWS), ("plays", PLAYS)):
        src, dst = h.edges(etype=etype)
        assert src.asnumpy().tolist() == u and dst.asnumpy().tolist() == v
    assert h.nodes["user"].data["h"].asnumpy().tolist() == np.arange(10).reshape(5, 2).tolist()
    price = h.nodes["game"].data["price"]
    assert price.dtype == np.float64 and price.asnumpy().tolist() == [1.5, 2.5, 3.5, 4.5]
    hours = h.edges["plays"].data["hours"]
    assert hours.dtype == np.int32 and hours.asnumpy().tolist() == [3, 1, 4]
    assert "hours" not in h.edges["follows"].data
    assert p.edges()[0].asnumpy().tolist() == [0, 1] and labels["y"].asnumpy().tolist() == [7, 8]
    # the loaded heterograph passes messages like the one written
    h.update_all(dgl.function.copy_u("h", "m"), dgl.function.sum("m", "h2"), etype="plays")
    assert h.nodes["game"].data["h2"].asnumpy().tolist() == [[6, 7], [0, 1], [6, 7], [0, 0]]


def test_a_damaged_heterograph_entry_is_one_line(tmp_path):
    path = tmp_path / "h.bin"
    dgl.save_graphs(str(path), [_hetero("int64")])
    magic, head, body = path.read_bytes().split(b"\n", 2)
    for mutate, match in ((lambda e: e["relations"][1].update(src="g0.r9.src"), "does not hold"),
                          (lambda e: e.pop("relations"), "malformed"),
                          (lambda e: e["num_nodes"].update(user=2), "out of range")):
        h = json.loads(head)
        mutate(h["graphs"][0])
        bad = tmp_path / "bad.bin"
        bad.write_bytes(magic + b"\n" + json.dumps(h).encode() + b"\n" + body)
        with pytest.raises(dgl.DGLError, match=match) as info:
            dgl.load_graphs(str(bad))
        assert str(bad) in str(info.value) and "\n" not in str(info.value)
