"""Text for BERT: corpora in the pretraining format, vocabularies, tokenizers.

Corpus format (as BERT's ``create_pretraining_data``): one sentence per line, a blank line between
documents. The embedded default is the English documentation text that ships with CPython
(``pydoc_data.topics``, 79 documents, about 65k words). Vocabularies are either loaded from a BERT
vocab file (one token per line) or built from the corpus: whole words above a frequency, plus every
character alone and as a ``##`` continuation, so GluonNLP's WordPiece tokenizer never needs
``[UNK]`` on that corpus.
"""
import collections
import os
import re

from ..utils.errors import UserError
from ..utils.readers import data_reader

SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")


def _sentences(text):
    out = []
    for para in re.split(r"\n\s*\n", text):
        para = " ".join(line.strip() for line in para.splitlines() if line.strip())
        para = re.sub(r"[*=~^-]{3,}", " ", para).strip()  # reST underlines
        if not para:
            continue
        out.extend(s.strip() for s in _SENT.split(para) if s.strip())
    return out


def embedded_corpus():
    """Documents (lists of sentences) from ``pydoc_data.topics``, in a fixed order."""
    from pydoc_data.topics import topics
    docs = [_sentences(topics[k]) for k in sorted(topics)]
    return [d for d in docs if len(d) >= 2]


def write_corpus(docs, path):
    """Write documents in the pretraining text format."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n\n".join("\n".join(d) for d in docs) + "\n")


@data_reader("pretraining text file", path="path",
             checks=("utf-8 text", "at least one document", "two sentences or more in each document"))
def read_corpus(path):
    """Read a pretraining text file: returns ``[(first_line_number, [sentence, ...]), ...]``.

    Raises UserError for an empty corpus and for a document with fewer than two sentences (next-
    sentence prediction needs a pair), naming the file and line.
    """
    if not os.path.isfile(path):
        raise UserError(f"corpus {path} does not exist")
    docs, cur, start = [], [], None
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, start=1):
            line = line.strip()
            if line:
                if start is None:
                    start = no
                cur.append(line)
            elif cur:
                docs.append((start, cur))
                cur, start = [], None
    if cur:
        docs.append((start, cur))
    if not docs:
        raise UserError(f"corpus {path} is empty; it needs documents of one sentence per line, "
                        "separated by blank lines")
    for start, d in docs:
        if len(d) < 2:
            raise UserError(f"{path}:{start}: this document has a single sentence, shorter than a "
                            "sentence pair; next-sentence prediction needs at least 2 sentences per "
                            "document (merge it with a neighbour or remove it)")
    return docs


@data_reader("BERT vocabulary file", path="path",
             checks=("utf-8 text", "the special tokens there", "no token twice"))
def load_vocab(path):
    """A GluonNLP ``BERTVocab`` from a BERT vocab file (one token per line); the special tokens
    [PAD] [UNK] [CLS] [SEP] [MASK] must be present."""
    import gluonnlp as nlp
    if not os.path.isfile(path):
        raise UserError(f"vocabulary {path} does not exist")
    with open(path, encoding="utf-8") as f:
        tokens = [line.rstrip("\n") for line in f]
    missing = [t for t in SPECIAL if t not in tokens]
    if missing:
        raise UserError(f"{path}: the vocabulary lacks {', '.join(missing)}; a BERT vocab file needs "
                        f"{' '.join(SPECIAL)}")
    seen, dup = set(), None
    for no, t in enumerate(tokens, start=1):
        if t in seen:
            dup = (no, t)
            break
        seen.add(t)
    if dup:
        raise UserError(f"{path}:{dup[0]}: token {dup[1]!r} appears twice")
    # indices must be the line numbers: pretrained embeddings are indexed by them
    counter = collections.Counter({t: 1 for t in tokens if t not in SPECIAL})
    return nlp.vocab.BERTVocab(counter, min_freq=1, token_to_idx={t: i for i, t in enumerate(tokens)})


def build_vocab(docs, min_freq=2, max_size=None, lower=True):
    """Build a ``BERTVocab`` from documents: words seen ``min_freq`` times, and all characters
    alone and as ``##`` continuations."""
    import gluonnlp as nlp
    basic = nlp.data.BERTBasicTokenizer(lower=lower)
    words, chars = collections.Counter(), collections.Counter()
    for d in docs:
        for s in d:
            for w in basic(s):
                words[w] += 1
                chars.update(w)
    counter = collections.Counter({w: c for w, c in words.items() if c >= min_freq})
    if max_size:
        counter = collections.Counter(dict(counter.most_common(max_size)))
    for ch, c in chars.items():
        counter[ch] += c
        counter["##" + ch] += c
    return nlp.vocab.BERTVocab(counter, min_freq=1)


def tokenizer(vocab, lower=True):
    """GluonNLP's WordPiece ``BERTTokenizer`` over ``vocab``."""
    import gluonnlp as nlp
    return nlp.data.BERTTokenizer(vocab, lower=lower)
