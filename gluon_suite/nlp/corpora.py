"""English corpora that ship inside installed registry packages, as documents of sentences (the
pretraining format of ``text.py``), read from the installed package with no download.

gensim's test data (``gensim/test/test_data/``, gensim is not imported, only its files are read):

- ``lee_background``: ``lee_background.cor``, the Lee background corpus: 300 Australian news
  articles, one document per line, real sentences with punctuation. Each line is split into
  sentences with the same rule as the embedded corpus (after ``.``, ``!`` or ``?`` followed by
  whitespace and a capital letter, a parenthesis or a quote).
- ``head500``: ``head500.noblanks.cor``, 250 English Wikipedia articles, lower-cased, stemmed and
  stripped of punctuation, one document per line. With no sentence boundaries, each document is cut
  into chunks of ``chunk_words`` consecutive words (default 32), the last chunk holding the rest;
  every article has at least 98 words, so every document has at least two "sentences" for
  next-sentence prediction.

Corpus names for ``--corpus``: ``gensim:lee_background`` and ``gensim:head500``; anything else is a
path to a text file in the pretraining format.
"""
import math

from ..utils.errors import UserError
from ..utils.packaged import package_file
from ..utils.readers import data_reader
from .text import _sentences, read_corpus

GENSIM_PIP = "gensim==4.4.0"
GENSIM_CORPORA = {"lee_background": "lee_background.cor", "head500": "head500.noblanks.cor"}
PREFIX = "gensim:"


def gensim_corpus_path(name):
    """Absolute path of gensim corpus ``name`` in the installed gensim (UserError if missing)."""
    if name not in GENSIM_CORPORA:
        raise UserError(f"unknown gensim corpus {name!r}; choose one of: "
                        + ", ".join(PREFIX + n for n in GENSIM_CORPORA))
    return package_file("gensim", "test/test_data/" + GENSIM_CORPORA[name], GENSIM_PIP)


@data_reader("document-per-line text file", checks=("utf-8 text",), path="path")
def _lines(path):
    # head500 has CRLF line ends; splitlines() takes either
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f.read().splitlines() if line.strip()]


def gensim_corpus(name, chunk_words=32):
    """Documents (lists of sentences, in file order) of gensim corpus ``name``: 'lee_background'
    (real sentences) or 'head500' (``chunk_words``-word chunks). Documents with fewer than two
    sentences are left out, as next-sentence prediction needs a pair."""
    if int(chunk_words) < 1:
        raise UserError(f"chunk_words must be >= 1, got {chunk_words}")
    lines = _lines(gensim_corpus_path(name))
    if name == "lee_background":
        docs = [_sentences(line) for line in lines]
    else:
        docs = []
        for line in lines:
            words = line.split()
            n = math.ceil(len(words) / chunk_words)
            docs.append([" ".join(words[i * chunk_words:(i + 1) * chunk_words]) for i in range(n)])
    return [d for d in docs if len(d) >= 2]


def load_corpus(spec):
    """Documents for ``--corpus``: ``gensim:<name>`` (see ``GENSIM_CORPORA``) or the path of a text
    file in the pretraining format (one sentence per line, a blank line between documents)."""
    if spec.startswith(PREFIX):
        return gensim_corpus(spec[len(PREFIX):])
    return [d for _, d in read_corpus(spec)]
