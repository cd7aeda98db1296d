#!/usr/bin/env python
"""Local AdaAlter against synchronous AdaGrad and AdaAlter on a word-level LSTM language model
trained on real English text (gensim's Lee background corpus by default, 300 news articles; or
its head500 corpus, 500 stemmed Wikipedia articles: both read from the installed package), 2
Horovod workers on loopback, several seeds, on the authors' reference
recipe (docs/methods.md, "AdaAlter and Local AdaAlter"). Validation perplexity of the
worker-averaged model against wall time and against the number of synchronisations (model or
gradient allreduces), for H = 1, 4, 8 with both paddings of the frozen accumulator. JSON and plots
(geometric mean over the seeds, band = one standard deviation of log perplexity) in
bench/results/local_adaalter_lm.json / .png.

    .venv/bin/python bench/local_adaalter_lm.py [--seeds 5] [--steps 600] [--workers 2]
        [--corpus lee_background|head500] [--cache bench/results/local_adaalter_lm_runs.jsonl]

The recipe, fixed before any run and the same for every configuration (nothing is chosen on a
seed):
- the loss is summed over the BPTT window and averaged over the batch, as in the reference script;
- epsilon = 1 for AdaAlter, Local AdaAlter and AdaGrad, the reference's "initial history
  accumulation" (inside the root for all three: MXNet 1.9.1's AdaGrad divides by
  sqrt(history + eps));
- the LSTM's gradients are clipped to global norm 10 on each worker before the step;
- learning rate 0.5 for every optimizer, warmed up linearly over the first 20 steps
  (lr * n / 20 at the n-th step), during which Local AdaAlter runs synchronously; the
  synchronisation count includes those steps;
- seed k fixes the initial weights and a data offset of k/N of the training stream, the same for
  every configuration, so seed k's runs are paired (the stream wraps around: on the Lee corpus a
  600-step run reads each worker's columns about 7 times, from 5 distinct starting points).
Local AdaAlter's padding: "constant" divides each local step by sqrt(B_s + eps) (the released
code, the suite's default), "per-step" by sqrt(B_s + k*eps) at the k-th local step. H = 1 has no
second local step, so its two paddings are the same run (only "constant" is run).
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from runcache import RunCache  # noqa: E402

CONFIGS = {
    "sync adagrad": dict(optimizer="adagrad", algorithm="sync"),
    "sync adaalter": dict(optimizer="adaalter", algorithm="sync"),
    "local adaalter H=1": dict(optimizer="adaalter", algorithm="local_adaalter", period=1, pad="constant"),
    "local adaalter H=4": dict(optimizer="adaalter", algorithm="local_adaalter", period=4, pad="constant"),
    "local adaalter H=8": dict(optimizer="adaalter", algorithm="local_adaalter", period=8, pad="constant"),
    "local adaalter H=4 per-step": dict(optimizer="adaalter", algorithm="local_adaalter", period=4, pad="per_step"),
    "local adaalter H=8 per-step": dict(optimizer="adaalter", algorithm="local_adaalter", period=8, pad="per_step"),
}
VOCAB, EMBED, HIDDEN, BPTT, BATCH = 4000, 64, 128, 20, 16
WARMUP, EVAL_EVERY, EVAL_TOKENS = 20, 100, 20000
LR, EPS, CLIP = 0.5, 1.0, 10.0      # the reference recipe (module docstring), the same for every config
CORPUS = "lee_background"            # --corpus; the worker processes get it through the environment
BASELINE = "sync adaalter"


def corpus_ids():
    """Token ids of gensim corpus ``CORPUS``: lee_background (300 news articles, about 60,000
    tokens) or head500 (500 Wikipedia articles, stemmed, about 330,000 tokens). Lower-cased words
    and punctuation marks as tokens, <eos> after each article; the VOCAB - 1 most frequent words
    seen at least twice, the rest <unk>; every 10th run of 1,000 tokens is held out for
    validation."""
    import re
    from gluon_suite.nlp.corpora import gensim_corpus_path
    with open(gensim_corpus_path(CORPUS), encoding="utf-8") as f:
        docs = [re.findall(r"[a-z0-9']+|[.,!?;:()\"-]", line.lower()) + ["<eos>"]
                for line in f.read().splitlines() if line.strip()]
    chunks, stream = [], [w for d in docs for w in d]
    chunks = [stream[i:i + 1000] for i in range(0, len(stream), 1000)]
    train = [w for k, ch in enumerate(chunks) if k % 10 != 9 for w in ch]
    valid = [w for k, ch in enumerate(chunks) if k % 10 == 9 for w in ch][:EVAL_TOKENS]
    counts = collections.Counter(train)
    itos = ["<unk>"] + [w for w, n in counts.most_common(VOCAB - 1) if n >= 2]
    stoi = {w: i for i, w in enumerate(itos)}
    return [stoi.get(w, 0) for w in train], [stoi.get(w, 0) for w in valid]


def warmup_lr(lr, step):
    """The reference's learning-rate warm-up: lr * n / WARMUP at the n-th step (n = step + 1, so
    the first step takes lr / WARMUP) up to n = WARMUP, lr after."""
    return lr * min(1.0, (step + 1) / WARMUP)


def build():
    from mxnet import gluon

    class LM(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.embed = gluon.nn.Embedding(VOCAB, EMBED)
                self.rnn = gluon.rnn.LSTM(HIDDEN, input_size=EMBED, layout="NTC")
                self.out = gluon.nn.Dense(VOCAB, in_units=HIDDEN, flatten=False)

        def hybrid_forward(self, F, x, h, c):
            y, (h, c) = self.rnn(self.embed(x), [h, c])
            return self.out(y), h, c
    return LM()


def worker(cfg, steps, seed, seeds, out):
    import mxnet as mx
    import numpy as np
    from mxnet import autograd, gluon
    import gluon_suite.optim  # noqa: F401  registers 'adaalter'
    from gluon_suite.distributed import DistributedTrainer, get_communicator
    from gluon_suite.distributed.local_adaalter import LocalAdaAlter
    comm = get_communicator()
    mx.random.seed(seed)
    train, valid = corpus_ids()
    net = build()
    net.initialize(mx.init.Uniform(0.1))
    net.hybridize(static_alloc=True)
    if cfg["algorithm"] == "local_adaalter":
        algo = LocalAdaAlter(cfg["period"], warmup_steps=WARMUP, pad=cfg["pad"])
    else:
        algo = cfg["algorithm"]
    # epsilon sits inside the root in both optimizers (MXNet's AdaGrad names it 'eps')
    opt = {"learning_rate": LR, ("epsilon" if cfg["optimizer"] == "adaalter" else "eps"): EPS}
    tr = DistributedTrainer(net.collect_params(), cfg["optimizer"], opt, algorithm=algo, communicator=comm)
    lstm_params = list(net.rnn.collect_params().values())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    # GluonNLP's batchify: the stream as BATCH * size columns; this worker reads its own columns
    cols = BATCH * comm.size
    n = len(train) // cols
    data = np.array(train[:n * cols], dtype=np.float32).reshape(cols, n)[comm.rank::comm.size]
    vcols = 10
    vn = len(valid) // vcols
    vdata = mx.nd.array(np.array(valid[:vn * vcols], dtype=np.float32).reshape(vcols, vn))
    span = n - BPTT - 1
    offset = (seed % seeds) * span // seeds     # seed k starts k/N of the way into the stream

    def zeros(b):
        return mx.nd.zeros((1, b, HIDDEN)), mx.nd.zeros((1, b, HIDDEN))

    def perplexity():
        h, c = zeros(vcols)
        tot, cnt = 0.0, 0
        for s in range(0, vn - 1, 64):
            e = min(s + 64, vn - 1)
            y, h, c = net(vdata[:, s:e], h, c)
            tot += float(loss_fn(y, vdata[:, s + 1:e + 1]).sum().asscalar()) * (e - s)
            cnt += vcols * (e - s)
        return float(np.exp(tot / cnt))

    syncs = 0
    rec, wall = [], 0.0
    h, c = zeros(BATCH)
    for step in range(steps):
        mx.nd.waitall()
        t0 = time.perf_counter()
        if step <= WARMUP:
            tr.set_learning_rate(warmup_lr(LR, step))
        s = (offset + step * BPTT) % span
        x = mx.nd.array(data[:, s:s + BPTT])
        y = mx.nd.array(data[:, s + 1:s + BPTT + 1])
        h, c = h.detach(), c.detach()
        with autograd.record():
            logits, h, c = net(x, h, c)
            # the reference's loss: summed over the window (the loss block averages over it),
            # averaged over the batch
            loss = loss_fn(logits, y) * (BPTT / BATCH)
        loss.backward()
        gluon.utils.clip_global_norm([p.grad() for p in lstm_params], CLIP)
        tr.step(1)
        mx.nd.waitall()
        wall += time.perf_counter() - t0
        if cfg["algorithm"] != "local_adaalter" or step < WARMUP:
            syncs += 1
        elif (step - WARMUP + 1) % cfg["period"] == 0:
            syncs += 1
        if (step + 1) % EVAL_EVERY == 0 or step + 1 == steps:
            with tr.averaged():
                ppl = perplexity()
            rec.append({"step": step + 1, "time_s": wall, "syncs": syncs, "valid_ppl": ppl})
    comm.barrier()
    if comm.rank == 0:
        with open(out, "w") as f:
            json.dump(rec, f)


def _ms(values):
    import numpy as np
    return {"mean": float(np.mean(values)), "std": float(np.std(values, ddof=1)) if len(values) > 1 else 0.0}


def summarise(curves):
    """Per config: final perplexity (mean, sample std), synchronisations, time; against
    synchronous AdaAlter: ratios (of the means, and per seed with their median) and a verdict
    ('within noise' when the difference of the means is at most the larger std), and whether the
    target (at most 2% above) holds."""
    rows = {}
    for name, runs in curves.items():
        final = [c[-1]["valid_ppl"] for c in runs]
        rows[name] = {"final_ppl": _ms(final), "final_ppl_seeds": final,
                      "syncs": runs[0][-1]["syncs"], "time_s": _ms([c[-1]["time_s"] for c in runs])}
    base = rows.get(BASELINE)
    for name, r in rows.items():
        if base and name != BASELINE:
            diff = r["final_ppl"]["mean"] - base["final_ppl"]["mean"]
            spread = max(r["final_ppl"]["std"], base["final_ppl"]["std"])
            ratio = r["final_ppl"]["mean"] / base["final_ppl"]["mean"]
            paired = [a / b for a, b in zip(r["final_ppl_seeds"], base["final_ppl_seeds"])]
            r["vs_sync_adaalter"] = {
                "ppl_ratio": ratio, "within_2_percent": ratio <= 1.02,
                # seed k of every config shares the model and the data order: ratios per seed
                "paired_ratios": paired, "paired_ratio_median": float(statistics.median(paired)),
                "sync_ratio": base["syncs"] / r["syncs"],
                "time_ratio": r["time_s"]["mean"] / base["time_s"]["mean"],
                "verdict": "within noise" if abs(diff) <= spread else
                           ("worse" if diff > 0 else "better") + " than sync beyond the spread"}
    return rows


def plot(curves, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, runs in curves.items():
        # over the seeds in log space (the validation loss): a diverging seed does not swamp the rest
        lp = np.log(np.minimum(np.array([[r["valid_ppl"] for r in c] for c in runs]), 1e30))
        pm, sd = lp.mean(0), lp.std(0)
        for ax, key in zip(axes, ("time_s", "syncs")):
            x = np.array([[r[key] for r in c] for c in runs]).mean(0)
            line, = ax.plot(x, np.exp(pm), "o-", ms=3, label=name)
            ax.fill_between(x, np.exp(pm - sd), np.exp(pm + sd), color=line.get_color(), alpha=0.2)
    axes[0].set_xlabel("training time (s, evaluation excluded)")
    axes[1].set_xlabel("synchronisations (allreduce rounds)")
    axes[1].set_xscale("log")
    for ax in axes:
        ax.set_ylabel("validation perplexity (geometric mean over seeds)")
        ax.set_yscale("log")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"LSTM LM on gensim {CORPUS}, 2 workers, reference recipe (lr {LR}, eps {EPS:g}, clip {CLIP:g})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def run_one(args, name, seed):
    """One 2-worker (``--workers``) run under horovodrun; its curve (SystemExit when it failed)."""
    hvdrun = os.path.join(os.path.dirname(sys.executable), "horovodrun")
    env = dict(os.environ, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1",
               PYTHONPATH=os.path.dirname(HERE), LOCAL_ADAALTER_CORPUS=CORPUS)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        p = subprocess.run([hvdrun, "-np", str(args.workers), "-H", f"localhost:{args.workers}", "--gloo",
                            sys.executable, os.path.abspath(__file__), "--worker", name,
                            "--steps", str(args.steps), "--seed", str(seed), "--seeds", str(args.seeds),
                            "--out", out],
                           env=env, capture_output=True, text=True)
        if p.returncode:
            raise SystemExit(f"{name} seed {seed}: failed ({p.returncode})\n{(p.stdout + p.stderr)[-3000:]}")
        with open(out) as f:
            return json.load(f)


def main(argv=None):
    global CORPUS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--corpus", choices=("lee_background", "head500"), default="lee_background")
    ap.add_argument("--only", help="comma-separated config names (default: all)")
    ap.add_argument("--cache", default="", help="JSON-lines file of finished runs: read, reused and appended to")
    ap.add_argument("--out", default=os.path.join(HERE, "results"), help="folder for the JSON and the plot")
    ap.add_argument("--from-cache", action="store_true",
                    help="run nothing: report the configs whose every seed is in --cache, list the rest")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    CORPUS = os.environ.get("LOCAL_ADAALTER_CORPUS", args.corpus) if args.worker else args.corpus
    if args.worker:
        return worker(CONFIGS[args.worker], args.steps, args.seed, args.seeds, args.out)
    from gluon_suite.utils import progress, write_json
    names = args.only.split(",") if args.only else list(CONFIGS)
    bad = [n for n in names if n not in CONFIGS]
    if bad:
        sys.exit(f"unknown config {bad[0]!r}; choose from: {', '.join(CONFIGS)}")
    if BASELINE not in names:
        names.insert(0, BASELINE)     # every comparison is against synchronous AdaAlter
    cache = RunCache(args.cache)
    runs, curves = [], {}

    def run(name, seed):
        key = {"config": name, "seed": seed, "seeds": args.seeds, "steps": args.steps, "workers": args.workers,
               "recipe": {"lr": LR, "eps": EPS, "clip": CLIP, "loss": "sum over window, mean over batch",
                          "warmup": WARMUP, "corpus": CORPUS}}
        if args.from_cache and json.dumps(key) not in cache.runs:
            return None
        c = cache.get(key, lambda: run_one(args, name, seed))
        runs.append({"config": name, "seed": seed, "final_ppl": c[-1]["valid_ppl"], "syncs": c[-1]["syncs"],
                     "time_s": c[-1]["time_s"]})
        print(f"seed {seed} {name:<28} ppl {c[-1]['valid_ppl']:8.1f}  syncs {c[-1]['syncs']:4d}  "
              f"{c[-1]['time_s']:.1f} s", flush=True)
        return c

    for seed in progress(range(args.seeds), desc="seeds"):   # seed-major: partial results stay paired
        for name in names:
            curves.setdefault(name, []).append(run(name, seed))
    missing = [n for n, c in curves.items() if any(x is None for x in c)]
    for n in missing:
        print(f"not in the cache for every seed, left out: {n}")
        del curves[n]
    if BASELINE not in curves:
        sys.exit(f"{BASELINE} is not in the cache for every seed; run without --from-cache")
    runs[:] = [r for r in runs if r["config"] in curves]
    rows = summarise(curves)
    os.makedirs(args.out, exist_ok=True)
    result = {"benchmark": "local_adaalter_lm", "date": time.strftime("%Y-%m-%d"), "workers": args.workers,
              "seeds": args.seeds, "steps": args.steps, "warmup_steps": WARMUP,
              "recipe": {"lr": LR, "epsilon": EPS, "clip_global_norm_lstm": CLIP,
                         "loss": "summed over the BPTT window, averaged over the batch",
                         "lr_warmup": f"linear over the first {WARMUP} steps (every config); Local AdaAlter "
                                      "synchronous during them",
                         "data_offset": "seed k starts k/seeds of the way into the training stream"},
              "model": f"LSTM LM: vocab {VOCAB}, embedding {EMBED}, 1x{HIDDEN} LSTM; BPTT {BPTT}, batch "
                       f"{BATCH}/worker; gensim {CORPUS} (every 10th 1,000-token run held out, "
                       f"{EVAL_TOKENS} validation tokens)",
              "rule": "settings fixed before any run (the authors' recipe), the same for every config; "
                      "nothing chosen on a seed",
              "not_run": missing, "results": rows, "runs": runs, "curves": curves}
    stem = "local_adaalter_lm" + ("" if CORPUS == "lee_background" else "_" + CORPUS)
    write_json(os.path.join(args.out, stem + ".json"), result)
    plot(curves, os.path.join(args.out, stem + ".png"))
    print(f"{'config':<28}{'final ppl':>18}{'syncs':>7}{'time':>16}  vs sync adaalter")
    for name, r in rows.items():
        v = r.get("vs_sync_adaalter")
        cmp = (f"ppl x{v['ppl_ratio']:.3f} (per seed: median x{v['paired_ratio_median']:.3f}), "
               f"{v['sync_ratio']:.1f}x fewer syncs, time x{v['time_ratio']:.2f}, {v['verdict']}") if v else ""
        print(f"{name:<28}{r['final_ppl']['mean']:>10.1f} ± {r['final_ppl']['std']:<5.1f}"
              f"{r['syncs']:>7}{r['time_s']['mean']:>9.1f} ± {r['time_s']['std']:<4.1f}  {cmp}")
    print(f"results: {os.path.join(args.out, stem + '.json')}")
    return result


if __name__ == "__main__":
    main()
