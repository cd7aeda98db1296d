"""The fine-tuning tasks: GLUE-style TSV sentence(-pair) classification (reader, encoder, metrics)
and the task heads on a BERT backbone, for classification and for extractive QA. SQuAD's reading
and windows are in ``squad``, its prediction and metrics in ``squad_eval`` (their names are
importable from here too). The training itself is in ``finetune``."""
import numpy as np
from mxnet import gluon

from ..utils.errors import UserError
from ..utils.readers import data_reader
from .squad import (SquadFeatures, check_squad_lengths, doc_windows, encode_squad,  # noqa: F401
                    read_squad)
from .squad_eval import (best_span, exact_match, f1_score, normalize_answer, predict_squad,  # noqa: F401
                         squad_metrics)


# ---- GLUE-style TSV ------------------------------------------------------------------------------
@data_reader("TSV file with a header row", path="path",
             checks=("utf-8 text", "the named columns in the header", "rows as wide as the header", "at least one row",
                     "labels among those given"))
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
