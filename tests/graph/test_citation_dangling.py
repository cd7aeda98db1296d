"""DGL-style citation data sets on LINQS files with a cites line naming an absent paper: CiteSeer's
published files have such lines, so CiteseerGraphDataset skips them; Cora's have none, so there
it stays an error naming the id (both can be overridden with ``dangling=``)."""
import pytest

from gluon_suite.graph.data import CiteseerGraphDataset, CoraGraphDataset
from gluon_suite.graph.base import GraphError


def write(folder, name):
    rows = [("p1", "1 0 1", "A"), ("p2", "0 1 1", "B"), ("p3", "1 1 0", "A"), ("p4", "0 0 1", "B")]
    (folder / f"{name}.content").write_text("".join("\t".join([p, *a.split(), c]) + "\n" for p, a, c in rows))
    # the last line names 'ghost', which the content file does not list
    (folder / f"{name}.cites").write_text("p1\tp2\np2\tp3\np3\tp4\nghost\tp1\n")


def test_citeseer_skips_a_cite_of_an_absent_paper(tmp_path):
    write(tmp_path, "citeseer")
    data = CiteseerGraphDataset(raw_dir=str(tmp_path), train_per_class=1)
    g = data[0]
    assert g.number_of_nodes() == 4 and g.number_of_edges() == 2 * 3      # both directions, 3 cites kept
    assert sorted(data.classes) == ["A", "B"]


def test_cora_names_the_absent_paper_unless_told_to_drop(tmp_path):
    write(tmp_path, "cora")
    with pytest.raises(GraphError, match="ghost"):
        CoraGraphDataset(raw_dir=str(tmp_path), train_per_class=1)
    g = CoraGraphDataset(raw_dir=str(tmp_path), train_per_class=1, dangling="drop")[0]
    assert g.number_of_edges() == 6
