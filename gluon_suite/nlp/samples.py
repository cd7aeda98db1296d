"""Small language data sets of our own in the published formats, so that every documented
fine-tuning command runs without a download: SQuAD v1.1 JSON (``train-v1.1.json``,
``dev-v1.1.json``), SQuAD v2.0 JSON with unanswerable questions (``train-v2.0.json``,
``dev-v2.0.json``) and GLUE-style TSVs with a header row (``train.tsv``, ``dev.tsv``, MRPC's
columns ``sentence1``, ``sentence2``, ``label``). Sentences are built from a fixed seed out of a
few templates, with labels that follow from the text."""
import json
import os

import numpy as np

from ..utils.fileio import atomic_write

_PEOPLE = ["Ada", "Boris", "Chen", "Dana", "Emil", "Farah", "Goran", "Hana", "Ivo", "Jana"]
_CITIES = ["Lisbon", "Oslo", "Quito", "Hanoi", "Lima", "Accra", "Perth", "Riga", "Turin", "Kyoto"]
_THINGS = ["bridges", "violins", "gardens", "engines", "maps", "clocks", "boats", "lamps"]
SQUAD_README = ("Synthetic SQuAD samples written by `gluon-suite samples`: our own invented paragraphs and "
                "questions in the SQuAD v1.1 (train-v1.1.json, dev-v1.1.json) and v2.0 (train-v2.0.json, "
                "dev-v2.0.json, with unanswerable questions) JSON layouts. Not SQuAD data.\n")


def _facts(rs):
    """A paragraph's person, city, thing and year, drawn from ``rs``."""
    who, city, thing = rs.choice(_PEOPLE), rs.choice(_CITIES), rs.choice(_THINGS)
    return who, city, thing, int(rs.randint(1850, 2000))


def _paragraph(rs, idx, facts=None):
    who, city, thing, year = facts or _facts(rs)
    context = (f"{who} was born in {city} in {year}. As a young adult {who} moved abroad and "
               f"became known for building {thing}. Critics in {city} praised the {thing} for "
               f"their simple design.")
    qas = [(f"Where was {who} born?", city), (f"When was {who} born?", str(year)),
           (f"What did {who} build?", thing)]
    return {"context": context,
            "qas": [{"id": f"q{idx}-{k}", "question": q,
                     "answers": [{"text": a, "answer_start": context.index(a)}]}
                    for k, (q, a) in enumerate(qas)]}


def write_squad(folder, train=40, dev=10, seed=0):
    """``train-v1.1.json`` and ``dev-v1.1.json`` in ``folder``: SQuAD v1.1 (version, data[].title,
    paragraphs[].context, qas[].id/question/answers[].text/answer_start), three questions per
    paragraph, every answer at its character offset. The SQuAD 2.0 files are written beside them
    (``write_squad2``). Returns the two v1.1 paths."""
    rs = np.random.RandomState(seed)
    os.makedirs(folder, exist_ok=True)
    paths = []
    for split, n in (("train", train), ("dev", dev)):
        paras = [_paragraph(rs, f"{split}{i}") for i in range(n)]
        doc = {"version": "1.1", "data": [{"title": f"sample_{split}", "paragraphs": paras}]}
        path = os.path.join(folder, f"{split}-v1.1.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        paths.append(path)
    write_squad2(folder, train, dev, seed + 1)
    return paths


def _unanswerable(rs, context, facts, idx):
    """Two SQuAD 2.0 questions that ``context`` (written from ``facts``) does not answer, each with
    the ``plausible_answers`` a careless reader would give (a span of the same kind that answers
    something else)."""
    who, city, thing, year = facts[0], facts[1], facts[2], str(facts[3])
    other = rs.choice([p for p in _PEOPLE if p != who])
    qas = [(f"Where was {other} born?", city), (f"When did {who} die?", year), (f"What did {who} sell?", thing)]
    picked = rs.choice(len(qas), 2, replace=False)
    return [{"id": f"q{idx}-n{k}", "question": qas[k][0], "is_impossible": True, "answers": [],
             "plausible_answers": [{"text": qas[k][1], "answer_start": context.index(qas[k][1])}]}
            for k in sorted(picked)]


def write_squad2(folder, train=40, dev=10, seed=1):
    """``train-v2.0.json`` and ``dev-v2.0.json`` in ``folder``: SQuAD v2.0, the v1.1 layout plus
    unanswerable questions (``is_impossible: true``, empty ``answers``, ``plausible_answers``): per
    paragraph the three answerable questions of the v1.1 sample (``is_impossible: false``) and two
    that it does not answer; and a README.txt saying the text is synthetic. Returns the two
    paths."""
    rs = np.random.RandomState(seed)
    os.makedirs(folder, exist_ok=True)
    paths = []
    for split, n in (("train", train), ("dev", dev)):
        paras = []
        for i in range(n):
            facts = _facts(rs)
            para = _paragraph(rs, f"{split}{i}", facts)
            for qa in para["qas"]:
                qa["is_impossible"] = False
            para["qas"] += _unanswerable(rs, para["context"], facts, f"{split}{i}")
            paras.append(para)
        doc = {"version": "v2.0", "data": [{"title": f"synthetic_sample_{split}", "paragraphs": paras}]}
        paths.append(os.path.join(folder, f"{split}-v2.0.json"))
        atomic_write(paths[-1], json.dumps(doc, indent=1) + "\n")
    atomic_write(os.path.join(folder, "README.txt"), SQUAD_README)
    return paths


def write_glue_pairs(folder, train=64, dev=32, seed=0):
    """``train.tsv`` and ``dev.tsv`` in ``folder``, MRPC-style (header ``label``, ``sentence1``,
    ``sentence2``, tab-separated): label 1 when the second sentence restates the first with the same
    person and city, 0 when either differs. Returns the two paths."""
    rs = np.random.RandomState(seed)
    os.makedirs(folder, exist_ok=True)
    paths = []
    for split, n in (("train", train), ("dev", dev)):
        path = os.path.join(folder, f"{split}.tsv")
        with open(path, "w", encoding="utf-8") as f:
            f.write("label\tsentence1\tsentence2\n")
            for i in range(n):
                who, city = rs.choice(_PEOPLE), rs.choice(_CITIES)
                same = i % 2 == 0
                who2 = who if same or rs.rand() < 0.5 else rs.choice([p for p in _PEOPLE if p != who])
                city2 = city if same or who2 != who else rs.choice([c for c in _CITIES if c != city])
                f.write(f"{int(same)}\t{who} lives in {city} .\tThe home of {who2} is {city2} .\n")
        paths.append(path)
    return paths
