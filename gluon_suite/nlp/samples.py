"""Small language data sets of our own in the published formats, so that every documented
fine-tuning command runs without a download: SQuAD v1.1 JSON (``train-v1.1.json``,
``dev-v1.1.json``) and GLUE-style TSVs with a header row (``train.tsv``, ``dev.tsv``, MRPC's
columns ``sentence1``, ``sentence2``, ``label``). Sentences are built from a fixed seed out of a
few templates, with labels that follow from the text."""
import json
import os

import numpy as np

_PEOPLE = ["Ada", "Boris", "Chen", "Dana", "Emil", "Farah", "Goran", "Hana", "Ivo", "Jana"]
_CITIES = ["Lisbon", "Oslo", "Quito", "Hanoi", "Lima", "Accra", "Perth", "Riga", "Turin", "Kyoto"]
_THINGS = ["bridges", "violins", "gardens", "engines", "maps", "clocks", "boats", "lamps"]


def _paragraph(rs, idx):
    who, city, thing = rs.choice(_PEOPLE), rs.choice(_CITIES), rs.choice(_THINGS)
    year = int(rs.randint(1850, 2000))
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
    paragraph, every answer at its character offset. Returns the two paths."""
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
