"""BERT pretraining on a MediaWiki dump (``--corpus wikipedia``): documents are the dump's training
pages, so an IsNext pair lies within one page and a NotNext pair takes its second segment from
another page; the script trains both phases of the two-phase config on gensim's bundled dump and
records the corpus in config.json; a bad dump is one line."""
import json
import os
import sys

import pytest

from gluon_suite.nlp.pretrain import PretrainConfig, corpus_documents, prepare_text
from gluon_suite.nlp.pretraining_data import create_instances
from gluon_suite.nlp.text import tokenizer
from gluon_suite.nlp.wikipedia import WikipediaCorpus, gensim_wiki_dump_path
from gluon_suite.utils import run_cli

from ..conftest import load_script

SCRIPT = "scripts/nlp/pretrain_bert.py"
ARTICLES = 8                     # pages w1..w8, every word of page k spelt w<k>x<j>: its page is in its name
TWO_PHASES = ["--config", "configs/nlp/bert_tiny_two_phase.yaml",
              "--phase", "seq_len=32,batch_size=8,steps=3,lr=0.02",
              "--phase", "seq_len=64,batch_size=4,accumulate=2,steps=2,lr=0.01"]


def _page(title, text, ns=0, page_id=1):
    return (f"<page><title>{title}</title><ns>{ns}</ns><id>{page_id}</id>"
            f"<revision><id>{page_id + 1000}</id><text xml:space=\"preserve\">{text}</text></revision></page>")


def write_dump(path):
    """A small MediaWiki export: ARTICLES articles of 5 sentences (30 words, none shared between
    pages; some bold, linked or inside a template that the stripper removes), a redirect and a talk
    page (namespace 1) whose words must never reach the instances."""
    pages = []
    for k in range(1, ARTICLES + 1):
        words = [f"w{k}x{j}" for j in range(30)]
        sents = [" ".join(words[i:i + 6]) for i in range(0, 30, 6)]
        sents[1] = sents[1].replace(words[8], f"'''{words[8]}'''")
        sents[2] = sents[2].replace(words[13], f"[[Target|{words[13]}]]")
        text = "{{Infobox thing|name=zzz}}\n" + " ".join(s[0].upper() + s[1:] + "." for s in sents)
        pages.append(_page(f"Article {k}", text, page_id=10 * k))
    pages.append(_page("Redirected", "#REDIRECT [[Article 1]]", page_id=500))
    pages.append(_page("Talk:Article 1", "Talkword one two three. " * 10, ns=1, page_id=600))
    path.write_text("<mediawiki xmlns=\"http://www.mediawiki.org/xml/export-0.10/\" xml:lang=\"en\">"
                    + "".join(pages) + "</mediawiki>", encoding="utf-8")
    return str(path)


def pairs(cfg, out, seq_len=32):
    """The (segment A, segment B, is_next) word lists of the instances a phase of ``cfg`` builds,
    with the masked tokens put back, and the vocabulary."""
    docs, _ = corpus_documents(cfg)
    tok_docs, vocab = prepare_text(cfg, str(out), 0, lambda m: None, docs)
    data = create_instances(tok_docs, vocab, seq_len, seed=cfg.seed)
    rows = []
    for n in range(len(data["nsp_labels"])):
        ids = list(data["input_ids"][n, :data["valid_length"][n]])
        for pos, orig, w in zip(data["masked_positions"][n], data["masked_ids"][n], data["masked_weights"][n]):
            if w:
                ids[pos] = orig
        types = data["token_types"][n]
        words = [vocab.idx_to_token[i] for i in ids]
        a = [t for t, ty in zip(words, types) if ty == 0 and t not in ("[CLS]", "[SEP]")]
        b = [t for t, ty in zip(words, types) if ty == 1 and t != "[SEP]"]
        rows.append((a, b, int(data["nsp_labels"][n])))
    return rows, vocab


def test_pairs_of_a_handwritten_dump_come_from_the_right_pages(tmp_path):
    dump = write_dump(tmp_path / "wiki.xml")
    cfg = PretrainConfig.from_dict({"corpus": "wikipedia", "data_path": dump, "min_freq": 1, "seed": 3,
                                    "out": str(tmp_path / "run")})
    train = {t for _, t in WikipediaCorpus(dump, seed=3).splits["train"]}
    assert len(train) == ARTICLES - 2   # one page each held out as valid and test
    train_pages = {int(t.split()[1]) for t in train}
    rows, vocab = pairs(cfg, tmp_path)
    assert all(f"w{k}x0" in vocab.token_to_idx for k in train_pages)   # whole words: each names its page

    def page_of(words):
        pages = {int(w[1:w.index("x")]) for w in words}
        assert len(pages) == 1, words      # a segment never spans two pages
        return pages.pop()

    seen = {0: set(), 1: set()}
    for a, b, is_next in rows:
        a, b = [w for w in a if w != "."], [w for w in b if w != "."]   # the sentences' full stops
        assert all(w.startswith("w") and "x" in w for w in a + b), (a, b)   # no markup, redirect or talk words
        pa, pb = page_of(a), page_of(b)
        assert pa in train_pages and pb in train_pages, (pa, pb)
        if is_next:
            assert pa == pb, (a, b)
            assert max(int(w.split("x")[1]) for w in a) < min(int(w.split("x")[1]) for w in b)   # B follows A
        else:
            assert pa != pb, (a, b)
        seen[is_next].add(pa)
    assert len(seen[0]) >= 3 and len(seen[1]) >= 3, seen   # both kinds, from several pages


def _find(stream, span):
    """Whether ``span`` (token list) occurs contiguously in ``stream`` (token list)."""
    return f" {' '.join(span)} " in f" {' '.join(stream)} "


def test_pairs_of_gensims_dump_lie_within_a_page_or_across_two(tmp_path):
    cfg = PretrainConfig.from_dict({"corpus": "wikipedia", "max_pages": 8, "out": str(tmp_path / "run")})
    rows, vocab = pairs(cfg, tmp_path, seq_len=64)
    # the pages' token streams, from the corpus read on its own
    tok = tokenizer(vocab)
    streams = [[t for s in d for t in tok(s)] for d in WikipediaCorpus(gensim_wiki_dump_path(), max_pages=8)
               .documents("train")]
    assert len(streams) == 6
    labels = [r[2] for r in rows]
    assert 0.3 < sum(labels) / len(labels) < 0.7
    for a, b, is_next in rows[:300]:
        in_a = {i for i, s in enumerate(streams) if _find(s, a)}
        in_b = {i for i, s in enumerate(streams) if _find(s, b)}
        assert in_a and in_b, (a, b)
        if is_next:
            assert in_a & in_b, (a, b)
        else:
            assert in_b - in_a, (a, b)   # B is text of a page other than A's


def test_script_trains_both_phases_on_the_dump_and_records_it(tmp_path, capsys):
    out = tmp_path / "run"
    main = load_script(SCRIPT).main
    assert main(["--corpus", "wikipedia", "--max-pages", "6", "--out", str(out), "--no-progress"]
                + TWO_PHASES) == 0
    printed = capsys.readouterr().out
    assert "wikipedia: enwiki-latest-pages-articles1" in printed and "4 training pages" in printed
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [(r["phase"], r["seq_len"]) for r in log] == [(1, 32)] * 3 + [(2, 64)] * 2
    cfg = json.loads((out / "config.json").read_text())
    rec = cfg["corpus_record"]
    assert cfg["corpus"] == "wikipedia" and cfg["max_pages"] == 6
    assert rec["source"] == "mediawiki" and rec["file"] == os.path.basename(gensim_wiki_dump_path())
    assert rec["max_pages"] == 6 and rec["splits"]["train"]["documents"] == 4 and len(rec["sha256"]) == 64
    assert cfg["vocab_size"] == len((out / "vocab.txt").read_text().splitlines())

    # a user's dump through --data-path: recorded by its name and hash
    dump = write_dump(tmp_path / "mine.xml")
    assert main(["--corpus", "wikipedia", "--data-path", dump, "--min-freq", "1", "--out", str(tmp_path / "r2"),
                 "--no-progress", "--phase", "seq_len=32,batch_size=4,steps=1,lr=0.01"]) == 0
    rec = json.loads((tmp_path / "r2" / "config.json").read_text())["corpus_record"]
    assert rec["file"] == "mine.xml" and rec["splits"]["train"]["documents"] == ARTICLES - 2


@pytest.mark.parametrize("args, words", [
    (["--corpus", "wikipedia", "--data-path", "{T}/none.xml.bz2"], ["--data-path", "none.xml.bz2", "does not exist"]),
    (["--corpus", "wikipedia", "--data-path", "{T}/text.txt"], ["text.txt", "not well-formed XML", "MediaWiki"]),
    (["--corpus", "wikipedia", "--data-path", "{T}/other.xml"], ["other.xml", "not a MediaWiki export"]),
    (["--data-path", "{T}/text.txt"], ["--data-path", "--corpus wikipedia"]),
    (["--corpus", "gensim:head500", "--max-pages", "3"], ["--max-pages", "--corpus wikipedia"]),
    (["--corpus", "wikipedia", "--max-pages", "2"], ["--max-pages 2", "2 training pages", "--max-pages 4"]),
])
def test_a_bad_dump_is_one_line(tmp_path, capfd, monkeypatch, args, words):
    (tmp_path / "text.txt").write_text("One sentence here.\nAnother one.\n\nA second document.\n", encoding="utf-8")
    (tmp_path / "other.xml").write_text("<html><body>hi</body></html>", encoding="utf-8")
    argv = [a.replace("{T}", str(tmp_path)) for a in args] + [
        "--out", str(tmp_path / "o"), "--no-progress", "--phase", "seq_len=32,batch_size=4,steps=1,lr=0.01"]
    monkeypatch.setattr(sys, "argv", ["pretrain_bert.py", *argv])
    capfd.readouterr()
    with pytest.raises(SystemExit) as ei:
        run_cli(load_script(SCRIPT).main, argv)
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert ei.value.code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert all(w.replace("{T}", str(tmp_path)) in lines[0] for w in words), lines[0]
    assert not (tmp_path / "o").exists()   # refused before anything was written
