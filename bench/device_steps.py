#!/usr/bin/env python
"""Training-step throughput on one device: ResNeSt-50 (GluonCV, 224x224 images) and BERT-base
(GluonNLP, masked LM at sequence length 128), each through ``DistributedTrainer`` (sync) on one
context, float32 and, on a GPU, float16 with multi-precision master weights. Writes
bench/results/device_steps.json (or --out) and prints a table of images/s, tokens/s and median
step times. ``bench/device_check.sh`` runs it on a GPU machine; ``--ctx cpu`` with small sizes is
the smoke test that runs anywhere.

    .venv/bin/python bench/device_steps.py --ctx gpu:0 [--steps 20]
    .venv/bin/python bench/device_steps.py --ctx cpu --steps 2 --image-batch 1 --image-size 224 \\
        --token-batch 2 --seq-len 32 --out /tmp/device_steps.json
"""
import argparse
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def context_of(text):
    """'cpu' or 'gpu:N' -> an MXNet context."""
    import mxnet as mx
    if text == "cpu":
        return mx.cpu()
    if text.startswith("gpu:") and text[4:].isdigit():
        return mx.gpu(int(text[4:]))
    raise SystemExit(f"error: --ctx takes cpu or gpu:N, got {text!r}")


def timed_steps(step, steps):
    """Run ``step()`` once to warm up, then ``steps`` times; median and all step times in s."""
    import mxnet as mx
    step()
    mx.nd.waitall()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        mx.nd.waitall()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2], times


def resnest50(ctx, dtype, batch, size, steps):
    """Median step time of ResNeSt-50 on ``batch`` images of ``size`` pixels."""
    import mxnet as mx
    from mxnet import autograd, gluon
    from gluoncv.model_zoo import get_model
    from gluon_suite.distributed import DistributedTrainer, LocalCommunicator
    net = get_model("resnest50", pretrained=False, input_size=size)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    net.cast(dtype)
    net.hybridize(static_alloc=True, static_shape=True)
    trainer = DistributedTrainer(net.collect_params(), "sgd",
                                 {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-4,
                                  "multi_precision": dtype == "float16"},
                                 communicator=LocalCommunicator())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    x = mx.nd.random.uniform(shape=(batch, 3, size, size), ctx=ctx).astype(dtype)
    y = mx.nd.array(list(range(batch)), ctx=ctx) % 1000

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(batch)
    return timed_steps(step, steps)


def bert_base(ctx, dtype, batch, seq_len, steps):
    """Median step time of BERT-base's masked-LM forward/backward at ``seq_len``."""
    import mxnet as mx
    from mxnet import autograd, gluon
    from gluon_suite.distributed import DistributedTrainer, LocalCommunicator
    from gluon_suite.distributed.loss_scale import DynamicLossScaler
    from gluon_suite.model_zoo import get_model
    vocab = 30522
    net = get_model("bert_12_768_12", vocab_size=vocab, max_length=max(seq_len, 128), dropout=0.1)
    net.initialize(mx.init.Normal(0.02), ctx=ctx)
    net.cast(dtype)
    trainer = DistributedTrainer(net.collect_params(), "lans",
                                 {"learning_rate": 1e-4, "wd": 0.01, "multi_precision": dtype == "float16"},
                                 communicator=LocalCommunicator())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    ids = mx.nd.random.randint(5, vocab, shape=(batch, seq_len), ctx=ctx).astype("int32")
    types = mx.nd.zeros((batch, seq_len), ctx=ctx, dtype="int32")
    vlen = mx.nd.full((batch,), seq_len, ctx=ctx, dtype=dtype)
    npred = max(1, seq_len * 15 // 100)
    pos = mx.nd.array([list(range(npred))] * batch, ctx=ctx, dtype="int32")
    target = mx.nd.random.randint(5, vocab, shape=(batch, npred), ctx=ctx).astype("float32")
    nsp = mx.nd.zeros((batch,), ctx=ctx, dtype="float32")

    scaler = DynamicLossScaler() if dtype == "float16" else None   # as the pretraining recipe

    def step():
        with autograd.record():
            _, _, nsp_score, mlm_score = net(ids, types, vlen, pos)   # as in pretraining: MLM + NSP
            loss = loss_fn(mlm_score.astype("float32").reshape((-1, vocab)), target.reshape((-1,))).mean() + \
                loss_fn(nsp_score.astype("float32"), nsp).mean()
            if scaler:
                loss = loss * scaler.scale
        loss.backward()
        if scaler:
            scaler.step(trainer, batch)
        else:
            trainer.step(batch)
    return timed_steps(step, steps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    ap.add_argument("--ctx", default="gpu:0")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--image-batch", type=int, default=32)
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--token-batch", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "device_steps.json"))
    args = ap.parse_args()
    from gluon_suite.utils.quiet import quiet_native_warnings
    quiet_native_warnings()
    import mxnet as mx
    from gluon_suite.utils import write_json
    from gluon_suite.utils.devices import device_facts
    ctx = context_of(args.ctx)
    dtypes = ["float32", "float16"] if ctx.device_type == "gpu" else ["float32"]
    rows = []
    for dtype in dtypes:
        med, times = resnest50(ctx, dtype, args.image_batch, args.image_size, args.steps)
        rows.append({"model": "resnest50", "dtype": dtype, "batch": args.image_batch,
                     "image_size": args.image_size, "median_step_s": med, "step_s": times,
                     "images_per_s": args.image_batch / med})
        med, times = bert_base(ctx, dtype, args.token_batch, args.seq_len, args.steps)
        rows.append({"model": "bert_12_768_12", "dtype": dtype, "batch": args.token_batch,
                     "seq_len": args.seq_len, "median_step_s": med, "step_s": times,
                     "tokens_per_s": args.token_batch * args.seq_len / med})
    print(f"{'model':<16} {'dtype':<8} {'median step':>12} {'throughput':>18}")
    for r in rows:
        rate = (f"{r['images_per_s']:.1f} img/s" if "images_per_s" in r else f"{r['tokens_per_s']:.0f} tok/s")
        print(f"{r['model']:<16} {r['dtype']:<8} {r['median_step_s'] * 1e3:>10.1f}ms {rate:>18}")
    write_json(args.out, {"benchmark": "device_steps", "date": time.strftime("%Y-%m-%d"),
                          "context": str(ctx), "machine": platform.machine(), "steps": args.steps,
                          "mxnet": mx.__version__, "devices": device_facts(), "results": rows})
    print(f"results: {args.out}")


if __name__ == "__main__":
    main()
