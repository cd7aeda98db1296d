"""Word-level language-model data from MediaWiki XML dumps (a Wikipedia ``pages-articles`` export)
and from plain text files.

Reading: ``iter_pages`` streams a ``.xml``, ``.xml.bz2`` or ``.xml.gz`` export page by page
(``iterparse``, each page cleared once read, so memory stays flat whatever the dump's size), in any
version of the export schema's XML namespace. A page without ``<ns>`` (schemas before 0.6) counts as
namespace 0; a redirect is a page with ``<redirect>`` or text starting ``#REDIRECT``. Markup, sentences
and tokens: ``wikitext.py`` (``strip_markup``, ``split_sentences``, ``tokenize``, importable from here).

Corpora: ``WikipediaCorpus`` (one document per article) and ``text_file_corpus`` (one document per
block of lines between blank lines, each line a paragraph) split documents, never sentences, into
train/valid/test by a permutation fixed by the seed; ``tokens(split)`` is the flat stream with
``<eos>`` after each sentence, as GluonNLP's word LM corpora; ``record()`` is what a run's config
keeps of them. ``Vocabulary`` (GluonNLP's ``Vocab``) is built from the train split, saved as JSON,
and checks that a checkpoint was trained with the same one.
"""
import bz2
import collections
import gzip
import hashlib
import json
import os
import random
import xml.etree.ElementTree as ET

from ..utils.errors import UserError
from ..utils.fileio import atomic_path
from ..utils.packaged import package_file
from ..utils.readers import data_reader
from .corpora import GENSIM_PIP
from .wikitext import STRIPPER_VERSION, split_sentences, strip_markup, tokenize  # noqa: F401

GENSIM_WIKI_DUMP = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
HASH_BYTES = 64 << 20                          # record(): sha256 of at most the first 64 MiB
EOS, UNK = "<eos>", "<unk>"
SPLITS = ("train", "valid", "test")
VOCAB_FORMAT = "gluon_suite-lm-vocab-1"

Page = collections.namedtuple("Page", "title page_id text")


def gensim_wiki_dump_path():
    """The English Wikipedia dump in gensim's test data: 206 pages of the first ``pages-articles``
    file (106 articles, 99 redirects, a project page), 1.7 MB of bz2, about 700k words of wikitext."""
    return package_file("gensim", "test/test_data/" + GENSIM_WIKI_DUMP, GENSIM_PIP)


# ---------------------------------------------------------------------------------------- reading

def _open(path):
    if not os.path.isfile(path):
        raise UserError(f"{path} does not exist; give the path of a MediaWiki XML dump (.xml or .xml.bz2)")
    with open(path, "rb") as f:
        magic = f.read(3)
    if magic == b"BZh":
        return bz2.open(path, "rb")
    return gzip.open(path, "rb") if magic[:2] == b"\x1f\x8b" else open(path, "rb")


def _local(tag):
    return tag.rpartition("}")[2]


def _int(elem, default=None):
    try:
        return int(elem.text)
    except (AttributeError, TypeError, ValueError):
        return default


def _child(elem, name):
    for c in elem:
        if _local(c.tag) == name:
            return c
    return None


@data_reader("MediaWiki XML dump", path="path", fix="download it again",
             checks=("the file exists", "well-formed XML, whole (a cut .bz2 or .gz refused)", "a <mediawiki> root"))
def _read_pages(path):
    """``(Page, namespace, is_redirect)`` for every ``<page>`` of the dump, in file order."""
    path = os.fspath(path)
    try:
        with _open(path) as f:
            root = None
            for event, elem in ET.iterparse(f, events=("start", "end")):
                if root is None:
                    root = elem
                    if _local(elem.tag) != "mediawiki":
                        raise UserError(f"{path} is XML but not a MediaWiki export: its root element "
                                        f"is <{_local(elem.tag)}>, not <mediawiki>")
                if event != "end" or _local(elem.tag) != "page":
                    continue
                rev = _child(elem, "revision")
                text = _child(rev, "text") if rev is not None else None
                text = (text.text or "") if text is not None else ""
                redirect = (_child(elem, "redirect") is not None
                            or text.lstrip()[:9].upper() == "#REDIRECT")
                title = _child(elem, "title")
                page = Page(title.text or "" if title is not None else "", _int(_child(elem, "id")), text)
                ns = _int(_child(elem, "ns"), 0)
                root.clear()          # drop the page just read (and the siteinfo before it)
                yield page, ns, redirect
    except ET.ParseError as exc:
        raise UserError(f"{path} is not well-formed XML ({exc}): a MediaWiki dump must be a complete "
                        "XML export (.xml, or .xml.bz2 as downloaded)") from None
    except EOFError:
        raise UserError(f"{path} is cut short: its compressed stream ends before its end marker; "
                        "download it again") from None
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise UserError(f"{path} could not be decompressed ({exc}); download it again") from None


def _filtered(path, namespaces, skip_redirects, counts):
    namespaces = None if namespaces is None else {int(n) for n in namespaces}
    for page, ns, redirect in _read_pages(path):
        counts["pages"] += 1
        if namespaces is not None and ns not in namespaces:
            counts["other_namespaces"] += 1
        elif redirect and skip_redirects:
            counts["redirects"] += 1
        else:
            yield page


def _no_pages(path, namespaces, counts):
    return UserError(f"{path} has no pages left to read: {counts['pages']} page(s), of which "
                     f"{counts['other_namespaces']} outside namespace(s) {sorted(namespaces or ())} and "
                     f"{counts['redirects']} redirect(s); give a pages-articles dump or other namespaces")


def iter_pages(path, namespaces=(0,), skip_redirects=True):
    """Yield ``Page(title, page_id, text)`` (raw wikitext) for each page of the dump at ``path`` in
    ``namespaces`` (0: articles; None: all), leaving out redirects when ``skip_redirects``. Streams
    the file; raises a one-line ``UserError`` naming it for a missing file, a file that is not XML or
    not a MediaWiki export, a cut-short one, and a dump with no page left to yield."""
    counts = collections.Counter()
    for page in _filtered(path, namespaces, skip_redirects, counts):
        yield page
    if counts["pages"] - counts["other_namespaces"] - counts["redirects"] == 0:
        raise _no_pages(path, namespaces, counts)


# ----------------------------------------------------------------------------------------- corpora

def _file_record(path):
    h, size = hashlib.sha256(), os.path.getsize(path)
    with open(path, "rb") as f:
        left = HASH_BYTES
        while left > 0:
            block = f.read(min(left, 1 << 20))
            if not block:
                break
            h.update(block)
            left -= len(block)
    return {"file": os.path.basename(path), "bytes": size, "sha256": h.hexdigest(),
            "sha256_of": "whole file" if size <= HASH_BYTES else f"first {HASH_BYTES >> 20} MiB"}


def _check_fraction(name, value):
    if not 0 <= float(value) < 1:
        raise UserError(f"{name} must be in [0, 1), got {value}")
    return float(value)


class DocumentCorpus:
    """Documents (lists of sentences) split into train/valid/test by document. ``docs`` yields
    ``(doc_id, title, plain_text)``; a document with fewer than ``min_words`` words (white-space
    separated) is left out. The split is a permutation of the kept documents' ids by ``seed``:
    the first ``round(n * test_fraction)`` (at least 1 for a fraction above 0) are test, the next
    ones valid, the rest train, each split in file order. It depends on the set of documents kept,
    so the same file, ``min_words`` (and ``max_pages``) and seed give the same splits."""

    def __init__(self, path, docs, seed=0, valid_fraction=0.05, test_fraction=0.05, min_words=20,
                 source="text", options=None, counts=None):
        self.path, self.seed, self.source = os.fspath(path), int(seed), source
        self.valid_fraction = _check_fraction("valid_fraction", valid_fraction)
        self.test_fraction = _check_fraction("test_fraction", test_fraction)
        self.min_words, self.options = int(min_words), dict(options or {})
        self.counts = counts if counts is not None else collections.Counter()
        self._docs, self._tokens = {}, {}
        for doc_id, title, text in docs:
            sentences = split_sentences(text)
            if sum(len(s.split()) for s in sentences) < self.min_words:
                self.counts["short"] += 1
            else:
                self._docs[doc_id] = (title, sentences)
        if not self._docs:
            raise UserError(f"{self.path} has no document of at least min_words={self.min_words} words "
                            f"({self._described_counts()}); give a larger file or a lower min_words")
        ids = sorted(self._docs)
        random.Random(self.seed).shuffle(ids)
        n_test, n_valid = (self._count(f) for f in (self.test_fraction, self.valid_fraction))
        if n_test + n_valid >= len(ids):
            raise UserError(f"{self.path} has {len(ids)} document(s), too few for valid_fraction="
                            f"{self.valid_fraction} and test_fraction={self.test_fraction} to leave a train "
                            "split; lower the fractions or give more text")
        split_of = {i: "test" if k < n_test else "valid" if k < n_test + n_valid else "train"
                    for k, i in enumerate(ids)}
        self.splits = {name: [(i, title) for i, (title, _) in self._docs.items() if split_of[i] == name]
                       for name in SPLITS}

    def _count(self, fraction):
        return max(1, round(len(self._docs) * fraction)) if fraction > 0 else 0

    def _described_counts(self):
        return ", ".join(f"{k}: {v}" for k, v in sorted(self.counts.items())) or "nothing read"

    def _split(self, split):
        if split not in SPLITS:
            raise UserError(f"unknown split {split!r}; choose one of: {', '.join(SPLITS)}")
        return self.splits[split]

    def documents(self, split):
        """The documents of ``split`` ('train', 'valid' or 'test'): lists of sentences."""
        return [self._docs[i][1] for i, _ in self._split(split)]

    def tokens(self, split):
        """The flat token stream of ``split``: each sentence's ``tokenize`` tokens, then ``<eos>``."""
        if split not in self._tokens:
            self._tokens[split] = [t for d in self.documents(split) for s in d for t in tokenize(s) + [EOS]]
        return self._tokens[split]

    def vocabulary(self, min_freq=2, max_size=None):
        """A ``Vocabulary`` of the train split's tokens."""
        return Vocabulary.build(self.tokens("train"), min_freq=min_freq, max_size=max_size)

    def record(self):
        """A JSON-ready description of what was read, for a run's configuration."""
        splits = {}
        for name in SPLITS:
            ids = [i for i, _ in self.splits[name]]
            splits[name] = {"documents": len(ids), "sentences": sum(len(d) for d in self.documents(name)),
                            "tokens": len(self.tokens(name)),
                            "ids_sha256": hashlib.sha256(json.dumps(ids).encode()).hexdigest()}
        return {"source": self.source, **_file_record(self.path), "stripper": STRIPPER_VERSION,
                "seed": self.seed, "valid_fraction": self.valid_fraction, "test_fraction": self.test_fraction,
                "min_words": self.min_words, **self.options, "counts": dict(sorted(self.counts.items())),
                "splits": splits}


class WikipediaCorpus(DocumentCorpus):
    """The articles of a MediaWiki dump (``iter_pages``), one document each, plain text by
    ``strip_markup``; ``max_pages`` stops after that many pages passed the namespace and redirect
    filters (before ``min_words``). ``splits`` lists ``(page_id, title)`` per split."""

    def __init__(self, path, seed=0, valid_fraction=0.05, test_fraction=0.05, min_words=20,
                 namespaces=(0,), max_pages=None):
        counts = collections.Counter()
        namespaces = None if namespaces is None else tuple(int(n) for n in namespaces)
        if max_pages is not None and int(max_pages) < 1:
            raise UserError(f"max_pages must be >= 1 (or None for all), got {max_pages}")

        def docs():
            for n, page in enumerate(_filtered(path, namespaces, True, counts)):
                if max_pages is not None and n >= int(max_pages):
                    return
                counts["passed_filters"] += 1
                if page.page_id is None:
                    raise UserError(f"{path}: page {page.title!r} has no <id>; a MediaWiki export gives "
                                    "every page one")
                yield page.page_id, page.title, strip_markup(page.text)
            if not counts["passed_filters"]:
                raise _no_pages(path, namespaces, counts)

        options = {"namespaces": namespaces and list(namespaces), "max_pages": max_pages}
        super().__init__(path, docs(), seed, valid_fraction, test_fraction, min_words, source="mediawiki",
                         options=options, counts=counts)


@data_reader("UTF-8 text corpus", path="path",
             checks=("the file exists", "utf-8 text, named by line", "documents enough for the splits"))
def text_file_corpus(path, seed=0, valid_fraction=0.05, test_fraction=0.05, min_words=20):
    """A ``DocumentCorpus`` of a UTF-8 text file: one document per block of non-blank lines (blank
    lines between documents), each line a paragraph; a document's id is its first line's number."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise UserError(f"{path} does not exist; give the path of a UTF-8 text file")

    def docs():
        block, start = [], None
        with open(path, "rb") as f:
            for no, raw in enumerate(f, start=1):
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError as exc:
                    raise UserError(f"{path}:{no}: not UTF-8 text ({exc.reason}); save it as UTF-8") from None
                if line:
                    block.append(line)
                    start = start or no
                elif block:
                    yield start, f"{os.path.basename(path)}:{start}", "\n".join(block)
                    block, start = [], None
        if block:
            yield start, f"{os.path.basename(path)}:{start}", "\n".join(block)

    return DocumentCorpus(path, docs(), seed, valid_fraction, test_fraction, min_words, source="text")


# -------------------------------------------------------------------------------------- vocabulary

class Vocabulary:
    """The LM's vocabulary: GluonNLP's ``Vocab`` (``.vocab``) with ``<unk>`` at 0 and ``<eos>`` at 1,
    then the tokens seen at least ``min_freq`` times (at most ``max_size``), most frequent first."""

    def __init__(self, vocab, min_freq=None, max_size=None):
        self.vocab, self.min_freq, self.max_size = vocab, min_freq, max_size

    @classmethod
    def build(cls, tokens, min_freq=2, max_size=None):
        import gluonnlp as nlp
        if int(min_freq) < 1:
            raise UserError(f"min_freq must be >= 1, got {min_freq}")
        counter = nlp.data.count_tokens(t for t in tokens if t != EOS)
        vocab = nlp.Vocab(counter, max_size=max_size, min_freq=int(min_freq), unknown_token=UNK,
                          padding_token=None, bos_token=None, eos_token=EOS)
        return cls(vocab, int(min_freq), max_size)

    def __len__(self):
        return len(self.vocab)

    def to_indices(self, tokens):
        return self.vocab.to_indices(list(tokens))

    def fingerprint(self):
        """``{"size", "sha256"}``: the number of tokens and the hash of the token list in order."""
        tokens = self.vocab.idx_to_token
        return {"size": len(tokens), "sha256": hashlib.sha256("\n".join(tokens).encode("utf-8")).hexdigest()}

    def record(self):
        return {**self.fingerprint(), "min_freq": self.min_freq, "max_size": self.max_size}

    def save(self, path):
        """Write the vocabulary as JSON, atomically."""
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
            json.dump({"format": VOCAB_FORMAT, **self.record(), "vocab": json.loads(self.vocab.to_json())}, f)

    @classmethod
    @data_reader("vocabulary JSON written by Vocabulary.save", path="path", fix="build the vocabulary again",
                 checks=("utf-8 JSON of the vocabulary format", "the token list matches its recorded size and sha256"))
    def load(cls, path):
        import gluonnlp as nlp
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise UserError(f"vocabulary file {path} does not exist")
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            if data.get("format") != VOCAB_FORMAT:
                raise ValueError(f"format {data.get('format')!r}, not {VOCAB_FORMAT!r}")
            vocab = cls(nlp.Vocab.from_json(json.dumps(data["vocab"])), data["min_freq"], data["max_size"])
            stored = (data["size"], data["sha256"])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise UserError(f"{path} is not a vocabulary file written by Vocabulary.save ({exc})") from None
        if stored != (len(vocab), vocab.fingerprint()["sha256"]):
            raise UserError(f"{path}: its token list does not match the size and sha256 recorded in it "
                            "(edited or damaged); build the vocabulary again")
        return vocab

    def check_matches(self, other, other_name="the checkpoint"):
        """Raise a one-line ``UserError`` unless ``other`` (a ``Vocabulary``, a GluonNLP ``Vocab``, a
        ``record()``/``fingerprint()`` dict or a dict holding one under ``"vocabulary"``, e.g. a run's
        config) has this vocabulary's tokens in the same order."""
        if isinstance(other, dict):
            theirs = other["vocabulary"] if isinstance(other.get("vocabulary"), dict) else other
        elif isinstance(other, Vocabulary) or hasattr(other, "idx_to_token"):
            theirs = (other if isinstance(other, Vocabulary) else Vocabulary(other)).fingerprint()
        else:
            raise TypeError(f"cannot compare a vocabulary with {type(other).__name__}")
        ours = self.fingerprint()
        if (theirs.get("size"), theirs.get("sha256")) != (ours["size"], ours["sha256"]):
            raise UserError(
                f"vocabulary mismatch: {other_name}'s has {theirs.get('size')} tokens (sha256 "
                f"{str(theirs.get('sha256'))[:12]}), the data's {ours['size']} "
                f"(sha256 {ours['sha256'][:12]}); build it from the same data with the same min_freq and "
                "max_size, or train from scratch")
