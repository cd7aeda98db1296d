#!/usr/bin/env python
"""Local AdaAlter at the scale of a real Wikipedia dump: synchronous AdaGrad and AdaAlter against
Local AdaAlter with H = 4, 8 and 16 on a word-level LSTM language model trained on gensim's English
Wikipedia excerpt (the MediaWiki dump the suite's reader turns into about 510,000 training tokens:
gluon_suite.nlp.wikipedia), 2 Horovod workers, 5 seeds, trained until synchronous AdaAlter has
stopped improving (the step count comes from a pilot of synchronous AdaAlter alone:
bench/pilots/local_adaalter_wiki/). The method and the reference recipe: docs/methods.md,
"AdaAlter and Local AdaAlter"; the protocol: bench/protocols/local_adaalter_wiki.yaml.

    gluon-suite bench run local_adaalter_wiki [--quick]
    python bench/local_adaalter_wiki.py --pilot STEPS --out FILE     (the pilot: sync AdaAlter, seed 0)

Two phases, both fixed by the protocol:
1. Convergence, on loopback: every (seed, configuration) run to the protocol's step count,
   validation perplexity of the worker-averaged model every ``eval_every`` steps (off the clock),
   and the bytes each worker sent, counted by the communicator over every collective (gradients
   during warm-up; models and accumulators at each Local AdaAlter synchronisation).
2. Step times on the namespace testbed (2 hosts, each link shaped to each of ``links`` Mbit/s):
   every configuration runs ``timing_steps`` steps and records the training time of each kind of
   step: a synchronous step (gradients averaged), a local step, and a local step that ends in a
   synchronisation. The time to a perplexity target on a link is then the sum over the steps a run
   needed (phase 1, interpolated between evaluations) of the measured time of each step's kind.
   The composition is exact for these schedules (every step of a kind does the same work and sends
   the same bytes), and it keeps the 100 Mbit/s arm of synchronous training, about half a second a
   step, from taking hours a seed.

The recipe is the one bench/local_adaalter_lm.py uses on the smaller corpora (summed loss, eps 1,
clipping at 10, rate 0.5 warmed up over 20 steps), with the model and vocabulary below.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import local_adaalter_lm as lal  # noqa: E402  the recipe and the summary of the smaller bench

CONFIGS = {
    "sync adagrad": lal.CONFIGS["sync adagrad"],
    "sync adaalter": lal.CONFIGS["sync adaalter"],
    "local adaalter H=4": lal.CONFIGS["local adaalter H=4"],
    "local adaalter H=8": lal.CONFIGS["local adaalter H=8"],
    "local adaalter H=16": dict(optimizer="adaalter", algorithm="local_adaalter", period=16, pad="constant"),
}
VOCAB = 8000
EMBED, HIDDEN, BPTT, BATCH = lal.EMBED, lal.HIDDEN, lal.BPTT, lal.BATCH
EVAL_TOKENS = 16000
BASELINE = "sync adaalter"


def corpus_ids():
    """Train and validation token ids of the Wikipedia excerpt: pages split by the reader with seed 0
    (5% of the pages for validation), <eos> after each sentence; the VOCAB most frequent training
    tokens (with <unk> and <eos>), the rest <unk>; the first EVAL_TOKENS validation tokens."""
    from gluon_suite.nlp.wikipedia import Vocabulary, WikipediaCorpus, gensim_wiki_dump_path
    corpus = WikipediaCorpus(gensim_wiki_dump_path(), seed=0)
    train = corpus.tokens("train")
    vocab = Vocabulary.build(train, min_freq=2, max_size=VOCAB - 2)
    assert len(vocab) == VOCAB, len(vocab)
    return vocab.to_indices(train), vocab.to_indices(corpus.tokens("valid")[:EVAL_TOKENS]), corpus.record()


step_kind = lal.step_kind


def worker(cfg, steps, seed, seeds, eval_every, out):
    """One Horovod process of one run: bench/local_adaalter_lm.py's loop (``train_worker``) on the
    Wikipedia stream. ``eval_every`` 0 skips evaluation (the testbed's timing runs)."""
    train, valid, _ = corpus_ids()
    rank, result = lal.train_worker(cfg, train, valid, steps, seed, seeds, eval_every, vocab=VOCAB)
    if rank == 0:
        with open(out, "w") as f:
            json.dump(result, f)


def worker_main(argv):
    ap = argparse.ArgumentParser(description="one worker of a local_adaalter_wiki run", allow_abbrev=False)
    ap.add_argument("--worker", required=True, choices=list(CONFIGS))
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--seeds", type=int, required=True, help="the number of data offsets")
    ap.add_argument("--eval-every", type=int, required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    return worker(CONFIGS[a.worker], a.steps, a.seed, a.seeds, a.eval_every, a.out)


def _cmd(name, steps, seed, seeds, eval_every, out):
    return [sys.executable, os.path.abspath(__file__), "--worker", name, "--steps", str(steps),
            "--seed", str(seed), "--seeds", str(seeds), "--eval-every", str(eval_every), "--out", out]


ENV = {"OMP_NUM_THREADS": "1", "MXNET_CPU_WORKER_NTHREADS": "1", "PYTHONPATH": os.path.dirname(HERE)}


def run_loopback(name, seed, steps, workers, seeds, eval_every):
    """One run of ``name`` on loopback; the rank-0 record."""
    hvdrun = os.path.join(os.path.dirname(sys.executable), "horovodrun")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        p = subprocess.run([hvdrun, "-np", str(workers), "-H", f"localhost:{workers}", "--gloo",
                            *_cmd(name, steps, seed, seeds, eval_every, out)],
                           env=dict(os.environ, **ENV), capture_output=True, text=True)
        if p.returncode:
            raise RuntimeError(f"{name} seed {seed}: failed ({p.returncode})\n{(p.stdout + p.stderr)[-3000:]}")
        with open(out) as f:
            return json.load(f)


def run_testbed(tb, name, steps, timeout_s):
    """One timing run of ``name`` on testbed ``tb`` (no evaluation); the rank-0 record."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        procs = tb.launch_horovod(_cmd(name, steps, 0, 1, 0, out), env=ENV,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        codes = tb.wait_all(procs, timeout=timeout_s)
        if any(codes) or not os.path.exists(out):
            raise RuntimeError(f"{name} on the testbed: workers exited with {codes}")
        with open(out) as f:
            return json.load(f)


def kind_times(record, skip=5):
    """Mean training seconds of each kind of step in a timing run, leaving out each kind's first
    ``skip`` steps (allocation, the first collectives' set-up), or its first half when it has fewer
    than ``2 * skip`` steps."""
    return {k: sum(v[min(skip, len(v) // 2):]) / len(v[min(skip, len(v) // 2):])
            for k, v in record["step_times"].items() if v}


def composed_time(cfg, steps, times):
    """Training seconds to reach (fractional) step ``steps`` of configuration ``cfg``: the measured
    time of each step's kind (``times``), summed over the steps, the last one in part."""
    whole = int(steps)
    total = sum(times[step_kind(cfg, s)] for s in range(whole))
    return total + (steps - whole) * times[step_kind(cfg, whole)] if steps > whole else total


def end_perplexity(ppl, last=5):
    """A run's final perplexity: the median of its last ``last`` evaluations (protocol version 2; one
    evaluation alone can sit on a spike of the training curve)."""
    tail = sorted(ppl[-last:])
    k = len(tail)
    return tail[k // 2] if k % 2 else 0.5 * (tail[k // 2 - 1] + tail[k // 2])


def run_metrics(name, curve, target, links, last=5):
    """The metrics of one run: final perplexity (``end_perplexity`` over the last ``last``
    evaluations), the last evaluation's and the best, bytes, loopback training seconds, and for
    ``target`` (synchronous AdaAlter's final perplexity on the same seed; None: this run's own) the
    step at which the run first reaches it (interpolated between evaluations) and the composed time
    to it on each link."""
    from gluon_suite.evidence import stats
    c = curve["curve"]
    steps = [r["step"] for r in c]
    ppl = [r["valid_ppl"] for r in c]
    final = end_perplexity(ppl, last)
    target = final if target is None else target
    at = stats.time_to_target(steps, ppl, target, higher_is_better=False)
    m = {"final_ppl": final, "last_ppl": ppl[-1], "best_ppl": min(ppl), "bytes_sent": curve["bytes"]["total_payload"],
         "wire_bytes": curve["bytes"]["total_wire"], "collective_calls": sum(curve["bytes"]["calls"].values()),
         "loopback_time_s": c[-1]["time_s"], "target_ppl": target, "steps_to_target": at,
         "steps": steps, "valid_ppl": ppl}
    for rate, times in links.items():
        m[f"time_to_target_{rate}mbit_s"] = None if at is None else composed_time(CONFIGS[name], at, times[name])
    return m


def combined_tables(runs, params, notes):
    """The summary and step-time tables from ``runs`` (records with arm, seed, metrics) and the notes
    of the result(s) they come from (``bench combine`` passes each slice's)."""
    from gluon_suite.evidence import stats
    arms = [a for a in CONFIGS if any(r["arm"] == a for r in runs)]
    links = params["links_mbit"]

    def values(arm, metric):
        return {r["seed"]: r["metrics"].get(metric) for r in runs if r["arm"] == arm}
    base, bb = values(BASELINE, "final_ppl"), values(BASELINE, "bytes_sent")
    rows = []
    for name in arms:
        v, b = values(name, "final_ppl"), values(name, "bytes_sent")
        seeds = sorted(v)
        f = stats.summary([v[s] for s in seeds])
        ratios = ", ".join(f"{v[s] / base[s]:.3f}" if s in base else "—" for s in seeds)
        fewer = sum(bb[s] for s in seeds if s in bb) / sum(b[s] for s in seeds if s in bb) if bb else None
        row = [name, f"{f['mean']:.2f}" + (f" ± {f['std']:.2f}" if f["std"] is not None else ""), ratios,
               f"{sum(b.values()) / len(b) / 1e9:.2f}", f"{fewer:.2f}x" if fewer else "—"]
        for rate in links:
            t = [x for x in values(name, f"time_to_target_{rate}mbit_s").values() if x is not None]
            row.append(f"{sum(t) / len(t):.0f} ({len(t)}/{len(seeds)})" if t else f"not reached (0/{len(seeds)})")
        rows.append(row)
    seeds = sorted({r["seed"] for r in runs})
    out = {"summary": {
        "columns": ["run", "final validation perplexity", "ratio to sync AdaAlter, per seed", "GB sent per worker",
                    "fewer bytes than sync AdaAlter"]
        + [f"s to sync AdaAlter's final perplexity at {r} Mbit/s (seeds reaching it)" for r in links],
        "rows": rows,
        "caption": f"{params['steps']} steps, 2 workers, seeds {seeds}; perplexity of the worker-averaged model on "
                   f"the validation pages, final = the median of the last {params.get('final_of_last', 1)} "
                   "evaluations; times composed from the testbed's measured step times"}}
    kinds = ("sync", "local", "local+sync")
    rows = []
    for i, n in enumerate(notes):
        for a in arms:
            label = a if len(notes) == 1 else f"{a} (slice {i + 1})"
            t = {r: n["step_times_s"][f"{r}mbit"].get(a, {}) for r in links}
            rows.append([label] + [f"{t[r][k] * 1e3:.0f}" if k in t[r] else "—" for r in links for k in kinds])
    out["step_times"] = {"columns": ["run"] + [f"{k} step at {r} Mbit/s (ms)" for r in links for k in kinds],
                         "rows": rows, "caption": None}
    return out


def evidence(ctx):
    """Protocol bench/protocols/local_adaalter_wiki.yaml: the step times on the testbed first (every
    configuration on each link), then every (seed, configuration) run on loopback, seed-major with
    synchronous AdaAlter first (its final perplexity is the seed's target)."""
    from gluon_suite.whatif.testbed import Testbed, stop_on_signal
    p = ctx.params
    arms = [a for a in ctx.arms if a in p.get("arms", ctx.arms)]
    if BASELINE not in arms:
        raise ValueError(f"the bench needs {BASELINE!r} (the target of every seed)")
    arms = [BASELINE] + [a for a in arms if a != BASELINE]
    links = {}
    with stop_on_signal():
        for rate in p["links_mbit"]:
            with Testbed(hosts=p["workers"], rate_mbit=rate) as tb:
                links[rate] = {a: kind_times(run_testbed(tb, a, p["timing_steps"], p.get("timing_timeout_s", 1800)))
                               for a in ctx.progress(arms, desc=f"step times at {rate} Mbit/s")}
    ctx.note("step_times_s", {f"{rate}mbit": t for rate, t in links.items()})
    curves = {a: [] for a in arms}
    for seed in ctx.seeds:
        target = None
        for name in ctx.progress(arms, desc=f"{ctx.protocol.name} seed {seed}"):
            def one():
                c = run_loopback(name, seed, p["steps"], p["workers"], p["offsets"], p["eval_every"])
                curves[name].append(c)
                return run_metrics(name, c, target, links, p.get("final_of_last", 5))
            m = ctx.measure(name, seed, one)
            target = m["target_ppl"] if target is None else target
    for name, t in combined_tables(ctx.runs, p, [ctx.notes]).items():
        ctx.table(name, t["columns"], t["rows"], caption=t.get("caption"))
    _, _, record = corpus_ids()
    ctx.note("corpus", record)
    ctx.note("recipe", {"lr": lal.LR, "epsilon": lal.EPS, "clip_global_norm_lstm": lal.CLIP, "warmup_steps": lal.WARMUP,
                        "model": f"vocab {VOCAB}, embedding {EMBED}, 1x{HIDDEN} LSTM, BPTT {BPTT}, batch {BATCH}/worker"})
    lal.plot({a: [[{"valid_ppl": r["valid_ppl"], "step": r["step"], "mb": r["bytes_sent"] / 1e6}
                   for r in c["curve"]] for c in curves[a]] for a in arms}, ctx.figure(".png"),
             axes_keys=(("step", "training step", "linear"), ("mb", "MB sent per worker (all collectives)", "log")),
             title=f"LSTM LM on the Wikipedia excerpt, 2 workers, reference recipe (lr {lal.LR}, eps {lal.EPS:g}, "
                   f"clip {lal.CLIP:g})")


def pilot(steps, eval_every, out):
    """Synchronous AdaAlter alone, seed 0, ``steps`` steps: where validation perplexity stops
    improving (the protocol's step count is read from it)."""
    t0 = time.time()
    r = run_loopback(BASELINE, 0, steps, 2, 5, eval_every)
    _, _, record = corpus_ids()
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"configuration": BASELINE, "seed": 0, "steps": steps, "eval_every": eval_every,
                   "corpus": record, "model": {"vocab": VOCAB, "embed": EMBED, "hidden": HIDDEN,
                                               "bptt": BPTT, "batch_per_worker": BATCH},
                   "wall_s": time.time() - t0, **r}, f, indent=1)
    os.replace(tmp, out)
    for c in r["curve"]:
        print(f"step {c['step']:6d}  {c['time_s']:8.1f} s  ppl {c['valid_ppl']:.2f}")


if __name__ == "__main__":
    if "--worker" in sys.argv[1:]:
        worker_main(sys.argv[1:])
    elif "--pilot" in sys.argv[1:]:
        ap = argparse.ArgumentParser(allow_abbrev=False)
        ap.add_argument("--pilot", type=int, required=True, help="steps")
        ap.add_argument("--eval-every", type=int, default=200)
        ap.add_argument("--out", required=True)
        a = ap.parse_args()
        pilot(a.pilot, a.eval_every, a.out)
    else:
        from gluon_suite.cli import entry
        sys.argv = ["gluon-suite", "bench", "run", "local_adaalter_wiki", *sys.argv[1:]]
        entry()
