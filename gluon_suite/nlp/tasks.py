"""The fine-tuning tasks: GLUE-style TSV sentence(-pair) classification and SQuAD v1.1 extractive
QA: their readers and encoders, the task heads on a BERT backbone, and their metrics
(accuracy/F1, exact match/F1). The training itself is in ``finetune``."""
import collections
import json
import re
import string

import numpy as np
from mxnet import gluon

from ..utils.errors import UserError


# ---- GLUE-style TSV ------------------------------------------------------------------------------
def read_tsv(path, text_columns=("sentence",), label_column="label", labels=None):
    """Read a GLUE-style TSV with a header row. Returns ``(texts, label_ids, label_names)`` where
    ``texts`` are tuples of one or two strings. Malformed rows raise UserError naming file and line."""
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path} does not exist") from None
    with f:
        header = f.readline().rstrip("\n").split("\t")
        missing = [c for c in (*text_columns, label_column) if c not in header]
        if missing:
            raise UserError(f"{path}:1: header lacks column(s) {', '.join(missing)} (has {', '.join(header)})")
        cols = [header.index(c) for c in text_columns]
        lab = header.index(label_column)
        texts, raw = [], []
        for no, line in enumerate(f, start=2):
            if not line.strip():
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) != len(header):
                raise UserError(f"{path}:{no}: expected {len(header)} tab-separated columns, got {len(parts)}")
            texts.append(tuple(parts[c] for c in cols))
            raw.append(parts[lab])
    if not texts:
        raise UserError(f"{path} has no data rows")
    names = list(labels) if labels else sorted(set(raw))
    unknown = sorted(set(raw) - set(names))
    if unknown:
        raise UserError(f"{path}: label(s) {', '.join(unknown)} not in {names}")
    return texts, np.array([names.index(r) for r in raw], np.int32), names


def encode_pairs(texts, tokenizer, vocab, max_len):
    """[CLS] a [SEP] (b [SEP]) as id/type arrays (N, max_len) and valid lengths (N,)."""
    N = len(texts)
    ids, types, vlen = np.zeros((N, max_len), np.int32), np.zeros((N, max_len), np.int32), np.zeros(N, np.int32)
    for n, t in enumerate(texts):
        a = tokenizer(t[0])
        b = tokenizer(t[1]) if len(t) > 1 else []
        budget = max_len - (3 if b else 2)
        while len(a) + len(b) > budget:
            (a if len(a) >= len(b) else b).pop()
        toks = [vocab.cls_token] + a + [vocab.sep_token] + (b + [vocab.sep_token] if b else [])
        ids[n, :len(toks)] = vocab[toks]
        types[n, len(a) + 2:len(toks)] = 1
        vlen[n] = len(toks)
    return ids, types, vlen


def accuracy(pred, gold):
    """Fraction of equal labels."""
    pred, gold = np.asarray(pred), np.asarray(gold)
    return float((pred == gold).mean())


def binary_f1(pred, gold, positive=1):
    """F1 of the positive class: 2PR/(P+R), 0 when there are no true positives."""
    pred, gold = np.asarray(pred), np.asarray(gold)
    tp = float(((pred == positive) & (gold == positive)).sum())
    if tp == 0:
        return 0.0
    p, r = tp / (pred == positive).sum(), tp / (gold == positive).sum()
    return 2 * p * r / (p + r)


class BertClassifier(gluon.HybridBlock):
    """BERT backbone + dropout + Dense over the pooled [CLS] output."""

    def __init__(self, backbone, num_classes, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.bert = backbone
            self.drop = gluon.nn.Dropout(dropout)
            self.out = gluon.nn.Dense(num_classes)

    def hybrid_forward(self, F, ids, types, vlen):
        _, pooled = self.bert(ids, types, vlen)
        return self.out(self.drop(pooled))


class BertQA(gluon.HybridBlock):
    """BERT backbone + a Dense(2) over every position: start and end logits."""

    def __init__(self, backbone, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.bert = backbone
            self.span = gluon.nn.Dense(2, flatten=False)

    def hybrid_forward(self, F, ids, types, vlen):
        seq = self.bert(ids, types, vlen)
        if isinstance(seq, (list, tuple)):
            seq = seq[0]
        logits = self.span(seq)
        return logits[:, :, 0], logits[:, :, 1]


# ---- SQuAD v1.1 ------------------------------------------------------------------------------------
_JSON_TYPES = {dict: "an object", list: "a list", str: "a string", int: "a whole number"}


def _json_kind(value):
    if isinstance(value, bool):
        return "true/false"
    if value is None:
        return "null"
    for t, name in ((dict, "an object"), (list, "a list"), (str, "a string"), (int, "a whole number"),
                    (float, "a number")):
        if isinstance(value, t):
            return name
    return type(value).__name__


def _field(obj, key, kind, path, where):
    """``obj[key]`` checked to be of JSON type ``kind`` (dict, list, str or int); a UserError
    naming the file and the JSON path (``data[0].paragraphs[2].qas[1].answers``) otherwise."""
    fix = "fix the file (SQuAD v1.1: data[].paragraphs[].{context, qas[].{id, question, answers[].{text, answer_start}}})"
    if key not in obj:
        raise UserError(f"{path}: {where} lacks '{key}' ({_JSON_TYPES[kind]}); {fix}")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise UserError(f"{path}: {where}.{key} is {_json_kind(value)}, not {_JSON_TYPES[kind]}; {fix}")
    return value


def read_squad(path):
    """Read SQuAD v1.1 JSON: a list of dicts with id, question, context, answers (texts) and
    answer_start (chars). Every field is checked for its JSON type where it is read; a wrong type,
    a missing field or an answer not found at its offset raises UserError naming the file and the
    JSON path (``data[0].paragraphs[2].qas[1].answers``)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise UserError(f"{path} does not exist") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise UserError(f"{path}: a SQuAD file is an object with a 'data' list")
    out = []
    for ai, art in enumerate(data["data"]):
        if not isinstance(art, dict):
            raise UserError(f"{path}: data[{ai}] is {_json_kind(art)}, not an object with 'paragraphs'; fix the file")
        for pi, para in enumerate(_field(art, "paragraphs", list, path, f"data[{ai}]")):
            where = f"data[{ai}].paragraphs[{pi}]"
            if not isinstance(para, dict):
                raise UserError(f"{path}: {where} is {_json_kind(para)}, not an object with 'context' and "
                                "'qas'; fix the file")
            if "context" not in para or "qas" not in para:
                raise UserError(f"{path}: {where} lacks 'context' or 'qas'; fix the file")
            context = _field(para, "context", str, path, where)
            for qi, qa in enumerate(_field(para, "qas", list, path, where)):
                qwhere = f"{where}.qas[{qi}]"
                if not isinstance(qa, dict):
                    raise UserError(f"{path}: {qwhere} is {_json_kind(qa)}, not an object; fix the file")
                qid = qa.get("id")
                if isinstance(qid, int) and not isinstance(qid, bool):
                    qid = str(qid)   # numeric ids are common in converted files
                else:
                    qid = _field(qa, "id", str, path, qwhere)
                question = _field(qa, "question", str, path, qwhere)
                texts, starts = [], []
                for ni, ans in enumerate(_field(qa, "answers", list, path, qwhere)):
                    awhere = f"{qwhere}.answers[{ni}]"
                    if not isinstance(ans, dict):
                        raise UserError(f"{path}: {awhere} is {_json_kind(ans)}, not an object with 'text' and "
                                        "'answer_start'; fix the file")
                    text = _field(ans, "text", str, path, awhere)
                    s = _field(ans, "answer_start", int, path, awhere)
                    if s < 0 or context[s:s + len(text)] != text:
                        raise UserError(f"{path}: {qwhere}: answer {text!r} is not at character {s} of the "
                                        f"context ({awhere}); fix answer_start")
                    texts.append(text)
                    starts.append(s)
                out.append({"id": qid, "question": question, "context": context,
                            "answers": texts, "answer_start": starts})
    if not out:
        raise UserError(f"{path} holds no questions")
    return out


def check_squad_lengths(max_len, max_query, doc_stride):
    """The window sizes of ``encode_squad`` checked together: ``max_len`` must leave room for
    ``[CLS] question [SEP] ... [SEP]`` with a query of ``max_query`` tokens and at least one context
    token (GluonNLP's rule: max_seq_length > max_query_length + 3); ``doc_stride`` >= 1."""
    if max_query < 1 or doc_stride < 1:
        raise UserError(f"--max-query-length ({max_query}) and --doc-stride ({doc_stride}) must be >= 1")
    if max_len < max_query + 4:
        raise UserError(f"--max-len {max_len} leaves no room for the context after a question of up to "
                        f"--max-query-length {max_query} tokens and 3 special tokens; raise --max-len above "
                        f"{max_query + 3} or lower --max-query-length")


def doc_windows(num_tokens, room, doc_stride):
    """The ``(start, length)`` windows over a context of ``num_tokens`` tokens, as BERT's and
    GluonNLP's SQuAD features: each holds up to ``room`` tokens, the next starts ``min(length,
    doc_stride)`` tokens later, and the last one reaches the end of the context. A context that fits
    gives one window; an empty one gives ``[(0, 0)]``."""
    windows, start = [], 0
    while True:
        length = min(room, num_tokens - start)
        windows.append((start, length))
        if start + length >= num_tokens:
            return windows
        start += min(length, doc_stride)


def _context_words(context):
    """Whitespace-separated words of ``context`` and, per character, the index of its word."""
    words, char_word, prev_ws = [], [], True
    for ch in context:
        if ch.isspace():
            prev_ws = True
        else:
            if prev_ws:
                words.append(ch)
            else:
                words[-1] += ch
            prev_ws = False
        char_word.append(max(len(words) - 1, 0))
    return words, char_word


SquadFeatures = collections.namedtuple("SquadFeatures", "ids types vlen starts ends windows")
SquadFeatures.__doc__ = """Features of ``encode_squad``, one row per window: token ids, token types and valid
lengths (arrays of shape (F, max_len) and (F,)), the start/end targets (F,), and per window a dict:
``example`` (index of its question), ``offset`` (position of its first context token),
``doc_start`` (that token's index in the whole context), ``tok_word`` (context word of each of its
tokens) and ``words`` (the context's words)."""


def encode_squad(examples, tokenizer, vocab, max_len, max_query=24, doc_stride=32):
    """Features for BERT QA, as GluonNLP's ``SQuADTransform``: the question is truncated to
    ``max_query`` tokens, the context is split into overlapping windows (``doc_windows``: as many
    context tokens as ``max_len`` leaves, each window ``doc_stride`` tokens after the previous one),
    and each window is one row ``[CLS] question [SEP] window [SEP]``.

    Targets: in a window that holds the first answer whole, its first and last token positions;
    in every other window position 0 ([CLS], GluonNLP's "no answer here"), so an answer beyond
    the first window is learnt from the windows that contain it. Returns ``SquadFeatures``; the
    windows of a question are consecutive rows."""
    check_squad_lengths(max_len, max_query, doc_stride)
    rows = []
    for n, ex in enumerate(examples):
        words, char_word = _context_words(ex["context"])
        q = tokenizer(ex["question"])[:max_query]
        toks, tok_word = [], []
        for wi, w in enumerate(words):
            for piece in tokenizer(w):
                toks.append(piece)
                tok_word.append(wi)
        answer = None   # the first answer's first and last context token
        if ex["answers"] and words:
            s_char = ex["answer_start"][0]
            ws = char_word[s_char]
            we = char_word[min(s_char + len(ex["answers"][0]) - 1, len(char_word) - 1)]
            pos = [i for i, w in enumerate(tok_word) if ws <= w <= we]
            if pos:
                answer = (pos[0], pos[-1])
        off = len(q) + 2
        for start, length in doc_windows(len(toks), max_len - len(q) - 3, doc_stride):
            seq = [vocab.cls_token] + q + [vocab.sep_token] + toks[start:start + length] + [vocab.sep_token]
            target = (0, 0)
            if answer and start <= answer[0] and answer[1] < start + length:
                target = (answer[0] - start + off, answer[1] - start + off)
            rows.append((vocab[seq], off, target, {"example": n, "offset": off, "doc_start": start,
                                                    "tok_word": tok_word[start:start + length], "words": words}))
    F = len(rows)
    ids, types, vlen = np.zeros((F, max_len), np.int32), np.zeros((F, max_len), np.int32), np.zeros(F, np.int32)
    starts, ends = np.zeros(F, np.int32), np.zeros(F, np.int32)
    for f, (seq, off, (s, e), _) in enumerate(rows):
        ids[f, :len(seq)] = seq
        types[f, off:len(seq)] = 1
        vlen[f], starts[f], ends[f] = len(seq), s, e
    return SquadFeatures(ids, types, vlen, starts, ends, [r[3] for r in rows])


def _best_in_window(start_logits, end_logits, m, max_answer_len):
    """``(score, i, j)`` of the best span of window ``m``: start i <= end j < i + max_answer_len,
    both among its context tokens, score start_logits + end_logits; None for an empty window."""
    off, n = m["offset"], len(m["tok_word"])
    if n == 0:
        return None
    s = np.asarray(start_logits, np.float64)[off:off + n]
    e = np.asarray(end_logits, np.float64)[off:off + n]
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    score = np.where((j >= i) & (j - i < max_answer_len), s[:, None] + e[None, :], -np.inf)
    k = int(np.argmax(score))   # row-major: ties go to the earliest start, then the earliest end
    return float(score.flat[k]), k // n, k % n


def _span_text(m, i, j):
    w0, w1 = m["tok_word"][i], m["tok_word"][j]
    return " ".join(m["words"][w0:w1 + 1])


def best_span(start_logits, end_logits, m, max_answer_len=30):
    """The context text of the highest-scoring span of one window ``m`` (start <= end, at most
    ``max_answer_len`` tokens, inside the window's context); "" for an empty window."""
    best = _best_in_window(start_logits, end_logits, m, max_answer_len)
    return _span_text(m, best[1], best[2]) if best else ""


def predict_squad(start_logits, end_logits, windows, examples, max_answer_len=30):
    """``{id: answer text}``: for each question, the highest-scoring span over all its windows
    (rows of ``start_logits``/``end_logits`` in the order of ``windows``); a span lies inside one
    window, and on equal scores the earlier window wins."""
    best = {}
    for f, m in enumerate(windows):
        cand = _best_in_window(start_logits[f], end_logits[f], m, max_answer_len)
        if cand and (m["example"] not in best or cand[0] > best[m["example"]][0]):
            best[m["example"]] = (cand[0], _span_text(m, cand[1], cand[2]))
    return {ex["id"]: best[n][1] if n in best else "" for n, ex in enumerate(examples)}


def normalize_answer(s):
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def exact_match(pred, golds):
    """1.0 when the normalised prediction equals a normalised gold answer."""
    return float(any(normalize_answer(pred) == normalize_answer(g) for g in golds))


def f1_score(pred, golds):
    """SQuAD's token F1, the best over the gold answers."""
    def f1(p, g):
        pt, gt = normalize_answer(p).split(), normalize_answer(g).split()
        common = collections.Counter(pt) & collections.Counter(gt)
        same = sum(common.values())
        if same == 0:
            return 0.0
        prec, rec = same / len(pt), same / len(gt)
        return 2 * prec * rec / (prec + rec)
    return max(f1(pred, g) for g in golds) if golds else 0.0


def squad_metrics(preds, examples):
    """``{'exact_match', 'f1'}`` in percent over ``examples`` given ``{id: text}`` predictions."""
    em = [exact_match(preds.get(ex["id"], ""), ex["answers"]) for ex in examples]
    f1 = [f1_score(preds.get(ex["id"], ""), ex["answers"]) for ex in examples]
    return {"exact_match": 100.0 * float(np.mean(em)), "f1": 100.0 * float(np.mean(f1))}
