"""Pretraining settles the algorithm/compressor pair from what the command line named, as the
vision script does: ``--algorithm sync`` over a config whose CSER brought a compressor drops that
compressor and says so (the script once passed no flags, so the pair was left as the file had it)."""
import os
import subprocess
import sys

from ..conftest import REPO


def test_sync_flag_over_a_cser_config_drops_its_compressor(tmp_path):
    config = tmp_path / "cser.yaml"
    config.write_text("algorithm: cser\ncompressor: grbs\nratio: 32\nperiod: 4\n")
    p = subprocess.run([sys.executable, "scripts/nlp/pretrain_bert.py", "--config", str(config), "--algorithm", "sync",
                        "--phase", "seq_len=32,batch_size=8,steps=1,lr=0.001", "--no-progress",
                        "--out", str(tmp_path / "run")],
                       capture_output=True, text=True, cwd=REPO, env=dict(os.environ, GLUON_SUITE_HOME=str(tmp_path)))
    assert p.returncode == 0, p.stderr[-2000:]
    notes = [line for line in p.stdout.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1, p.stdout
    assert notes[0].startswith(f"note: --algorithm sync: the compressor grbs (ratio 32) from --config {config} "
                               "belonged to its algorithm and is dropped"), notes
