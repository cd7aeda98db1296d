"""On one worker there is nothing to send, so the quick-start, BERT pretraining and both graph recipes
build their trainer without compression when asked for one, and say so in one note line (the
vision recipe's own case is in tests/cv/test_compression_settle.py)."""
import pytest

from gluon_suite.distributed import DistributedTrainer, LocalCommunicator


@pytest.fixture
def built(monkeypatch):
    """Record the algorithm and the compressor of every step (its name and ratio) of every
    DistributedTrainer the given recipe module builds."""
    seen = []

    def record(module):
        def make(*args, **kw):
            tr = DistributedTrainer(*args, **kw)
            cfg = tr.algorithm.config()
            step = cfg.get("c1") or cfg.get("compressor")    # cser's C1, or the one compressor
            seen.append({"algorithm": cfg["name"], "compressor": step["name"], "ratio": step["ratio"]})
            return tr
        monkeypatch.setattr(module, "DistributedTrainer", make)
        return seen
    return record


def _one_note(lines):
    notes = [m for m in lines if m.startswith("note: one worker")]
    assert len(notes) == 1 and "grbs (ratio 32)" in notes[0] and "no compression" in notes[0], lines
    return notes


def test_quickstart(built, tmp_path):
    import gluon_suite.cv.quickstart as qs
    seen, log = built(qs), []
    qs.train_digits({"epochs": 1, "max_steps": 2, "progress": False, "algorithm": "cser", "compressor": "grbs",
                     "ratio": 32, "period": 4, "out": str(tmp_path)}, LocalCommunicator(), log=log.append)
    assert seen == [{"algorithm": "cser", "compressor": "none", "ratio": 1.0}]
    _one_note(log)


def test_bert_pretraining(built, tmp_path):
    import gluon_suite.nlp.pretrain as pt
    seen, log = built(pt), []
    pt.pretrain_bert({"out": str(tmp_path / "b"), "progress": False, "algorithm": "cser", "compressor": "grbs",
                      "ratio": 32, "period": 4,
                      "phases": [{"seq_len": 32, "batch_size": 8, "steps": 2, "lr": 0.01}]},
                     LocalCommunicator(), log=log.append)
    assert seen and all(s["compressor"] == "none" and s["ratio"] == 1.0 for s in seen)
    _one_note(log)


@pytest.mark.parametrize("recipe,config", [
    ("train_node_classification", {"dataset": "karate", "model": "gcn", "epochs": 2}),
    ("train_graph_classification", {"dataset": "families", "epochs": 1}),
])
def test_graph_recipes(built, tmp_path, recipe, config):
    import gluon_suite.graph.recipes as gr
    seen, log = built(gr), []
    getattr(gr, recipe)({**config, "out": str(tmp_path / "g"), "algorithm": "cser", "compressor": "grbs",
                         "ratio": 32, "period": 4}, LocalCommunicator(), log=log.append)
    assert seen == [{"algorithm": "cser", "compressor": "none", "ratio": 1.0}]
    _one_note(log)


def test_two_workers_keep_the_compressor_they_asked_for():
    from gluon_suite.distributed.settle import settle_compression
    cfg, notes = settle_compression({"algorithm": "cser", "compressor": "grbs", "ratio": 32}, (), 2)
    assert (cfg, notes) == ({"algorithm": "cser", "compressor": "grbs", "ratio": 32}, [])
