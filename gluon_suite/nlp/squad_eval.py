"""SQuAD prediction and metrics: the n best answer spans of each question over its windows, the
null answer of SQuAD 2.0 and its threshold, the prediction files, and the official SQuAD v1.1 and
v2.0 metrics (exact match and token F1 after SQuAD's normalisation).

Span scores are start logit + end logit (BERT's and GluonNLP's rule): a span starts and ends in
one window's context, start <= end, at most ``max_answer_len`` tokens. The null score of a question
is the smallest [CLS] score ``start[0] + end[0]`` over its windows; with SQuAD 2.0 the prediction is
"" when ``null score - best span score > null_score_diff_threshold``, and that difference is the
question's entry in ``null_odds.json``."""
import collections
import functools
import json
import os
import re
import string

import numpy as np

from ..utils.fileio import atomic_write

NO_SPAN_ODDS = 1e30   # null odds of a question whose windows hold no context token: no span to give


@functools.lru_cache(maxsize=64)
def _pairs(n, max_answer_len):
    """Start and end indices ``(i, j)`` of every span of ``n`` tokens, i <= j < i + max_answer_len,
    in row-major order (by start, then end)."""
    i, j = np.triu_indices(n)
    keep = j - i < max_answer_len
    return i[keep], j[keep]


def _window_spans(start_logits, end_logits, m, max_answer_len):
    """``(scores, i, j, start logits, end logits)`` of every span of window ``m`` (context token
    indices ``i``, ``j`` within the window), in row-major order."""
    off, n = m["offset"], len(m["tok_word"])
    s = np.asarray(start_logits, np.float64)[off:off + n]
    e = np.asarray(end_logits, np.float64)[off:off + n]
    i, j = _pairs(n, max_answer_len)
    return s[i] + e[j], i, j, s[i], e[j]


def _span_text(m, i, j):
    w0, w1 = m["tok_word"][i], m["tok_word"][j]
    return " ".join(m["words"][w0:w1 + 1])


def best_span(start_logits, end_logits, m, max_answer_len=30):
    """The context text of the highest-scoring span of one window ``m`` (start <= end, at most
    ``max_answer_len`` tokens, inside the window's context; on equal scores the earliest start, then
    the earliest end); "" for an empty window."""
    score, i, j, _, _ = _window_spans(start_logits, end_logits, m, max_answer_len)
    if not len(score):
        return ""
    k = int(np.argmax(score))
    return _span_text(m, i[k], j[k])


def _softmax(x):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max())
    return e / e.sum()


def _question_nbest(rows, start_logits, end_logits, windows, n_best_size, max_answer_len, version_2):
    """One question's ``(nbest entries, null score, best span)`` from its window ``rows``; the best span
    is ``(score, text)``, or None where the windows hold no context token."""
    parts = [_window_spans(start_logits[f], end_logits[f], windows[f], max_answer_len) for f in rows]
    score, i, j, span_s, span_e = (np.concatenate([p[k] for p in parts]) for k in range(5))
    window = np.repeat(rows, [len(p[0]) for p in parts])
    f0 = min(rows, key=lambda f: float(start_logits[f][0]) + float(end_logits[f][0]))   # the first lowest
    null = ("", float(start_logits[f0][0]) + float(end_logits[f0][0]), float(start_logits[f0][0]),
            float(end_logits[f0][0]))
    entries, seen, order = [], set(), np.argsort(-score, kind="stable")   # ties: earlier window, start, end
    best = (float(score[order[0]]), _span_text(windows[window[order[0]]], i[order[0]], j[order[0]])) \
        if len(order) else None
    for k in order:
        if version_2 and "" not in seen and null[1] > score[k] and len(entries) < n_best_size:
            entries.append(null)   # BERT's order: after the spans of an equal score
            seen.add("")
        if len(entries) >= n_best_size:
            break
        text = _span_text(windows[window[k]], i[k], j[k])
        if text not in seen:
            seen.add(text)
            entries.append((text, float(score[k]), float(span_s[k]), float(span_e[k])))
    if version_2 and "" not in seen:   # the null answer is always among the candidates (BERT's rule)
        entries.append(null)
    probs = _softmax([e[1] for e in entries]) if entries else []
    nbest = [{"text": t, "probability": float(p), "start_logit": s, "end_logit": e}
             for (t, _, s, e), p in zip(entries, probs)]
    return nbest, null[1], best


def squad_predictions(start_logits, end_logits, windows, examples, n_best_size=20, max_answer_len=30,
                      version_2=False, null_score_diff_threshold=0.0):
    """``(predictions, nbest, null_odds)`` of every question in ``examples`` from the logits of its
    windows (rows of ``start_logits``/``end_logits`` in the order of ``windows``).

    ``nbest[id]``: up to ``n_best_size`` entries ``{text, probability, start_logit, end_logit}`` of
    distinct texts in order of score (start + end logit), ``probability`` a softmax over the listed
    scores; with ``version_2`` the null answer "" (the lowest [CLS] score over the windows) is
    among them, added past ``n_best_size`` when it did not rank. ``predictions[id]``: the best span's
    text; with ``version_2`` "" when ``null_odds[id]`` = null score - best span score exceeds
    ``null_score_diff_threshold``. A question whose windows hold no context token gets "" (and null
    odds ``NO_SPAN_ODDS``). ``null_odds`` is empty without ``version_2``."""
    by_question = collections.defaultdict(list)
    for f, m in enumerate(windows):
        by_question[m["example"]].append(f)
    predictions, nbest, null_odds = {}, {}, {}
    for n, ex in enumerate(examples):
        entries, null, best = _question_nbest(by_question[n], start_logits, end_logits, windows, n_best_size,
                                              max_answer_len, version_2)
        qid = ex["id"]
        nbest[qid] = entries
        text = best[1] if best else ""
        if version_2:
            null_odds[qid] = null - best[0] if best else NO_SPAN_ODDS
            if null_odds[qid] > null_score_diff_threshold:
                text = ""
        predictions[qid] = text
    return predictions, nbest, null_odds


def predict_squad(start_logits, end_logits, windows, examples, max_answer_len=30):
    """``{id: answer text}``: for each question, the highest-scoring span over all its windows
    (rows of ``start_logits``/``end_logits`` in the order of ``windows``); a span lies inside one
    window, and on equal scores the earlier window wins (SQuAD v1.1: no null answer)."""
    return squad_predictions(start_logits, end_logits, windows, examples, 1, max_answer_len)[0]


def write_predictions(folder, predictions, nbest, null_odds=None):
    """Write ``predictions.json`` ({id: text}, the official SQuAD format), ``nbest_predictions.json``
    and, when given (SQuAD 2.0), ``null_odds.json`` ({id: null score - best span score}, the
    official evaluation's ``--na-prob-file``) into ``folder``, each atomically. Returns the paths."""
    files = [("predictions.json", predictions), ("nbest_predictions.json", nbest)]
    if null_odds is not None:
        files.append(("null_odds.json", null_odds))
    paths = []
    for name, obj in files:
        paths.append(os.path.join(folder, name))
        atomic_write(paths[-1], json.dumps(obj, indent=2) + "\n")
    return paths


# ---- metrics ----------------------------------------------------------------------------------------
def normalize_answer(s):
    """SQuAD's normalisation: lower case, no punctuation, no articles (a, an, the), single spaces."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def exact_match(pred, golds):
    """1.0 when the normalised prediction equals a normalised gold answer."""
    return float(any(normalize_answer(pred) == normalize_answer(g) for g in golds))


def _token_f1(pred, gold):
    """SQuAD 2.0's token F1 of one pair: 2PR/(P+R) over the common tokens; 1 when both are empty
    and 0 when only one is."""
    pt, gt = normalize_answer(pred).split(), normalize_answer(gold).split()
    if not pt or not gt:
        return float(pt == gt)
    same = sum((collections.Counter(pt) & collections.Counter(gt)).values())
    if same == 0:
        return 0.0
    prec, rec = same / len(pt), same / len(gt)
    return 2 * prec * rec / (prec + rec)


def f1_score(pred, golds):
    """SQuAD's token F1, the best over the gold answers (v1.1: 0 without gold answers)."""
    return max((_token_f1(pred, g) if normalize_answer(g) else 0.0 for g in golds), default=0.0)


def squad_metrics(preds, examples):
    """``{'exact_match', 'f1'}`` in percent over ``examples`` given ``{id: text}`` predictions."""
    em = [exact_match(preds.get(ex["id"], ""), ex["answers"]) for ex in examples]
    f1 = [f1_score(preds.get(ex["id"], ""), ex["answers"]) for ex in examples]
    return {"exact_match": 100.0 * float(np.mean(em)), "f1": 100.0 * float(np.mean(f1))}


def _best_threshold(ids, preds, scores, has_ans, null_odds):
    """The official search for the null-odds threshold: start with every question answered "", then
    in increasing order of odds let each give its prediction; ``(best score in percent, the odds at
    which it was reached)``, threshold 0.0 when no step improves on all-"", ties to the lower one."""
    cur = best = sum(1 for q in ids if not has_ans[q])
    thresh = 0.0
    for q in sorted(ids, key=lambda q: null_odds[q]):
        cur += scores[q] if has_ans[q] else (-1 if preds[q] else 0)
        if cur > best:
            best, thresh = cur, null_odds[q]
    return 100.0 * best / len(ids), float(thresh)


def squad2_metrics(preds, examples, null_odds=None):
    """The official SQuAD 2.0 evaluation of ``{id: text}`` predictions (a missing one counts as "").
    A question's gold answers are its answer texts that normalise to something; with none (an
    unanswerable question) the gold is [""], so "" scores 1 and any other text 0. Returns percent
    ``exact``, ``f1`` and ``total`` over all questions, the same as ``HasAns_*`` over the
    questions with answers and ``NoAns_*`` over those without (each where there are any), and with
    ``null_odds`` ({id: null score - best span score}) ``best_exact``/``best_f1`` with their
    ``*_thresh``: the scores with the best threshold on the odds (``_best_threshold``)."""
    ids = [ex["id"] for ex in examples]
    preds = {q: preds.get(q, "") for q in ids}
    has_ans = {ex["id"]: bool(ex["answers"]) for ex in examples}
    exact, f1 = {}, {}
    for ex in examples:
        golds = [g for g in ex["answers"] if normalize_answer(g)] or [""]
        p = preds[ex["id"]]
        exact[ex["id"]] = max(float(normalize_answer(g) == normalize_answer(p)) for g in golds)
        f1[ex["id"]] = max(_token_f1(p, g) for g in golds)
    out = {}
    for prefix, group in (("", ids), ("HasAns_", [q for q in ids if has_ans[q]]),
                          ("NoAns_", [q for q in ids if not has_ans[q]])):
        if group:
            out[f"{prefix}exact"] = 100.0 * sum(exact[q] for q in group) / len(group)
            out[f"{prefix}f1"] = 100.0 * sum(f1[q] for q in group) / len(group)
            out[f"{prefix}total"] = len(group)
    if null_odds is not None:
        out["best_exact"], out["best_exact_thresh"] = _best_threshold(ids, preds, exact, has_ans, null_odds)
        out["best_f1"], out["best_f1_thresh"] = _best_threshold(ids, preds, f1, has_ans, null_odds)
    return out


def dev_metrics(start_logits, end_logits, windows, examples, cfg, out=None):
    """The fine-tuning recipe's evaluation of the dev windows' logits: predictions with ``cfg``'s
    ``n_best_size``, ``max_answer_length``, ``version_2`` and ``null_score_diff_threshold``, written
    into the folder ``out`` when given (``write_predictions``), and their metrics as log keys:
    ``dev_exact_match`` and ``dev_f1`` (percent; SQuAD v1.1's, or SQuAD 2.0's ``exact``/``f1``),
    with ``version_2`` every other entry of ``squad2_metrics`` as ``dev_<name>``."""
    preds, nbest, odds = squad_predictions(start_logits, end_logits, windows, examples, cfg.n_best_size,
                                           cfg.max_answer_length, cfg.version_2, cfg.null_score_diff_threshold)
    if out:
        write_predictions(out, preds, nbest, odds if cfg.version_2 else None)
    if not cfg.version_2:
        m = squad_metrics(preds, examples)
        return {"dev_exact_match": m["exact_match"], "dev_f1": m["f1"]}
    m = squad2_metrics(preds, examples, odds)
    return {"dev_exact_match": m.pop("exact"), **{f"dev_{k}": v for k, v in m.items()}}
