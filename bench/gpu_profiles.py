"""Measured GPU profiles beside the derived V100 ones: turn the raw JSON of
``bench/torch_step_profile.py`` (run on a GPU machine) into what-if profile files and compare each
with the bundled derived profile of the same model and precision.

For each measured profile the comparison gives:
- the step time (forward + backward + optimizer) against the derived V100 step, a ratio;
- forward : backward, against the derived 1 : 2 (an assumption of the derivation);
- the share of gradient bytes ready by a quarter, half and three quarters of backward, against
  the derived spread by multiply-adds (what decides how much communication can overlap);
- the predicted scaling factor at 64 GPUs (8 per host, NVLink) and 10 and 100 Gbit/s, on the
  cluster of ``bench/whatif_paper.py``, from each profile.

Writes gluon_suite/whatif/profiles/<prefix>_<model>_<fp32|fp16>.json (``"source": "measured"``,
with the framework that measured it named) and bench/results/gpu_profiles.json, and prints a table.

    python bench/gpu_profiles.py --raw torch_profiles_h100.json [--prefix h100]
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from gluon_suite.utils import UserError, run_cli, write_json  # noqa: E402
from gluon_suite.whatif import StepProfile, predict  # noqa: E402
from gluon_suite.whatif.profiles import BUNDLED_DIR, load_profile, profile_record, save_profile  # noqa: E402

QUARTERS = (0.25, 0.5, 0.75)
CLUSTER = {"gpus_per_host": 8, "intra_bandwidth": 150e9, "latency": 5e-6, "fusion_bytes": 64_000_000,
           "topology": "best"}


def short(dtype):
    return "fp32" if dtype == "float32" else "fp16"


def prefix_of(device_name):
    """``NVIDIA H100 80GB HBM3`` -> ``h100``: the first word of letters and digits after the vendor."""
    words = [w for w in re.split(r"[\s-]+", device_name.lower()) if w not in ("nvidia", "tesla", "geforce")]
    name = next((w for w in words if re.fullmatch(r"[a-z]+\d+[a-z]*", w)), None)
    if name is None:
        raise UserError(f"cannot name a profile after the device {device_name!r}; give --prefix")
    return name


def ready_shares(prof):
    """Share of the gradient bytes ready by each of ``QUARTERS`` of backward."""
    total = sum(prof.grad_bytes)
    return [sum(b for b, r in zip(prof.grad_bytes, prof.ready) if r <= q * prof.backward_s + 1e-12) / total
            for q in QUARTERS]


def measured_profile(raw, entry):
    """``(StepProfile, record)`` of one measured entry of the raw file."""
    bwd = float(entry["backward_s"])
    sizes = [float(t["bytes"]) for t in entry["tensors"]]
    ready = [min(max(float(t["ready_s"]), 0.0), bwd) for t in entry["tensors"]]
    prof = StepProfile(float(entry["forward_s"]), bwd, sizes, float(entry["optimizer_s"]), ready=ready)
    v = raw["versions"]
    ref = {"measured_with": f"PyTorch {v.get('torch')} (CUDA {v.get('cuda')}, cuDNN {v.get('cudnn')}), "
                            f"torchvision {v.get('torchvision')}, transformers {v.get('transformers')}: the same "
                            "architecture as the suite's model, not its MXNet kernels",
           "how": f"median of {entry['steps']} steps after 5 warm-up steps; each gradient's ready time from a "
                  "CUDA event recorded by its post-accumulate hook; optimizer " + entry["optimizer"]}
    rec = profile_record(prof, model=entry["model"], batch_size=entry["batch_size"],
                         image_size=entry.get("image_size"), dtype=entry["dtype"], device=raw["device"],
                         source="measured", reference=ref)
    rec["versions"] = {**rec["versions"], **v, "mxnet": None}
    if "seq_len" in entry:
        rec["seq_len"] = entry["seq_len"]
    return prof, rec


def compare(prof, derived):
    """The comparison of a measured profile with the derived one (see the module docstring)."""
    def step(p):
        return p.forward_s + p.backward_s + p.optimizer_s

    def sf(p, gbps):
        return predict(p, 64, gbps * 1e9 / 8, **CLUSTER)["scaling_factor"]
    return {"step_s": step(prof), "derived_step_s": step(derived), "step_ratio": step(prof) / step(derived),
            "forward_to_backward": prof.forward_s / prof.backward_s,
            "derived_forward_to_backward": derived.forward_s / derived.backward_s,
            "ready_shares": ready_shares(prof), "derived_ready_shares": ready_shares(derived),
            "sf_64gpus": {str(g): sf(prof, g) for g in (10, 100)},
            "derived_sf_64gpus": {str(g): sf(derived, g) for g in (10, 100)}}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    ap.add_argument("--raw", required=True, help="the JSON bench/torch_step_profile.py wrote")
    ap.add_argument("--prefix", help="profile names' prefix (default: from the device, e.g. h100)")
    ap.add_argument("--profiles-dir", default=BUNDLED_DIR)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "gpu_profiles.json"))
    args = ap.parse_args(argv)
    try:
        with open(args.raw, encoding="utf-8") as f:
            raw = json.load(f)
        entries, device = raw["profiles"], raw["device"]["name"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"--raw {args.raw} is not the output of bench/torch_step_profile.py ({exc}); run that "
                        "on the GPU machine and give its --out file") from None
    prefix = args.prefix or prefix_of(device)
    rows = []
    for entry in entries:
        prof, rec = measured_profile(raw, entry)
        name = f"{prefix}_{entry['model']}_{short(entry['dtype'])}"
        save_profile(os.path.join(args.profiles_dir, name + ".json"), rec)
        derived, _ = load_profile(f"v100_{entry['model']}_{short(entry['dtype'])}")
        rows.append({"profile": name, "model": entry["model"], "dtype": entry["dtype"], **compare(prof, derived)})
    write_json(args.out, {"device": raw["device"], "versions": raw["versions"], "cluster": CLUSTER, "rows": rows})
    print(f"{'profile':32s} {'step ms':>8s} {'/derived':>8s} {'fwd:bwd':>8s} {'ready 25/50/75%':>18s} "
          f"{'derived':>18s} {'SF 10G':>7s} {'derived':>7s}")
    for r in rows:
        sh = "/".join(f"{x:.2f}" for x in r["ready_shares"])
        dsh = "/".join(f"{x:.2f}" for x in r["derived_ready_shares"])
        print(f"{r['profile']:32s} {1e3 * r['step_s']:8.1f} {r['step_ratio']:8.3f} {r['forward_to_backward']:8.2f} "
              f"{sh:>18s} {dsh:>18s} {r['sf_64gpus']['10']:7.3f} {r['derived_sf_64gpus']['10']:7.3f}")
    print(f"wrote {len(rows)} profiles to {args.profiles_dir} and {args.out}")
    return 0


if __name__ == "__main__":
    run_cli(main)
