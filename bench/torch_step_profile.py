#!/usr/bin/env python
"""Measure what-if step profiles on a GPU where MXNet cannot run, with PyTorch's implementations of
the same architectures (torchvision's ResNet-50/101 v1.5 and VGG-16; a BERT-base masked-LM and
next-sentence model from transformers, built from its default configuration, no download).

MXNet 1.9.1's CUDA build needs Python 3.11, a 509 MB wheel and the CUDA 11 libraries; a machine
that has none of them but has PyTorch can still measure what the what-if model needs from a
step: forward, backward and optimizer time, and when each gradient is ready during backward.
The architectures are the same as GluonCV's ``resnet50_v1b``, ``resnet101_v1b``, ``vgg16`` and
GluonNLP's ``bert_12_768_12`` (the same tensors: 161, 314, 32; BERT's differ in a few biases and
the pooler), so their gradient bytes and backward order stand in for ours. The kernels are not
MXNet's: the times are PyTorch's on that GPU, and the profiles say so.

Each gradient's ready time is a CUDA event recorded by a post-accumulate-grad hook on the
device's stream, so it marks the moment the GPU has finished that gradient, measured from an
event recorded just before backward. ``--dtype float16`` casts the network to float16 except
BatchNorm and LayerNorm (float32 parameters, as Gluon's ``cast``) and keeps float32 master
weights that the optimizer updates (multi-precision, as the suite's trainer).

Writes one JSON file of raw measurements (``--out``); ``bench/gpu_profiles.py`` turns it into
what-if profile files on a machine with the suite installed.

    python3 bench/torch_step_profile.py --out raw.json [--steps 20] [--models resnet50_v1b,...]
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

MODELS = {
    # our name: (kind, builder, batch, image size or sequence length)
    "resnet50_v1b": ("cnn", "resnet50", 64, 224),
    "resnet101_v1b": ("cnn", "resnet101", 64, 224),
    "vgg16": ("cnn", "vgg16", 64, 224),
    "bert_12_768_12": ("bert", None, 32, 128),
}


def build(name, torch):
    kind, arch, batch, size = MODELS[name]
    if kind == "cnn":
        import torchvision
        net = getattr(torchvision.models, arch)(weights=None)
        x = torch.randn(batch, 3, size, size)
        y = torch.randint(0, 1000, (batch,))
        loss_fn = torch.nn.CrossEntropyLoss()

        def loss(model, dtype):
            out = model(x_dev.to(dtype=dtype, memory_format=torch.channels_last))
            return loss_fn(out.float(), y_dev)
        x_dev, y_dev = x.cuda(), y.cuda()
        return net, loss, batch, size
    from transformers import BertConfig, BertForPreTraining
    cfg = BertConfig()            # BERT-base: 12 layers, 768 hidden, 12 heads, 30522 word pieces
    net = BertForPreTraining(cfg)
    ids = torch.randint(0, cfg.vocab_size, (batch, size)).cuda()
    labels = ids.clone()
    labels[torch.rand(batch, size, device=ids.device) > 0.15] = -100
    nsp = torch.randint(0, 2, (batch,)).cuda()
    types = torch.zeros_like(ids)

    def loss(model, dtype):
        return model(input_ids=ids, token_type_ids=types, labels=labels, next_sentence_label=nsp).loss.float()
    return net, loss, batch, size


def measure(name, dtype_name, steps, torch):
    net, loss, batch, size = build(name, torch)
    dtype = torch.float16 if dtype_name == "float16" else torch.float32
    net = net.cuda()
    if MODELS[name][0] == "cnn":
        net = net.to(memory_format=torch.channels_last)
    if dtype == torch.float16:
        net = net.half()
        for m in net.modules():   # BatchNorm keeps float32 parameters (as Gluon's cast)
            if isinstance(m, torch.nn.BatchNorm2d):
                m.float()
    params = [p for p in net.parameters() if p.requires_grad]
    masters = [p.detach().float().clone() for p in params] if dtype == torch.float16 else params
    if MODELS[name][0] == "cnn":
        opt = torch.optim.SGD(masters, lr=1e-3, momentum=0.9, weight_decay=1e-4, foreach=True)
        opt_name = "SGD momentum 0.9 (foreach)"
    else:
        opt = torch.optim.AdamW(masters, lr=1e-5, foreach=True)
        opt_name = "AdamW (foreach)"
    events, seen = {}, set()

    def hook(q):
        events[id(q)].record()
        seen.add(id(q))
    for p in params:
        p.register_post_accumulate_grad_hook(hook)

    def step(timed):
        for p in params:
            events[id(p)] = torch.cuda.Event(enable_timing=True)
        e = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        e[0].record()
        out = loss(net, dtype)
        e[1].record()
        out.backward()
        e[2].record()
        if dtype == torch.float16:
            for m, p in zip(masters, params):
                m.grad = p.grad.float()
        opt.step()
        if dtype == torch.float16:
            with torch.no_grad():
                for m, p in zip(masters, params):
                    p.copy_(m)
        for p in params:
            p.grad = None
        e[3].record()
        torch.cuda.synchronize()
        if not timed:
            seen.clear()
            return None
        bwd = e[1].elapsed_time(e[2]) / 1e3
        ready = [e[1].elapsed_time(events[id(p)]) / 1e3 if id(p) in seen else bwd for p in params]
        seen.clear()
        return (e[0].elapsed_time(e[1]) / 1e3, e[1].elapsed_time(e[2]) / 1e3, e[2].elapsed_time(e[3]) / 1e3, ready)

    for _ in range(5):
        step(False)
    t = time.perf_counter()
    runs = [step(True) for _ in range(steps)]
    wall = (time.perf_counter() - t) / steps
    med = statistics.median
    fwd, bwd, optim = (med(r[i] for r in runs) for i in range(3))
    ready = [med(r[3][k] for r in runs) for k in range(len(params))]
    sizes = [p.numel() * p.element_size() for p in params]
    numel = int(sum(p.numel() for p in params))
    order = sorted(range(len(params)), key=lambda k: ready[k])      # the order backward produced them
    return {"model": name, "dtype": dtype_name, "batch_size": batch,
            ("image_size" if MODELS[name][0] == "cnn" else "seq_len"): size,
            "forward_s": fwd, "backward_s": bwd, "optimizer_s": optim, "wall_step_s": wall, "steps": steps,
            "optimizer": opt_name, "parameters": numel,
            "tensors": [{"bytes": float(sizes[k]), "ready_s": max(ready[k], 0.0)} for k in order],
            "spread": {"forward_s": [min(r[0] for r in runs), max(r[0] for r in runs)],
                       "backward_s": [min(r[1] for r in runs), max(r[1] for r in runs)]}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--dtypes", default="float32,float16")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        raise SystemExit("error: PyTorch is not installed; this bench measures with PyTorch on a GPU")
    if not torch.cuda.is_available():
        raise SystemExit("error: no CUDA device visible to PyTorch; run bench/torch_step_profile.py on a GPU machine")
    torch.backends.cudnn.benchmark = True
    unknown = [m for m in args.models.split(",") if m not in MODELS]
    if unknown:
        raise SystemExit(f"error: unknown model(s) {unknown}; choose from {', '.join(MODELS)}")
    import torchvision
    try:
        import transformers
        tv = transformers.__version__
    except ImportError:
        tv = None
    out = {"device": {"name": torch.cuda.get_device_name(0), "context": "gpu(0)"},
           "versions": {"torch": torch.__version__, "cuda": torch.version.cuda,
                        "cudnn": torch.backends.cudnn.version(), "torchvision": torchvision.__version__,
                        "transformers": tv, "python": platform.python_version()},
           "profiles": []}
    for name in args.models.split(","):
        for dt in args.dtypes.split(","):
            torch.manual_seed(0)
            rec = measure(name, dt, args.steps, torch)
            torch.cuda.empty_cache()
            out["profiles"].append(rec)
            print(f"{name:16s} {dt:8s} fwd {1e3 * rec['forward_s']:7.2f} ms  bwd {1e3 * rec['backward_s']:7.2f} ms  "
                  f"opt {1e3 * rec['optimizer_s']:6.2f} ms  wall {1e3 * rec['wall_step_s']:7.2f} ms  "
                  f"{len(rec['tensors'])} tensors {sum(t['bytes'] for t in rec['tensors']) / 1e6:.1f} MB",
                  flush=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, args.out)


if __name__ == "__main__":
    sys.exit(main())
