"""The what-if paper's headline from profiles: ResNet-50, ResNet-101 and VGG-16 on hosts of 8 V100,
8 to 64 GPUs, 1 to 100 Gbit/s, at full network utilisation.

No V100 is measured here: each profile is derived (and marked so) from published figures.

- Compute per image: NVIDIA's MXNet ResNet-50 v1.5 recipe (DeepLearningExamples,
  MxNet/Classification/RN50v1.5, "Training performance: NVIDIA DGX-1 (8x V100 16GB)", 1 GPU,
  mxnet-20.12-py3): 384 img/s in FP32 at batch 96, 1376 img/s in mixed precision at batch 192.
  ResNet-101 and VGG-16 are scaled from ResNet-50 by their forward multiply-adds as published by He
  et al., "Deep Residual Learning for Image Recognition" (CVPR 2016): ResNet-50 3.8, ResNet-101 7.6,
  VGG-16 15.3 billion. Assumption: time per image is proportional to multiply-adds at ResNet-50's
  efficiency (for VGG-16, whose large convolutions run nearer the GPU's peak, this overstates its
  compute, so its scaling factor is optimistic).
- Step: per-GPU batch 64 (assumption), forward : backward = 1 : 2 (assumption; backward computes
  two products per forward one), optimizer time 0 (a fused update on the GPU, well under 1 ms).
- Gradients: every trainable parameter of GluonCV's resnet50_v1b, resnet101_v1b and vgg16 (the
  constructors only, no weights), 4 bytes each (2 in mixed precision), in backward order; each
  tensor is ready when backward has gone through its layer, with backward time spread over the layers
  by their multiply-adds (measured from the layers' output shapes at 224x224).
- Cluster: 8 GPUs per host on NVLink (150 GB/s per GPU each way, V100 SXM2's 300 GB/s both ways), one
  network link per host, 5 us per message, Horovod's 64 MB fusion buffer, the faster of the flat ring
  and the hierarchical allreduce. "Full utilisation": the link runs at its rate (gamma = kappa = 0).

- BERT-base (not in the paper; bundled for planning BERT jobs): NVIDIA's BERT-large pre-training
  throughput (DeepLearningExamples, TensorFlow/LanguageModeling/BERT, "Pre-training training
  performance: single-node on DGX-1 32GB", 1 GPU, sequence 128, TensorFlow 20.06-py3): 46.78
  sequences/s in FP32 at batch 32, 168.63 in mixed precision at batch 64. BERT-base is scaled from
  BERT-large by multiply-adds per sequence of 128 tokens with 20 masked positions, counted from the
  suite's GluonNLP models (every Dense layer; the self-attention cell's query, key and value
  projections and its two products, 2 s^2 d). Per-GPU batch 64 sequences (assumption), forward :
  backward = 1 : 2, optimizer 0 (LAMB or Adam fused on the GPU is a few ms; stated, not added). Gradients: every trainable parameter of
  the suite's bert_12_768_12 with its pre-training heads (the MLM decoder's weight is the word
  embedding's), in the order backward reaches the blocks that own them: the embeddings last.

The protocol bench/protocols/whatif_paper.yaml states the claims checked against these profiles:

    .venv/bin/gluon-suite bench run whatif_paper [--quick]

``python bench/whatif_paper.py --write-profiles`` writes the derived profiles as the bundled ones
(gluon_suite/whatif/profiles/v100_*.json); a run reports whether the bundled profiles equal the
profiles it derives.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from gluon_suite.utils.progress import progress  # noqa: E402
from gluon_suite.whatif import StepProfile, min_ratio, predict  # noqa: E402
from gluon_suite.whatif.advise import advise, candidate_list  # noqa: E402
from gluon_suite.whatif.profiles import BUNDLED_DIR, load_profile, profile_record, save_profile  # noqa: E402

NVIDIA_RN50 = ("NVIDIA DeepLearningExamples, MxNet/Classification/RN50v1.5 README, 'Training performance: NVIDIA "
               "DGX-1 (8x V100 16GB)', 1 GPU, mxnet-20.12-py3")
HE_2016 = "He et al., Deep Residual Learning for Image Recognition, CVPR 2016 (FLOPs as multiply-adds)"
RN50_IMG_S = {"float32": (384.0, 96), "float16": (1376.0, 192)}      # images/s at that batch, 1 V100
NVIDIA_BERT = ("NVIDIA DeepLearningExamples, TensorFlow/LanguageModeling/BERT README, 'Pre-training training "
               "performance: single-node on DGX-1 32GB', 1 GPU, BERT-large, sequence length 128, TensorFlow 20.06-py3")
BERT_LARGE_SEQ_S = {"float32": (46.78, 32), "float16": (168.63, 64)}  # sequences/s at that batch, 1 V100 32GB
BERT_SEQ, BERT_MASKED, BERT_BATCH = 128, 20, 64
BERT = "bert_12_768_12"
GMACS = {"resnet50_v1b": 3.8, "resnet101_v1b": 7.6, "vgg16": 15.3}    # He et al. 2016
BATCH = 64
MODELS = ("resnet50_v1b", "resnet101_v1b", "vgg16")
GPUS = (8, 16, 32, 64)
GBPS = (1, 10, 25, 100)
GPUS_PER_HOST = 8
NVLINK = 150e9
LATENCY = 5e-6
FUSION = 64_000_000     # --fusion-mb 64, as the CLI takes it
PAPER = {
    "reference": "Zhang, Chang, Lin, Wang, Arora, Jin: Is Network the Bottleneck of Distributed Training? "
                 "NetAI 2020 (arXiv:2006.10103)",
    "abstract_quotes": [
        "if the network can be fully utilized, distributed training can achieve a scaling factor of close to one",
        "under full network utilization, there is no need for gradient compression in 100 Gbps network",
        "a lower speed network like 10 Gbps requires only 2x-5x gradients compression ratio to achieve almost "
        "linear scale-out"],
}


def layer_costs(name):
    """``[(multiply-adds, [param byte counts per float])]`` per compute layer of GluonCV's ``name``
    in forward order, from one forward pass at 224x224 (no weights are downloaded)."""
    import gluoncv
    import mxnet as mx
    from mxnet.gluon import nn

    net = gluoncv.model_zoo.get_model(name, pretrained=False)
    net.initialize(mx.init.Xavier())
    order = []

    def hook(block, inputs, output):
        w = block.weight.shape
        if isinstance(block, nn.Conv2D):
            macs = output.size * w[1] * w[2] * w[3]          # per output element: (cin/groups) k k
        else:
            macs = output.size * w[1]
        order.append((block, float(macs)))

    for blk in _leaves(net):
        if isinstance(blk, (nn.Conv2D, nn.Dense)):
            blk.register_forward_hook(hook)
    net(mx.nd.zeros((1, 3, 224, 224)))
    seen, layers = set(), []
    owner = {}
    for blk in _leaves(net):
        for p in blk.collect_params().values():
            owner.setdefault(p.name, blk)
    # parameters without their own compute layer (BatchNorm) join the compute layer before them
    params_in_order = []
    for blk in _leaves(net):
        for p in blk.params.values() if hasattr(blk.params, "values") else []:
            if p.grad_req != "null" and p.name not in seen:
                seen.add(p.name)
                params_in_order.append((blk, p))
    pos = {id(b): k for k, (b, _) in enumerate(order)}
    cur = -1
    groups = [[] for _ in order]
    for blk, p in params_in_order:
        if id(blk) in pos:
            cur = pos[id(blk)]
        groups[max(cur, 0)].append(int(p.data().size))
    for (blk, macs), sizes in zip(order, groups):
        layers.append((macs, sizes))
    return layers


def _leaves(block):
    """Blocks that own parameters (a Dense with an activation has a child, but is one layer) or
    have no children, in definition order (which is forward order in these models)."""
    kids = list(block._children.values())
    if not kids or len(block.params.keys()):
        yield block
        return
    for k in kids:
        yield from _leaves(k)


def derived_profile(name, dtype, layers):
    """The derived V100 profile of ``name`` in ``dtype`` (see the module docstring)."""
    img_s, at_batch = RN50_IMG_S[dtype]
    step = BATCH / img_s * GMACS[name] / GMACS["resnet50_v1b"]
    itemsize = 4 if dtype == "float32" else 2
    ref = {"compute": f"{img_s:g} img/s for ResNet-50 on one V100 at batch {at_batch} ({NVIDIA_RN50}); scaled by "
                      f"forward multiply-adds {GMACS[name]} / {GMACS['resnet50_v1b']} billion ({HE_2016})",
           "assumptions": f"batch {BATCH} per GPU at the same time per image; forward:backward 1:2; optimizer 0; "
                          "backward time spread over layers by multiply-adds (from GluonCV's layer shapes)",
           "gradients": f"GluonCV {name} trainable parameters, {itemsize} bytes each"}
    return _from_layers(name, dtype, layers, step, BATCH, 224, "Tesla V100-SXM2-16GB", ref)


def _from_layers(name, dtype, layers, step, batch, image_size, device, ref):
    """A step of ``step`` seconds (forward 1/3, backward 2/3), each gradient ready when backward has
    gone through its layer, backward time spread over ``layers`` by their multiply-adds."""
    fwd, bwd = step / 3.0, 2.0 * step / 3.0
    total = sum(m for m, _ in layers)
    itemsize = 4 if dtype == "float32" else 2
    sizes, ready, done = [], [], 0.0
    for macs, params in reversed(layers):                 # backward: last layer first
        done += macs
        for n in params:
            sizes.append(float(n * itemsize))
            ready.append(bwd * done / total)
    prof = StepProfile(fwd, bwd, sizes, 0.0, ready=ready)
    return prof, profile_record(prof, model=name, batch_size=batch, image_size=image_size, dtype=dtype,
                                device={"context": "gpu(0)", "name": device}, source="derived", reference=ref)


def bert_layer_costs(name, seq=BERT_SEQ, masked=BERT_MASKED):
    """``([(multiply-adds, [param sizes])], total multiply-adds)`` for the suite's GluonNLP BERT
    ``name`` (with its pre-training heads) on one sequence of ``seq`` tokens with ``masked`` MLM
    positions. One entry per block that owns parameters, in the order a forward pass calls them (the
    encoder, which owns the position embedding, before its layers); each parameter counted once,
    at its first call (the MLM decoder's weight is the word embedding's). A Dense layer's
    multiply-adds are its output size times its input width; the self-attention cell's are its
    query/key/value projections per token plus its two batched products, 2 s^2 d."""
    import mxnet as mx
    from mxnet.gluon import nn
    from gluon_suite.model_zoo import get_model

    net = get_model(name)
    net.initialize(mx.init.Normal(0.02))
    calls, macs = [], {}

    def pre(block, inputs):
        calls.append(block)

    def post(block, inputs, output):
        out = output[0] if isinstance(output, (list, tuple)) else output
        if isinstance(block, nn.Dense):
            macs[id(block)] = macs.get(id(block), 0.0) + float(out.size * block.weight.shape[1])
        elif type(block).__name__ == "DotProductSelfAttentionCell":
            # its own query/key/value projections (FullyConnected on its weights) per token, then
            # the two batched products (scores and weighted values): 2 s^2 d
            # (GluonNLP's encoder runs sequence-major: (seq, batch, units))
            tokens, width = out.shape[0] * out.shape[1], out.shape[2]
            proj = sum(p.data().size for p in block.params.values() if len(p.shape) == 2)
            macs[id(block)] = float(tokens * proj + 2 * tokens * seq * width)

    def walk(block):
        yield block
        for child in block._children.values():
            yield from walk(child)

    for blk in walk(net):
        if len(blk.params.keys()):
            blk.register_forward_pre_hook(pre)
            blk.register_forward_hook(post)
    zeros = mx.nd.zeros((1, seq))
    net(zeros, zeros, mx.nd.array([seq]), mx.nd.arange(masked).reshape((1, masked)))
    called, seen, layers = set(), set(), []
    for blk in calls:
        if id(blk) in called:
            continue
        called.add(id(blk))
        params = [p for p in blk.params.values() if id(p) not in seen]
        seen.update(id(p) for p in params)
        layers.append((macs.get(id(blk), 0.0), [int(p.data().size) for p in params if p.grad_req != "null"]))
    return layers, sum(m for m, _ in layers)


def derived_bert_profile(dtype, layers, total, total_large):
    """The derived V100 profile of BERT-base in ``dtype`` from BERT-large's published throughput,
    scaled by multiply-adds (``total`` / ``total_large``, from ``bert_layer_costs``)."""
    seq_s, at_batch = BERT_LARGE_SEQ_S[dtype]
    step = BERT_BATCH / seq_s * total / total_large
    itemsize = 4 if dtype == "float32" else 2
    ref = {"compute": f"{seq_s:g} sequences/s for BERT-large on one V100 at batch {at_batch} ({NVIDIA_BERT}); "
                      f"scaled by multiply-adds per sequence {total / 1e9:.2f} / {total_large / 1e9:.2f} billion "
                      f"(BERT-base / BERT-large, {BERT_SEQ} tokens, {BERT_MASKED} masked positions, counted from "
                      "the suite's GluonNLP models)",
           "assumptions": f"batch {BERT_BATCH} sequences of {BERT_SEQ} tokens per GPU at the same time per "
                          "sequence; forward:backward 1:2; optimizer 0; backward time spread over the blocks by "
                          "their multiply-adds",
           "gradients": f"{BERT} trainable parameters with the pre-training heads, {itemsize} bytes each"}
    prof, rec = _from_layers(BERT, dtype, layers, step, BERT_BATCH, None, "Tesla V100-SXM2-32GB", ref)
    rec["seq_len"] = BERT_SEQ
    return prof, rec


def cluster():
    return {"latency": LATENCY, "fusion_bytes": FUSION, "gpus_per_host": GPUS_PER_HOST, "intra_bandwidth": NVLINK,
            "topology": "best"}


def derive_profiles(out_dir):
    """Every derived V100 profile (the three CNNs and BERT-base, FP32 and mixed precision), written to
    ``out_dir`` as ``v100_*.json`` and read back through the loader the CLI uses; ``{key: (StepProfile,
    record)}``."""
    os.makedirs(out_dir, exist_ok=True)
    profiles = {}

    def keep(key, rec):
        save_profile(os.path.join(out_dir, key + ".json"), rec)
        profiles[key] = load_profile(os.path.join(out_dir, key + ".json"))
    for name in progress(MODELS, desc="deriving profiles"):
        layers = layer_costs(name)
        for dtype in ("float32", "float16"):
            keep(f"v100_{name}_{'fp32' if dtype == 'float32' else 'fp16'}", derived_profile(name, dtype, layers)[1])
    base, total = bert_layer_costs(BERT)
    _, total_large = bert_layer_costs("bert_24_1024_16")
    for dtype in ("float32", "float16"):
        keep(f"v100_{BERT}_{'fp32' if dtype == 'float32' else 'fp16'}",
             derived_bert_profile(dtype, base, total, total_large)[1])
    return profiles


def same_as_bundled(key, rec):
    """Whether the bundled profile ``key`` holds the same times and tensors as the derived ``rec``."""
    try:
        _, b = load_profile(os.path.join(BUNDLED_DIR, key + ".json"))
    except Exception:       # noqa: BLE001 - a missing or unreadable bundled profile is "not the same"
        return False
    fields = ("forward_s", "backward_s", "optimizer_s", "tensors", "batch_size", "dtype", "model")
    return all(b.get(k) == rec.get(k) for k in fields)


def predictions(profiles, target_sf=0.9):
    """Per profile, GPU count and bandwidth: the scaling factor without compression, the smallest
    ratios reaching SF ``target_sf`` and 0.95, and ``advise``'s choice for ``target_sf``."""
    rows = []
    for key, (prof, rec) in profiles.items():
        for n in GPUS:
            for g in GBPS:
                bw = g * 1e9 / 8
                r = predict(prof, n, bw, ratio=1.0, **cluster())
                cl = dict(cluster())
                lat, fus = cl.pop("latency"), cl.pop("fusion_bytes")
                need = min_ratio(prof, n, bw, target_sf, lat, fus, **cl)
                need95 = min_ratio(prof, n, bw, 0.95, lat, fus, **cl)
                adv = advise(prof, n, bw, target_sf, candidate_list(grad_dtype=rec["dtype"]), **cluster())
                rows.append({"profile": key, "model": rec["model"], "dtype": rec["dtype"], "gpus": n,
                             "hosts": n // GPUS_PER_HOST, "gbps": g, "scaling_factor": r["scaling_factor"],
                             "step_s": r["step_s"], "topology": r["topology"],
                             "network_utilisation": r["network_utilisation"],
                             "min_ratio_sf90": need, "min_ratio_sf95": need95,
                             "advice_sf90": {"name": adv["choice"]["name"], "flags": adv["choice"]["flags"],
                                             "reached": adv["reached"],
                                             "scaling_factor": adv["choice"]["scaling_factor"]}})
    return rows


def analyse(workdir, target_sf=0.9):
    """One evaluation of the paper's headline: derive the profiles, predict every row, the
    sensitivity of ResNet-50's need; the criteria's metrics over the FP32 CNN rows."""
    profiles = derive_profiles(os.path.join(workdir, "profiles"))
    rows = predictions(profiles, target_sf)
    sens = sensitivity(profiles["v100_resnet50_v1b_fp32"][0], target_sf)
    cnn = [r for r in rows if r["dtype"] == "float32" and r["model"] in MODELS]
    resnet10 = [r["min_ratio_sf90"] for r in cnn if r["gbps"] == 10 and r["model"] != "vgg16"]
    summary = {key: {"forward_s": p.forward_s, "backward_s": p.backward_s, "grad_mb": sum(p.grad_bytes) / 1e6,
                     "tensors": len(p.grad_bytes), "reference": rec["reference"],
                     "same_as_bundled": same_as_bundled(key, rec)} for key, (p, rec) in profiles.items()}
    return {"sf_100gbps_min": min(r["scaling_factor"] for r in cnn if r["gbps"] == 100),
            "resnet_ratio_sf90_10gbps_max": None if None in resnet10 else max(resnet10),
            "resnet_ratio_sf90_10gbps_min": None if None in resnet10 else min(resnet10),
            "bundled_profiles_match": float(all(s["same_as_bundled"] for s in summary.values())),
            "profiles": summary, "rows": rows, "sensitivity_resnet50_fp32_64gpus_10gbps": sens}


def _r(x, fmt="{:.1f}"):
    return "n/a" if x is None else fmt.format(x)


def evidence(ctx):
    """The protocol bench/protocols/whatif_paper.yaml: the analysis is deterministic; each repeat
    ("seed") derives the profiles and predicts every row again, and the tables come from the first."""
    p = ctx.params
    done = []
    for seed in ctx.progress(ctx.seeds, desc="whatif_paper repeats"):
        work = os.path.join(ctx.workdir, f"repeat{seed}")
        done.append(ctx.measure("whatif", seed, lambda: analyse(work, float(p["target_sf"]))))
    res = done[0]
    ctx.note("identical_repeats", all(d["rows"] == res["rows"] for d in done))
    ctx.note("cluster", {"gpus_per_host": GPUS_PER_HOST, "intra_host_bytes_s": NVLINK, "latency_s": LATENCY,
                         "fusion_bytes": FUSION, "gamma": 0.0, "kappa": 0.0})
    ctx.note("paper", PAPER)
    rows = res["rows"]

    def row(key, n, g):
        return next(r for r in rows if r["profile"] == key and r["gpus"] == n and r["gbps"] == g)

    names = {"resnet50_v1b": "ResNet-50", "resnet101_v1b": "ResNet-101", "vgg16": "VGG-16"}
    fp32 = []
    for m in MODELS:
        for n in (16, 64):
            k = f"v100_{m}_fp32"
            fp32.append([names[m], str(n), _r(row(k, n, 10)["scaling_factor"], "{:.3f}"),
                         _r(row(k, n, 10)["min_ratio_sf90"]), _r(row(k, n, 25)["scaling_factor"], "{:.3f}"),
                         _r(row(k, n, 100)["scaling_factor"], "{:.3f}")])
    cols = ["GPUs", "SF at 10 Gbit/s", "ratio for SF 0.9", "SF at 25 Gbit/s", "SF at 100 Gbit/s"]
    ctx.table("fp32", ["model"] + cols, fp32, caption="FP32, no compression, derived V100 profiles")
    bert = []
    for dt, label in (("fp32", "FP32"), ("fp16", "mixed precision")):
        for n in (16, 64):
            k = f"v100_{BERT}_{dt}"
            bert.append([label, str(n), _r(row(k, n, 10)["scaling_factor"], "{:.3f}"),
                         _r(row(k, n, 10)["min_ratio_sf90"]), _r(row(k, n, 25)["scaling_factor"], "{:.3f}"),
                         _r(row(k, n, 100)["scaling_factor"], "{:.3f}")])
    ctx.table("bert", ["BERT-base, no compression"] + cols, bert)
    mp = []
    for m in MODELS:
        k = f"v100_{m}_fp16"
        mp.append([names[m], "64"] + [_r(row(k, 64, g)["scaling_factor"], "{:.3f}") for g in GBPS]
                  + [_r(row(k, 64, 10)["min_ratio_sf90"]), row(k, 64, 10)["advice_sf90"]["name"]])
    ctx.table("fp16", ["model (mixed precision)", "GPUs"] + [f"SF at {g} Gbit/s" for g in GBPS]
              + ["ratio for SF 0.9 at 10 Gbit/s", "advise at 10 Gbit/s"], mp)
    adv = []
    for m in MODELS:
        r = row(f"v100_{m}_fp32", 64, 10)
        adv.append([names[m], _r(r["min_ratio_sf90"]), r["advice_sf90"]["name"],
                    _r(r["advice_sf90"]["scaling_factor"], "{:.3f}"), str(r["advice_sf90"]["reached"])])
    ctx.table("advise", ["model (FP32, 64 GPUs, 10 Gbit/s)", "min_ratio for SF 0.9", "advise's choice",
                         "its SF", "reached 0.9"], adv)
    ctx.table("sensitivity", ["ResNet-50 FP32, 64 GPUs, 10 Gbit/s", "SF", "ratio for SF 0.9"],
              [[s["case"], _r(s["scaling_factor"], "{:.3f}"), _r(s["min_ratio"])]
               for s in res["sensitivity_resnet50_fp32_64gpus_10gbps"]])
    ctx.table("profiles", ["profile", "forward", "backward", "gradients", "tensors", "same as bundled"],
              [[k, f"{s['forward_s'] * 1e3:.1f} ms", f"{s['backward_s'] * 1e3:.1f} ms", f"{s['grad_mb']:.1f} MB",
                str(s["tensors"]), "yes" if s["same_as_bundled"] else "no"] for k, s in res["profiles"].items()])
    plot(rows, ctx.figure(".png"))


def main(argv=None):
    """``--write-profiles``: derive the profiles and write them as the bundled ones
    (gluon_suite/whatif/profiles/v100_*.json). Anything else runs the protocol."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--write-profiles"]:
        for key, (_, rec) in derive_profiles(BUNDLED_DIR).items():
            print(f"wrote {os.path.join(BUNDLED_DIR, key + '.json')}")
        return 0
    from gluon_suite.cli import entry
    sys.argv = ["gluon-suite", "bench", "run", "whatif_paper", *argv]
    return entry()


def sensitivity(prof, target_sf):
    """How the ratio ResNet-50 needs at 64 GPUs and 10 Gbit/s moves with the assumptions: the fusion
    buffer (64 MB, Horovod's default, vs the trainer's 25 MB and 8 MB) and the per-GPU batch
    (compute x2 for batch 128)."""
    from dataclasses import replace
    out = []
    cases = [("as derived (64 MB fusion, batch 64)", prof, FUSION),
             ("25 MB fusion", prof, 25_000_000), ("8 MB fusion", prof, 8_000_000),
             ("batch 128 (compute x2)", replace(prof, forward_s=2 * prof.forward_s, backward_s=2 * prof.backward_s,
                                                ready=[2 * r for r in prof.ready]), FUSION)]
    for case, p, fusion in cases:
        cl = dict(cluster(), fusion_bytes=fusion)
        sf = predict(p, 64, 10e9 / 8, **cl)["scaling_factor"]
        lat, fus = cl.pop("latency"), cl.pop("fusion_bytes")
        out.append({"case": case, "scaling_factor": sf, "min_ratio": min_ratio(p, 64, 10e9 / 8, target_sf, lat, fus,
                                                                                 **cl)})
    return out


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 3, figsize=(13, 7), sharex=True)
    for j, model in enumerate(MODELS):
        for n in GPUS:
            pts = [r for r in rows if r["model"] == model and r["dtype"] == "float32" and r["gpus"] == n]
            axes[0][j].plot([r["gbps"] for r in pts], [r["scaling_factor"] for r in pts], "o-", label=f"{n} GPUs")
            axes[1][j].plot([r["gbps"] for r in pts], [r["min_ratio_sf90"] or float("nan") for r in pts], "o-",
                            label=f"{n} GPUs")
        axes[0][j].set_title(f"{model}, V100 FP32 batch {BATCH} (derived)")
        axes[0][j].set_ylim(0, 1.05)
        axes[0][j].axhline(0.9, color="grey", lw=0.5)
        axes[1][j].set_yscale("log")
        axes[1][j].set_xscale("log")
        axes[1][j].set_xlabel("network bandwidth per host (Gbit/s)")
    axes[0][0].set_ylabel("scaling factor, no compression")
    axes[1][0].set_ylabel("compression ratio for SF 0.9")
    axes[0][0].legend()
    fig.suptitle("What-if at full utilisation, 8 V100 per host (NVLink), best of flat ring / hierarchical allreduce")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    sys.exit(main())
