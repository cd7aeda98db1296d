#!/usr/bin/env python
"""Local AdaAlter against synchronous AdaGrad and AdaAlter on a word-level LSTM language model
trained on real English text (gensim's Lee background corpus, 300 news articles; or its head500
corpus, 500 stemmed Wikipedia articles: both read from the installed package), 2 Horovod workers
on loopback, several seeds, on the authors' reference recipe (docs/methods.md, "AdaAlter and Local
AdaAlter"). Validation perplexity of the worker-averaged model, the number of synchronisations
(model or gradient allreduces) and the training time, for H = 1, 4, 8 with both paddings of the
frozen accumulator. The protocols (bench/protocols/local_adaalter_lm.yaml on the Lee corpus,
local_adaalter_lm_head500.yaml on head500) fix the configurations, steps, seeds and criteria.

    gluon-suite bench run local_adaalter_lm [--quick] [--seeds 0]
    gluon-suite bench run local_adaalter_lm_head500

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
- seed k fixes the initial weights and a data offset of k/N of the training stream (N: the
  protocol's ``offsets``, its number of seeds), the same for every configuration, so seed k's runs
  are paired (the stream wraps around: on the Lee corpus a 600-step run reads each worker's
  columns about 6 times, from 5 distinct starting points).
Local AdaAlter's padding: "constant" divides each local step by sqrt(B_s + eps) (the released
code, the suite's default), "per-step" by sqrt(B_s + k*eps) at the k-th local step. H = 1 has no
second local step, so its two paddings are the same run (only "constant" is run).

``--worker NAME`` is the role of each Horovod process (one run of configuration NAME).
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

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
CORPUS = "lee_background"            # the protocol's corpus; the worker processes get it through the environment
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


def build(vocab=VOCAB):
    """The LSTM LM: embedding EMBED, one HIDDEN-unit LSTM layer, a dense output over ``vocab`` words."""
    from mxnet import gluon

    class LM(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.embed = gluon.nn.Embedding(vocab, EMBED)
                self.rnn = gluon.rnn.LSTM(HIDDEN, input_size=EMBED, layout="NTC")
                self.out = gluon.nn.Dense(vocab, in_units=HIDDEN, flatten=False)

        def hybrid_forward(self, F, x, h, c):
            y, (h, c) = self.rnn(self.embed(x), [h, c])
            return self.out(y), h, c
    return LM()


def step_kind(cfg, step):
    """"sync" (gradients averaged), "local" or "local+sync" (a local step that ends in averaging the
    models and accumulators) for 0-based ``step`` of configuration ``cfg``."""
    if cfg["algorithm"] != "local_adaalter" or step < WARMUP:
        return "sync"
    return "local+sync" if (step - WARMUP + 1) % cfg["period"] == 0 else "local"


def train_worker(cfg, train, valid, steps, seed, seeds, eval_every, vocab=VOCAB):
    """One Horovod process of one run of the reference recipe on the token-id streams ``train`` and
    ``valid``: returns (rank, {"curve", "step_times", "bytes"}). The curve has one record per
    evaluation (every ``eval_every`` steps and after the last; 0: none): step, training seconds so
    far, synchronisations so far, payload bytes sent so far and the worker-averaged model's
    validation perplexity; step_times the seconds of each step by kind (``step_kind``); bytes the
    communicator's counts over every collective."""
    import mxnet as mx
    import numpy as np
    from mxnet import autograd, gluon
    import gluon_suite.optim  # noqa: F401  registers 'adaalter'
    from gluon_suite.distributed import DistributedTrainer, get_communicator
    from gluon_suite.distributed.local_adaalter import LocalAdaAlter
    comm = get_communicator()
    mx.random.seed(seed)
    net = build(vocab)
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

    comm.stats.reset()
    rec, wall, kinds, syncs = [], 0.0, {}, 0
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
        dt = time.perf_counter() - t0
        wall += dt
        kind = step_kind(cfg, step)
        kinds.setdefault(kind, []).append(dt)
        syncs += kind != "local"
        if eval_every and ((step + 1) % eval_every == 0 or step + 1 == steps):
            with tr.averaged():
                ppl = perplexity()
            rec.append({"step": step + 1, "time_s": wall, "syncs": syncs, "bytes_sent": comm.stats.total_payload,
                        "valid_ppl": ppl})
    sent = comm.stats.as_dict()
    comm.barrier()
    return comm.rank, {"curve": rec, "step_times": kinds, "bytes": sent}


def worker(cfg, steps, seed, seeds, out):
    """One worker of a run on the protocol's corpus; rank 0 writes the curve to ``out``."""
    train, valid = corpus_ids()
    rank, result = train_worker(cfg, train, valid, steps, seed, seeds, EVAL_EVERY)
    if rank == 0:
        with open(out, "w") as f:
            json.dump(result["curve"], f)


def unigram_perplexity():
    """Perplexity of the validation tokens under the training tokens' unigram frequencies (the
    same vocabulary and <unk> as the model): a model that learns nothing from context reaches it."""
    import math
    train, valid = corpus_ids()
    counts = collections.Counter(train)
    return math.exp(-sum(math.log(counts[w] / len(train)) for w in valid) / len(valid))


def summary_rows(finals, syncs, times, arms):
    """The summary table's rows: per configuration (``arms``, in order) the final perplexity
    (mean ± sample std, and per seed), synchronisations, mean training seconds, and against
    synchronous AdaAlter the paired ratio of final perplexities over the seeds (geometric mean and
    95% interval, evidence.stats on the log scale) with its verdict. ``finals``, ``syncs`` and
    ``times`` map a configuration to its per-seed values, in the same seed order for all."""
    from gluon_suite.evidence import stats
    base = finals.get(BASELINE)
    rows = []
    for name in arms:
        f = stats.summary(finals[name])
        ppl = f"{f['mean']:.1f}" + (f" ± {f['std']:.1f}" if f["std"] is not None else "")
        if name == BASELINE or base is None:
            ratio, verdict = "—", "—"
        else:
            iv = stats.paired_interval(finals[name], base, scale="log")
            ratio = f"x{iv['ratio']:.3f}" + (f" [{iv['ratio_low']:.3f}, {iv['ratio_high']:.3f}]"
                                             if iv["ratio_low"] is not None else "")
            verdict = stats.verdict(iv, higher_is_better=False)
        s = sorted(set(syncs[name]))
        rows.append([name, ppl, ", ".join(f"{x:.0f}" for x in finals[name]), "/".join(map(str, s)),
                     f"{stats.summary(times[name])['mean']:.0f}", ratio, verdict])
    return rows


SUMMARY_COLUMNS = ["run", "final perplexity", "per seed", "synchronisations", "training s (mean)",
                   "ratio to sync AdaAlter [95% interval]", "vs sync AdaAlter"]


AXES = (("time_s", "training time (s, evaluation excluded)", "linear"),
        ("syncs", "synchronisations (allreduce rounds)", "log"))


def plot(curves, path, axes_keys=AXES, title=None):
    """Validation perplexity against training time and against synchronisations (``axes_keys``: the
    record key, label and scale of each x axis), geometric mean over the seeds with a band of one
    standard deviation of log perplexity."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, runs in curves.items():
        # over the seeds in log space (the validation loss): a diverging seed does not swamp the rest
        lp = np.log(np.minimum(np.array([[r["valid_ppl"] for r in c] for c in runs]), 1e30))
        pm, sd = lp.mean(0), lp.std(0)
        for ax, (key, _, _) in zip(axes, axes_keys):
            x = np.array([[r[key] for r in c] for c in runs]).mean(0)
            line, = ax.plot(x, np.exp(pm), "o-", ms=3, label=name)
            ax.fill_between(x, np.exp(pm - sd), np.exp(pm + sd), color=line.get_color(), alpha=0.2)
    for ax, (_, label, scale) in zip(axes, axes_keys):
        ax.set_xlabel(label)
        ax.set_xscale(scale)
    for ax in axes:
        ax.set_ylabel("validation perplexity (geometric mean over seeds)")
        ax.set_yscale("log")
    axes[0].legend(fontsize=8)
    fig.suptitle(title or f"LSTM LM on gensim {CORPUS}, 2 workers, reference recipe (lr {LR}, eps {EPS:g}, clip {CLIP:g})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def run_one(name, seed, steps, workers, offsets, corpus):
    """One ``workers``-process run of configuration ``name`` under horovodrun; its curve (a record
    per evaluation: step, training seconds, synchronisations, validation perplexity)."""
    hvdrun = os.path.join(os.path.dirname(sys.executable), "horovodrun")
    env = dict(os.environ, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1",
               PYTHONPATH=os.path.dirname(HERE), LOCAL_ADAALTER_CORPUS=corpus)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        p = subprocess.run([hvdrun, "-np", str(workers), "-H", f"localhost:{workers}", "--gloo",
                            sys.executable, os.path.abspath(__file__), "--worker", name,
                            "--steps", str(steps), "--seed", str(seed), "--seeds", str(offsets),
                            "--out", out],
                           env=env, capture_output=True, text=True)
        if p.returncode:
            raise RuntimeError(f"{name} seed {seed}: failed ({p.returncode})\n{(p.stdout + p.stderr)[-3000:]}")
        with open(out) as f:
            return json.load(f)


def evidence(ctx):
    """The protocols bench/protocols/local_adaalter_lm.yaml (Lee corpus) and
    local_adaalter_lm_head500.yaml: every (seed, configuration) run, seed-major so that a cut-short
    run stays paired; a summary table against synchronous AdaAlter and the curves."""
    global CORPUS
    p = ctx.params
    CORPUS = p["corpus"]
    # params.arms (the quick schedule's) runs a subset of the configurations
    arms = [a for a in ctx.arms if a in p.get("arms", ctx.arms)]
    bad = [a for a in arms if a not in CONFIGS]
    if bad:
        raise ValueError(f"unknown configuration {bad[0]!r}; the bench has {', '.join(CONFIGS)}")
    curves = {a: [] for a in arms}
    for seed, name in ctx.progress([(s, a) for s in ctx.seeds for a in arms], desc=ctx.protocol.name):
        def one():
            c = run_one(name, seed, p["steps"], p["workers"], p["offsets"], CORPUS)
            curves[name].append(c)
            return {"final_ppl": c[-1]["valid_ppl"], "syncs": c[-1]["syncs"], "time_s": c[-1]["time_s"],
                    "steps": [r["step"] for r in c], "valid_ppl": [r["valid_ppl"] for r in c],
                    "time_s_at": [r["time_s"] for r in c]}
        ctx.measure(name, seed, one)
    finals = {a: [c[-1]["valid_ppl"] for c in curves[a]] for a in arms}
    syncs = {a: [c[-1]["syncs"] for c in curves[a]] for a in arms}
    times = {a: [c[-1]["time_s"] for c in curves[a]] for a in arms}
    ctx.table("summary", SUMMARY_COLUMNS, summary_rows(finals, syncs, times, arms),
              caption=f"Validation perplexity of the worker-averaged model after {p['steps']} steps; "
                      "ratios paired by seed (same initial weights and data offset).")
    ctx.note("unigram_perplexity", unigram_perplexity())
    ctx.note("recipe", {"lr": LR, "epsilon": EPS, "clip_global_norm_lstm": CLIP, "warmup_steps": WARMUP,
                        "loss": "summed over the BPTT window, averaged over the batch",
                        "model": f"vocab {VOCAB}, embedding {EMBED}, 1x{HIDDEN} LSTM, BPTT {BPTT}, "
                                 f"batch {BATCH}/worker", "eval_every": EVAL_EVERY, "eval_tokens": EVAL_TOKENS})
    plot(curves, ctx.figure(".png"))


def worker_main(argv):
    """The ``--worker`` role: one Horovod process of one run."""
    global CORPUS
    ap = argparse.ArgumentParser(description="one worker of a local_adaalter_lm run")
    ap.add_argument("--worker", required=True, choices=list(CONFIGS))
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--seeds", type=int, required=True, help="the number of data offsets")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    CORPUS = os.environ.get("LOCAL_ADAALTER_CORPUS", CORPUS)
    return worker(CONFIGS[args.worker], args.steps, args.seed, args.seeds, args.out)


if __name__ == "__main__":
    if "--worker" in sys.argv[1:]:
        worker_main(sys.argv[1:])
    else:
        from gluon_suite.cli import entry
        sys.argv = ["gluon-suite", "bench", "run", "local_adaalter_lm", *sys.argv[1:]]
        entry()
