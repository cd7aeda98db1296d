"""bench/gpu_profiles.py: measured profiles from bench/torch_step_profile.py's raw JSON, against
the derived V100 ones, on a synthetic raw file with hand-computed answers."""
import json

import pytest

from gluon_suite.whatif import load_profile

from ..conftest import load_script

bench = load_script("bench/gpu_profiles.py")

RAW = {
    "device": {"name": "NVIDIA H100 80GB HBM3", "context": "gpu(0)"},
    "versions": {"torch": "2.11.0", "cuda": "13.0", "cudnn": 91000, "torchvision": "0.26.0",
                 "transformers": "5.17.0", "python": "3.12.3"},
    "profiles": [{"model": "resnet50_v1b", "dtype": "float32", "batch_size": 64, "image_size": 224,
                  "forward_s": 0.02, "backward_s": 0.04, "optimizer_s": 0.004, "wall_step_s": 0.07, "steps": 20,
                  "optimizer": "SGD momentum 0.9 (foreach)", "parameters": 30,
                  # backward order: 40 bytes at 5 ms, 60 at 25 ms, 20 at the very end (40 ms)
                  "tensors": [{"bytes": 40.0, "ready_s": 0.005}, {"bytes": 60.0, "ready_s": 0.025},
                              {"bytes": 20.0, "ready_s": 0.041}]}],
}


def test_device_names_give_profile_prefixes():
    assert bench.prefix_of("NVIDIA H100 80GB HBM3") == "h100"
    assert bench.prefix_of("Tesla V100-SXM2-16GB") == "v100"
    assert bench.prefix_of("NVIDIA A100-SXM4-40GB") == "a100"


def test_measured_profile_file_and_comparison_by_hand(tmp_path, capsys):
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps(RAW))
    out = tmp_path / "cmp.json"
    with pytest.raises(SystemExit) as exc:
        bench.run_cli(bench.main, ["--raw", str(raw), "--profiles-dir", str(tmp_path), "--out", str(out)])
    assert exc.value.code == 0
    prof, rec = load_profile(str(tmp_path / "h100_resnet50_v1b_fp32.json"))
    assert rec["source"] == "measured" and rec["versions"]["torch"] == "2.11.0" and rec["versions"]["mxnet"] is None
    assert "PyTorch 2.11.0" in rec["reference"]["measured_with"] and rec["device"]["name"].startswith("NVIDIA H100")
    # the ready time past backward's end is capped at its end (41 ms -> 40 ms)
    assert prof.grad_bytes == [40.0, 60.0, 20.0] and prof.ready == pytest.approx([0.005, 0.025, 0.04])
    row = json.loads(out.read_text())["rows"][0]
    # by 10, 20, 30 ms of backward: 40 of 120 bytes, 40, then 100 of 120
    assert row["ready_shares"] == pytest.approx([40 / 120, 40 / 120, 100 / 120])
    assert row["forward_to_backward"] == pytest.approx(0.5) and row["step_s"] == pytest.approx(0.064)
    derived, _ = load_profile("v100_resnet50_v1b_fp32")    # 64 / 384 img/s = 1/6 s
    assert row["derived_step_s"] == pytest.approx(1 / 6) and row["step_ratio"] == pytest.approx(0.064 * 6)
    assert row["derived_forward_to_backward"] == pytest.approx(0.5)
    assert "h100_resnet50_v1b_fp32" in capsys.readouterr().out


def test_a_raw_file_that_is_not_one_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"profiles": []}))
    with pytest.raises(SystemExit) as exc:
        bench.run_cli(bench.main, ["--raw", str(bad), "--profiles-dir", str(tmp_path), "--out", str(tmp_path / "o.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "torch_step_profile.py" in err[0]
