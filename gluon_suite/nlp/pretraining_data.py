"""Masked-LM + next-sentence-prediction instances from tokenised documents (BERT's recipe).

For each document, sentences are packed into chunks of about ``max_seq_len - 3`` tokens (sometimes
shorter, with probability ``short_seq_prob``); a chunk is split at a random sentence boundary into
segment A and segment B (the true continuation, label 1) or B is replaced by a random span of
another document (label 0). Then 15% of the non-special tokens (at most ``max_predictions``) are
chosen for the masked LM: 80% become [MASK], 10% a random token, 10% stay. Everything is drawn from
one ``numpy.random.RandomState(seed)``, so the instances are reproducible.
"""
import numpy as np

from ..utils.errors import UserError


def create_instances(docs, vocab, max_seq_len, seed=0, short_seq_prob=0.1, mask_prob=0.15,
                     max_predictions=None, dupe_factor=1):
    """Return a dict of int32/float32 arrays: ``input_ids`` (N, L), ``token_types`` (N, L),
    ``valid_length`` (N,), ``masked_positions``/``masked_ids``/``masked_weights`` (N, P),
    ``nsp_labels`` (N,). ``docs`` are lists of token lists (one per sentence)."""
    if max_seq_len < 8:
        raise UserError(f"max_seq_len must be >= 8, got {max_seq_len}")
    docs = [[s for s in d if s] for d in docs]
    docs = [d for d in docs if d]
    if len(docs) < 2:
        raise UserError("the corpus needs at least 2 non-empty documents for next-sentence prediction")
    rng = np.random.RandomState(seed)
    P = max_predictions or max(1, int(round(max_seq_len * mask_prob)))
    cls, sep, mask = vocab[vocab.cls_token], vocab[vocab.sep_token], vocab[vocab.mask_token]
    specials = {vocab[t] for t in (vocab.cls_token, vocab.sep_token, vocab.padding_token)}
    n_vocab = len(vocab)
    rows = []
    for _ in range(dupe_factor):
        for di, doc in enumerate(docs):
            rows.extend(_from_document(docs, di, max_seq_len, short_seq_prob, rng))
    N, L = len(rows), max_seq_len
    out = {"input_ids": np.zeros((N, L), np.int32), "token_types": np.zeros((N, L), np.int32),
           "valid_length": np.zeros((N,), np.int32), "masked_positions": np.zeros((N, P), np.int32),
           "masked_ids": np.zeros((N, P), np.int32), "masked_weights": np.zeros((N, P), np.float32),
           "nsp_labels": np.zeros((N,), np.int32)}
    for n, (a, b, is_next) in enumerate(rows):
        ids = [cls] + [vocab[t] for t in a] + [sep] + [vocab[t] for t in b] + [sep]
        types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
        cand = [i for i, t in enumerate(ids) if t not in specials]
        rng.shuffle(cand)
        k = min(P, max(1, int(round(len(ids) * mask_prob))), len(cand))
        picked = sorted(cand[:k])
        labels = [ids[i] for i in picked]
        for i in picked:
            r = rng.random_sample()
            if r < 0.8:
                ids[i] = mask
            elif r < 0.9:
                ids[i] = int(rng.randint(0, n_vocab))
        out["input_ids"][n, :len(ids)] = ids
        out["token_types"][n, :len(types)] = types
        out["valid_length"][n] = len(ids)
        out["masked_positions"][n, :k] = picked
        out["masked_ids"][n, :k] = labels
        out["masked_weights"][n, :k] = 1.0
        out["nsp_labels"][n] = is_next
    return out


def _from_document(docs, di, max_seq_len, short_seq_prob, rng):
    doc = docs[di]
    max_tokens = max_seq_len - 3
    target = max_tokens if rng.random_sample() >= short_seq_prob else int(rng.randint(2, max_tokens + 1))
    out, chunk, length, i = [], [], 0, 0
    while i < len(doc):
        chunk.append(doc[i])
        length += len(doc[i])
        if i == len(doc) - 1 or length >= target:
            if chunk:
                a_end = int(rng.randint(1, len(chunk))) if len(chunk) >= 2 else 1
                a = [t for s in chunk[:a_end] for t in s]
                if len(chunk) == 1 or rng.random_sample() < 0.5:
                    is_next = 0
                    other = int(rng.randint(0, len(docs) - 1))
                    other += other >= di
                    od = docs[other]
                    start = int(rng.randint(0, len(od)))
                    b = []
                    for s in od[start:]:
                        b.extend(s)
                        if len(b) >= target - len(a):
                            break
                    i -= len(chunk) - a_end  # the unused sentences start the next chunk
                else:
                    is_next = 1
                    b = [t for s in chunk[a_end:] for t in s]
                a, b = _truncate(a, b, max_tokens, rng)
                if a and b:
                    out.append((a, b, is_next))
            chunk, length = [], 0
            target = max_tokens if rng.random_sample() >= short_seq_prob else int(rng.randint(2, max_tokens + 1))
        i += 1
    return out


def _truncate(a, b, max_tokens, rng):
    a, b = list(a), list(b)
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random_sample() < 0.5:
            del longer[0]
        else:
            longer.pop()
    return a, b
