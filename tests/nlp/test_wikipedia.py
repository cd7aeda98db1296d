"""MediaWiki dumps as language-model data (gluon_suite/nlp/wikipedia.py, wikitext.py): a small export
written here with every kind of markup and the exact plain text expected of it, gensim's real English
Wikipedia dump (counted independently with a plain scan of the XML), the splits, the vocabulary, and
every kind of bad input as a one-line error naming the file."""
import bz2
import hashlib
import json
import os
import re
from xml.sax.saxutils import escape

import pytest

from gluon_suite.nlp.wikipedia import (EOS, STRIPPER_VERSION, Page, UNK, Vocabulary, WikipediaCorpus,
                                       gensim_wiki_dump_path, iter_pages, split_sentences, strip_markup,
                                       text_file_corpus, tokenize)
from gluon_suite.utils.errors import UserError

AARDVARK = """{{Infobox animal|name={{lang|af|Erdvark}}|image=x.jpg}}
'''Aardvark''' (''Orycteropus afer''){{sfn|Smith|2001}} is a [[mammal]] native to [[Africa|the African \
continent]].<ref name="a">A cited book, p. 4.</ref> It eats ants.<ref name="a" /><!-- a hidden
note -->
[[File:Aardvark.jpg|thumb|An aardvark in a [[zoo]] at [[Night (time)|night]].]]
{| class="wikitable"
|-
! Name !! Weight
|-
| Adult || {{convert|60|kg}}
|}
It weighs about 60&nbsp;kg &ndash; as much as a [[man]]{{mdash}}or [[Woman|a woman]].

== Diet ==
<b>Ants</b> and termites are its main food; see [http://example.org the diet page].[http://example.org/x]
[[Category:Mammals]]
[[de:Erdferkel]]"""
AARDVARK_TEXT = ("Aardvark (Orycteropus afer) is a mammal native to the African continent. It eats ants.\n"
                 "It weighs about 60 kg \u2013 as much as a man\u2014or a woman.\n"
                 "Ants and termites are its main food; see the diet page.")
ANTS = """__NOTOC__
Ants are [[insect]]s.{{citation needed|date=2020}} Dr. Smith counted e.g. 12 kinds of U.S. Army ants. \
They are small.
* '''Red''' ants
* ''Black'' ants<br/>of [[Europe]]
# numbered item
: indented remark
----
== See also ==
* [[Termite]]
== References ==
{{Reflist}}
"""
ANTS_TEXT = ("Ants are insects. Dr. Smith counted e.g. 12 kinds of U.S. Army ants. They are small.\n"
             "Red ants\nBlack ants of Europe\nnumbered item\nindented remark")
ANTS_SENTENCES = ["Ants are insects.", "Dr. Smith counted e.g. 12 kinds of U.S. Army ants.",
                  "They are small.", "Red ants", "Black ants of Europe", "numbered item", "indented remark"]


def _page(title, ns, pid, text, redirect=None):
    ns_line = "" if ns is None else f"<ns>{ns}</ns>"
    red = f'<redirect title="{escape(redirect)}" />' if redirect else ""
    return (f"  <page>\n    <title>{escape(title)}</title>{ns_line}<id>{pid}</id>{red}\n"
            f"    <revision><id>{pid * 100}</id>"
            f"<text xml:space=\"preserve\">{escape(text)}</text></revision>\n"
            "  </page>\n")


def _dump(pages, schema="0.11"):
    return (f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-{schema}/" version="{schema}">\n'
            "  <siteinfo><sitename>Testwiki</sitename></siteinfo>\n" + "".join(pages) + "</mediawiki>\n")


SMALL = [("Aardvark test", 0, 12, AARDVARK, None),
         ("Old name", 0, 13, "#REDIRECT [[Aardvark test]]", "Aardvark test"),
         ("Talk:Aardvark test", 1, 14, "A talk page about the article, with enough words to count.", None),
         ("Ant lists", 0, 20, ANTS, None), ("Older redirect", 0, 21, "#redirect [[Ant lists]]", None)]


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.xml"
    path.write_text(_dump([_page(*p) for p in SMALL]), encoding="utf-8")
    return path


def _error(call, *args, **kw):
    with pytest.raises(UserError) as info:
        result = call(*args, **kw)
        list(result) if hasattr(result, "__next__") else result
    msg = str(info.value)
    assert "\n" not in msg, msg
    return msg


# ------------------------------------------------------------------------------- the small export

def test_small_dump_pages_and_their_exact_plain_text(small):
    pages = list(iter_pages(small))
    assert pages == [Page("Aardvark test", 12, AARDVARK), Page("Ant lists", 20, ANTS)]
    assert [strip_markup(p.text) for p in pages] == [AARDVARK_TEXT, ANTS_TEXT]
    assert split_sentences(ANTS_TEXT) == ANTS_SENTENCES
    assert split_sentences(AARDVARK_TEXT)[:2] == [
        "Aardvark (Orycteropus afer) is a mammal native to the African continent.", "It eats ants."]


def test_namespaces_and_redirects_are_filters(small):
    titles = lambda **kw: [p.title for p in iter_pages(small, **kw)]  # noqa: E731
    assert titles(namespaces=(0, 1)) == ["Aardvark test", "Talk:Aardvark test", "Ant lists"]
    assert titles(skip_redirects=False) == ["Aardvark test", "Old name", "Ant lists", "Older redirect"]
    assert titles(namespaces=None, skip_redirects=False) == [t for t, *_ in SMALL]
    assert titles(namespaces=(1,)) == ["Talk:Aardvark test"]


def test_any_schema_version_compressed_or_not_and_pages_without_ns(tmp_path):
    old = _dump([_page("Ant lists", None, 20, ANTS)], schema="0.3")   # before 0.6 there was no <ns>
    (tmp_path / "old.xml.bz2").write_bytes(bz2.compress(old.encode()))
    assert [p.title for p in iter_pages(tmp_path / "old.xml.bz2")] == ["Ant lists"]
    plain = old.replace(' xmlns="http://www.mediawiki.org/xml/export-0.3/"', "")
    (tmp_path / "plain.xml").write_text(plain, encoding="utf-8")
    assert [strip_markup(p.text) for p in iter_pages(tmp_path / "plain.xml")] == [ANTS_TEXT]


@pytest.mark.parametrize("wikitext,text", [
    ("a {{x|{{y|{{z}}}}|w}} b", "a b"),                              # nested templates
    ("a {{unclosed b", "a unclosed b"),                              # an opener never closed is dropped
    ("a }} b ]] c", "a b c"),                                        # so is a closer never opened
    ("{{a|\n{|\n| x\n|}\n}}\nText", "Text"),                        # a table inside a template
    ("{|\n| {{b|c}}\n|-\n| d\n|}\nText", "Text"),                    # a template inside a table
    ("{{a\n|x=1\n|}}\nText", "Text"),                                # '|}}' ends a template, not a table
    ("[[Image:x.png|left|A [[a|b]] more [[c]] [[File:y.png|[[d]]]]]] after", "after"),
    ("[[Paris (band)|]] and [[:Category:Mammals]]", "Paris and Category:Mammals"),
    ("[[wikt:fish|fish]] [[Foo#Bar|baz]] [[simple:Ant]] [[fr:Fourmi]]", "fish baz"),
    ("a<ref>x [[y]] {{z}}</ref>b<ref name=q/>c<REF group=n>d</REF>", "abc"),
    ("x <math>y^2</math> z<!-- never closed", "x z"),
    ("'''''both''''' <span style=\"c\">kept</span> R&amp;D&nbsp;&lt;x&gt;", "both kept R&D <x>"),
    ("= Title =\n=== Sub ===\nText __TOC__ more", "Text more"),
    ("[https://example.org/a b c] and [//example.org]", "b c and"),
    ("Einstein ({{IPAc-en|a}}; {{IPA-de|b}}; 14 March 1879) was", "Einstein (14 March 1879) was"),
])
def test_strip_markup_cases(wikitext, text):
    assert strip_markup(wikitext) == text


def test_reference_sections_are_dropped_unless_asked_to_keep_them():
    wikitext = ("Body.\n== History ==\nOld.\n== External links ==\n* [http://x Site]\n=== Sub ===\nY\n"
                "== Later ==\nZ")
    assert strip_markup(wikitext) == "Body.\nOld.\nZ"
    assert strip_markup(wikitext, drop_sections=()) == "Body.\nOld.\nSite\nY\nZ"


def test_sentences_and_tokens():
    assert split_sentences('He said "Go." Then he left! Was it 5 p.m.? Yes. J. R. R. Tolkien wrote, i.e. '
                           "Mr. Bilbo. (Aside.) 1990 came.") == [
        'He said "Go."', "Then he left!", "Was it 5 p.m.?", "Yes.",
        "J. R. R. Tolkien wrote, i.e. Mr. Bilbo.", "(Aside.)", "1990 came."]
    assert split_sentences("one line\nand another") == ["one line", "and another"]
    import gluonnlp as nlp
    sentence = "Ants, in Zürich's U.S.-style \"parks\" (2020)!"
    assert tokenize(sentence) == nlp.data.BERTBasicTokenizer(lower=True)(sentence)
    assert tokenize(sentence)[:4] == ["ants", ",", "in", "zurich"]


def test_small_corpus_tokens_and_record(small):
    corpus = WikipediaCorpus(small, valid_fraction=0, test_fraction=0, min_words=5)
    assert corpus.splits == {"train": [(12, "Aardvark test"), (20, "Ant lists")], "valid": [], "test": []}
    assert corpus.documents("train")[1] == ANTS_SENTENCES
    tokens = corpus.tokens("train")
    assert tokens[:8] == ["aardvark", "(", "orycteropus", "afer", ")", "is", "a", "mammal"]
    assert tokens.count(EOS) == 4 + len(ANTS_SENTENCES) and tokens[-1] == EOS
    rec = json.loads(json.dumps(corpus.record()))
    assert rec["file"] == "small.xml" and rec["sha256"] == hashlib.sha256(small.read_bytes()).hexdigest()
    assert rec["counts"] == {"pages": 5, "other_namespaces": 1, "redirects": 2, "passed_filters": 2}
    assert rec["splits"]["train"]["documents"] == 2 and rec["splits"]["train"]["tokens"] == len(tokens)
    assert rec["stripper"] == STRIPPER_VERSION and rec["seed"] == 0 and rec["namespaces"] == [0]
    # the short page falls under min_words, and is counted as such
    counts = WikipediaCorpus(small, valid_fraction=0, test_fraction=0, min_words=30).record()["counts"]
    assert counts["short"] == 1


# ---------------------------------------------------------------------------- gensim's real dump

@pytest.fixture(scope="module")
def real():
    path = gensim_wiki_dump_path()
    with bz2.open(path, "rt", encoding="utf-8") as f:
        xml = f.read()
    blocks = re.findall(r"<page>(.*?)</page>", xml, re.S)
    articles = [re.search(r"<title>(.*?)</title>", b).group(1) for b in blocks
                if "<ns>0</ns>" in b and "<redirect" not in b]
    return path, xml, blocks, articles


@pytest.fixture(scope="module")
def real_corpus(real):
    return WikipediaCorpus(real[0], seed=0)


def test_real_dump_page_counts_and_titles(real):
    path, xml, blocks, articles = real
    assert len(blocks) == xml.count("<page>") == 206 and len(articles) == 106
    assert sum(1 for _ in iter_pages(path, namespaces=None, skip_redirects=False)) == len(blocks)
    pages = list(iter_pages(path))
    assert [p.title for p in pages] == articles
    assert len({p.page_id for p in pages}) == len(pages)
    titles = {p.title for p in pages}
    assert {"Anarchism", "Albert Einstein", "Aardvark", "Apollo 11", "Algorithm"} <= titles
    assert "AccessibleComputing" not in titles          # the dump's first page, a redirect


def test_real_dump_has_no_markup_left(real):
    words = 0
    for page in iter_pages(real[0]):
        text = strip_markup(page.text)
        for left in ("{{", "}}", "[[", "]]", "<ref", "</ref", "{|", "<!--", "&nbsp;", "'''", "__TOC__"):
            at = text.find(left)
            assert at < 0, (page.title, left, text[max(0, at - 80):at + 80])
        words += len(text.split())
    assert 350_000 < words < 550_000
    einstein = next(p for p in iter_pages(real[0]) if p.title == "Albert Einstein")
    assert split_sentences(strip_markup(einstein.text))[0] == (
        "Albert Einstein (14 March 1879 \u2013 18 April 1955) was a German-born theoretical physicist.")


def test_the_first_pages_alone_are_read_without_reading_the_rest(real):
    corpus = WikipediaCorpus(real[0], max_pages=10, valid_fraction=0.1, test_fraction=0.1)
    blocks = real[2]
    eleventh = [k for k, b in enumerate(blocks) if "<ns>0</ns>" in b and "<redirect" not in b][10]
    # reading stops at the 11th article: the pages before it were read, nothing after
    assert corpus.record()["counts"] == {"pages": eleventh + 1, "passed_filters": 10,
                                         "redirects": sum("<redirect" in b for b in blocks[:eleventh])}
    assert sorted(t for s in corpus.splits.values() for _, t in s) == sorted(real[3][:10])


def test_real_splits_are_fixed_by_the_seed_disjoint_and_complete(real, real_corpus):
    ids = {name: [i for i, _ in pages] for name, pages in real_corpus.splits.items()}
    assert [len(ids[s]) for s in ("train", "valid", "test")] == [96, 5, 5]
    assert set(ids["train"]).isdisjoint(ids["valid"]) and set(ids["train"]).isdisjoint(ids["test"])
    assert set(ids["valid"]).isdisjoint(ids["test"])
    assert sorted(t for s in real_corpus.splits.values() for _, t in s) == sorted(real[3])
    again = WikipediaCorpus(real[0], seed=0)
    assert again.splits == real_corpus.splits and again.record() == real_corpus.record()
    other = WikipediaCorpus(real[0], seed=1)
    assert other.splits["test"] != real_corpus.splits["test"]
    rec = json.loads(json.dumps(real_corpus.record()))
    assert rec["file"] == os.path.basename(real[0]) and rec["sha256_of"] == "whole file"
    assert rec["counts"]["pages"] == 206 and rec["counts"]["redirects"] == 99
    for name in ("train", "valid", "test"):
        tokens = real_corpus.tokens(name)
        assert rec["splits"][name]["tokens"] == len(tokens)
        sentences = sum(map(len, real_corpus.documents(name)))
        assert tokens.count(EOS) == rec["splits"][name]["sentences"] == sentences
    assert rec["splits"]["train"]["tokens"] > 400_000


def test_vocabulary_round_trip_and_mismatch(real_corpus, tmp_path):
    vocab = real_corpus.vocabulary(min_freq=2)
    assert vocab.vocab.idx_to_token[:2] == [UNK, EOS] and 10_000 < len(vocab) < 30_000
    ids = vocab.to_indices(["the", "zzzz-never-seen", EOS])
    assert ids[1] == 0 and ids[2] == 1 and ids[0] > 1
    vocab.save(tmp_path / "vocab.json")
    back = Vocabulary.load(tmp_path / "vocab.json")
    assert back.vocab.idx_to_token == vocab.vocab.idx_to_token and back.record() == vocab.record()
    back.check_matches(vocab)
    back.check_matches(vocab.vocab)
    back.check_matches({"vocabulary": vocab.record()})          # as a run's config would hold it
    smaller = real_corpus.vocabulary(min_freq=3)
    assert "vocabulary mismatch" in _error(smaller.check_matches, {"vocabulary": vocab.record()})
    assert "vocabulary mismatch" in _error(vocab.check_matches, smaller)
    capped = real_corpus.vocabulary(min_freq=2, max_size=100)
    assert len(capped) == 102 and "vocabulary mismatch" in _error(capped.check_matches, vocab.fingerprint())


# ------------------------------------------------------------------------------------- bad input

def test_bad_inputs_name_the_file_on_one_line(real, small, tmp_path):
    path, xml = real[0], real[1]
    missing = tmp_path / "missing.xml.bz2"
    assert str(missing) in _error(iter_pages, missing)
    assert "does not exist" in _error(WikipediaCorpus, missing)
    text = tmp_path / "notes.xml"
    text.write_text("These are notes, not a dump.\n")
    assert "not well-formed XML" in _error(iter_pages, text) and str(text) in _error(WikipediaCorpus, text)
    half = tmp_path / "half.xml.bz2"
    data = open(path, "rb").read()
    half.write_bytes(data[:len(data) // 2])
    assert "cut short" in _error(iter_pages, half) and str(half) in _error(WikipediaCorpus, half)
    cut_xml = tmp_path / "cut.xml"
    cut_xml.write_text(xml[:len(xml) // 2], encoding="utf-8")
    assert "not well-formed XML" in _error(iter_pages, cut_xml)
    garbage = tmp_path / "garbage.xml.bz2"
    garbage.write_bytes(b"BZh9" + bytes(range(256)) * 4)
    assert "could not be decompressed" in _error(iter_pages, garbage)
    html = tmp_path / "page.xml"
    html.write_text("<html><body><p>Hi</p></body></html>")
    assert "not a MediaWiki export" in _error(iter_pages, html)
    empty = tmp_path / "empty.xml"
    empty.write_text(_dump([]))
    assert "no pages left" in _error(iter_pages, empty) and str(empty) in _error(WikipediaCorpus, empty)
    talk = tmp_path / "talk_only.xml.bz2"
    talk.write_bytes(bz2.compress(_dump([_page(*SMALL[1]), _page(*SMALL[2])]).encode()))
    assert "1 redirect(s)" in _error(iter_pages, talk) and "no pages left" in _error(WikipediaCorpus, talk)
    assert "min_words=1000" in _error(WikipediaCorpus, small, min_words=1000)
    assert "too few" in _error(WikipediaCorpus, small, min_words=5, valid_fraction=0.5, test_fraction=0.3)
    assert "valid_fraction" in _error(WikipediaCorpus, small, valid_fraction=1.5)
    assert "max_pages" in _error(WikipediaCorpus, small, max_pages=0)
    with pytest.raises(UserError, match="unknown split"):
        WikipediaCorpus(small, valid_fraction=0, test_fraction=0, min_words=5).tokens("dev")


def test_bad_vocabulary_files(real_corpus, tmp_path):
    assert "does not exist" in _error(Vocabulary.load, tmp_path / "none.json")
    (tmp_path / "junk.json").write_text("{not json")
    assert "not a vocabulary file" in _error(Vocabulary.load, tmp_path / "junk.json")
    vocab = real_corpus.vocabulary(min_freq=50)
    vocab.save(tmp_path / "v.json")
    data = json.loads((tmp_path / "v.json").read_text())
    a, b = data["vocab"]["idx_to_token"][5:7]                    # two tokens trade places
    index = data["vocab"]["token_to_idx"]
    index[a], index[b] = index[b], index[a]
    (tmp_path / "v.json").write_text(json.dumps(data))
    assert "edited or damaged" in _error(Vocabulary.load, tmp_path / "v.json")


# ------------------------------------------------------------------------------------ text files

def test_text_file_corpus_has_the_same_interface(tmp_path):
    path = tmp_path / "docs.txt"
    docs = [f"Document {k} starts here. It has a second sentence.\nAnd a second paragraph, number {k}."
            for k in range(8)]
    path.write_text("\n\n\n".join(docs) + "\n", encoding="utf-8")
    corpus = text_file_corpus(path, seed=3, valid_fraction=0.25, test_fraction=0.125, min_words=5)
    assert [len(corpus.splits[s]) for s in ("train", "valid", "test")] == [5, 2, 1]
    first = [i for s in corpus.splits.values() for i, _ in s]
    assert sorted(first) == [1 + 4 * k for k in range(8)]       # a document's id: its first line
    doc = corpus.documents("test")[0]
    assert len(doc) == 3 and doc[1] == "It has a second sentence."
    assert corpus.tokens("test").count(EOS) == 3 and corpus.record()["source"] == "text"
    again = text_file_corpus(path, seed=3, valid_fraction=0.25, test_fraction=0.125, min_words=5)
    assert again.splits == corpus.splits
    (tmp_path / "latin1.txt").write_bytes("Tea.\n\ncaf\xe9 au lait\n".encode("latin-1"))
    assert "latin1.txt:3: not UTF-8" in _error(text_file_corpus, tmp_path / "latin1.txt", min_words=1)
    assert "does not exist" in _error(text_file_corpus, tmp_path / "nope.txt")
