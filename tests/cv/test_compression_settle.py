"""No compression nobody asked for: a config's compressor does not follow a different --algorithm
into synchronous SGD, and one worker applies no compression; both are said in the log."""
import os
import subprocess
import sys

import pytest

from gluon_suite.utils import UserError
from gluon_suite.distributed.settle import settle_compression

from ..conftest import REPO

CSER = {"algorithm": "cser", "compressor": "grbs", "ratio": 32, "period": 4, "compressor2": None, "ratio2": None}


def test_sync_flag_over_a_cser_config_drops_its_compressor():
    cfg, notes = settle_compression({**CSER, "algorithm": "sync"}, {"algorithm"}, workers=2, source="--config c.yaml")
    assert (cfg["algorithm"], cfg["compressor"], cfg["ratio"]) == ("sync", "none", None)
    assert len(notes) == 1 and "grbs (ratio 32)" in notes[0] and "--config c.yaml" in notes[0] and "dense" in notes[0]


def test_named_compressor_is_kept_as_given():
    cfg, notes = settle_compression({**CSER, "algorithm": "sync"}, {"algorithm", "compressor"}, workers=2)
    assert (cfg["compressor"], cfg["ratio"]) == ("grbs", 32) and notes == []
    cfg, notes = settle_compression(dict(CSER), set(), workers=2)  # the config's own pair: as written
    assert cfg == CSER and notes == []


def test_another_algorithm_keeps_the_compressor_and_says_what_it_resolved_to():
    cfg, notes = settle_compression({**CSER, "algorithm": "ef"}, {"algorithm"}, workers=4)
    assert (cfg["algorithm"], cfg["compressor"], cfg["ratio"]) == ("ef", "grbs", 32)
    assert len(notes) == 1 and "resolved to algorithm ef" in notes[0] and "grbs (ratio 32)" in notes[0]


@pytest.mark.parametrize("pair", [{"compressor": "grbs", "ratio": 32}, {"compressor": "fp16"},
                                  {"compressor": "zero", "compressor2": "grbs", "ratio2": 16}])
def test_one_worker_applies_no_compression(pair):
    cfg, notes = settle_compression({**CSER, "ratio": None, **pair}, set(), workers=1)
    assert cfg["compressor"] == "none" and cfg["compressor2"] is None and cfg["ratio"] is None
    assert len(notes) == 1 and notes[0].startswith("one worker: nothing is communicated")
    same, kept = settle_compression({**CSER, **pair}, set(), workers=1, elastic=True)  # workers may join
    assert same["compressor"] == pair["compressor"] and kept == []


def test_script_logs_what_it_resolved_to(tmp_path):
    p = subprocess.run([sys.executable, "scripts/cv/train_classification.py", "--model", "digits_cnn",
                        "--image-size", "8", "--compressor", "grbs", "--ratio", "32", "--epochs", "1",
                        "--out", str(tmp_path / "run"), "--no-progress"],
                       capture_output=True, text=True, cwd=REPO, env=dict(os.environ, GLUON_SUITE_HOME=str(tmp_path)))
    assert p.returncode == 0, p.stderr[-2000:]
    lines = p.stdout.splitlines()
    assert "note: one worker: nothing is communicated, so no compression is applied" in lines[0]
    assert lines[1].endswith("sync / none")


def test_auto_flag_over_a_cser_config_drops_its_compression():
    """auto chooses the compression: the file's CSER pair and period do not pin it (a note says so);
    --auto-ratios given with the file's ratio is not a conflict, with --ratio on the command line it is."""
    cfg, notes = settle_compression({**CSER, "algorithm": "auto", "auto_ratios": [8, 16]}, {"algorithm", "auto_ratios"},
                                    workers=4, source="--config c.yaml")
    assert (cfg["algorithm"], cfg["compressor"], cfg["ratio"], cfg["period"]) == ("auto", "none", None, None)
    assert cfg["auto_ratios"] == [8, 16]
    assert len(notes) == 1 and "grbs (ratio 32) and period 4" in notes[0] and "auto chooses" in notes[0]
    cfg, _ = settle_compression({**CSER, "algorithm": "auto"}, {"algorithm", "period"}, workers=4)
    assert cfg["period"] == 4        # named on the command line: kept
    with pytest.raises(UserError, match="give one of them"):
        settle_compression({**CSER, "algorithm": "auto", "auto_ratios": [8]}, {"algorithm", "ratio", "auto_ratios"},
                           workers=4)
