"""Small synthetic GLUE task folders in the official distribution's layouts (``glue.TASKS``), for
trying ``--task_name`` without a download and for testing the readers on the real formats. The
text is our own, built without randomness from a few templates (row ``i`` of every file is the
same on every run), with labels that follow from the text; each folder has a README saying so."""
import os

_PEOPLE = ["Ada", "Boris", "Chen", "Dana", "Emil", "Farah", "Goran", "Hana", "Ivo", "Jana"]
_CITIES = ["Lisbon", "Oslo", "Quito", "Hanoi", "Lima", "Accra", "Perth", "Riga", "Turin", "Kyoto"]
_THINGS = ["bridges", "violins", "gardens", "engines", "maps", "clocks", "boats", "lamps"]
README = ("Synthetic {task} sample written by `gluon-suite samples`: our own invented sentences in the "
          "file layout of the official GLUE distribution's {task} folder. Not GLUE data.\n")
MNLI_TRAIN = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
              "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "gold_label"]
MNLI_DEV = MNLI_TRAIN[:11] + ["label2", "label3", "label4", "label5", "gold_label"]
STSB = ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1", "sentence2", "score"]


def _facts(i):
    return _PEOPLE[i % 10], _CITIES[(3 * i + 1) % 10], _THINGS[(5 * i + 2) % 8]


def _other(name, pool, i):
    return [p for p in pool if p != name][i % (len(pool) - 1)]


def _rows(task, i, split):
    """Row ``i`` of ``task``'s ``split`` file: a list of column values."""
    who, city, thing = _facts(i + (100 if split != "train" else 0))
    lab = i % 2
    city2 = city if lab else _other(city, _CITIES, i)
    if task == "CoLA":
        sent = f"{who} repairs old {thing} in {city} ." if lab else f"{who} old {thing} repairs in {city} the ."
        return [f"syn{i % 3:02d}", str(lab), "" if lab else "*", sent]
    if task == "SST-2":
        return [f"the film about {who} and the {thing} was {'wonderful' if lab else 'dull'} ", str(lab)]
    if task == "MRPC":
        return [str(lab), str(1000 + 2 * i), str(1001 + 2 * i), f"{who} lives in {city} .",
                f"The home of {who} is {city2} ."]
    if task == "STS-B":
        score = (i % 6) * 0.8 + 0.2 * (i % 2)
        same = ["builds", "repairs", "sells", "paints", "keeps", "draws"][: i % 6]
        rest = " ".join(same) or "ignores"
        return [str(i), "main-captions", "synthetic", "2026", f"{i:04d}", "none", "none",
                f"{who} builds repairs sells paints keeps draws {thing} .", f"{who} {rest} {thing} .",
                f"{score:.3f}"]
    if task == "QQP":
        return [str(i), str(2 * i + 1), str(2 * i + 2), f"Where does {who} live in {city} ?",
                f"Does {who} live in {city2} ?", str(lab)]
    if task == "MNLI":
        gold = ("contradiction", "entailment", "neutral")[i % 3]
        s2 = {"contradiction": f"{who} has never been to {city} .", "entailment": f"{who} was in {city} .",
              "neutral": f"{who} liked the {thing} ."}[gold]
        s1 = f"{who} visited {city} last year ."
        parse = [f"( {s1[:-2]} )", f"( {s2[:-2]} )", f"(ROOT {s1[:-2]})", f"(ROOT {s2[:-2]})"]
        head = [str(i), str(500 + i), f"{500 + i}{'ecn'[i % 3]}", ("fiction", "travel", "slate")[i % 3]]
        labels = [gold] * (5 if split != "train" else 1)
        return head + parse + [s1, s2] + labels + [gold]
    gold = ("not_entailment", "entailment")[lab] if task in ("QNLI", "RTE") else str(lab)
    if task == "QNLI":
        return [str(i), f"Where was {who} born ?",
                f"{who} was born in {city} ." if lab else f"{who} collected {thing} .", gold]
    if task == "RTE":
        return [str(i), f"{who} moved to {city} and sold {thing} there .", f"{who} lived in {city2} .", gold]
    # WNLI
    return [str(i), f"{who} thanked {_other(who, _PEOPLE, i)} because she had repaired the {thing} .",
            f"{who if not lab else _other(who, _PEOPLE, i)} had repaired the {thing} .", gold]


HEADERS = {"SST-2": ["sentence", "label"], "MRPC": ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
           "STS-B": STSB, "QQP": ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
           "QNLI": ["index", "question", "sentence", "label"], "RTE": ["index", "sentence1", "sentence2", "label"],
           "WNLI": ["index", "sentence1", "sentence2", "label"]}
SIZES = (32, 16)   # training and dev rows


def write_glue_tasks(folder, train=SIZES[0], dev=SIZES[1]):
    """One folder per GLUE task under ``folder`` (``CoLA/train.tsv``, ``MNLI/dev_matched.tsv``, ...)
    in the official layouts, with a README marking it synthetic. Returns the task folders."""
    from .glue import TASKS
    out = []
    for name, task in TASKS.items():
        sub = os.path.join(folder, name)
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, "README.txt"), "w", encoding="utf-8") as f:
            f.write(README.format(task=name))
        for split, fname, n in (("train", "train.tsv", train), *((s, f, dev) for s, f in task.dev)):
            header = MNLI_DEV if name == "MNLI" and split != "train" else \
                MNLI_TRAIN if name == "MNLI" else HEADERS.get(name)
            with open(os.path.join(sub, fname), "w", encoding="utf-8") as f:
                if header:
                    f.write("\t".join(header) + "\n")
                for i in range(n):
                    f.write("\t".join(_rows(name, i + (7 if split == "dev_mismatched" else 0), split)) + "\n")
        out.append(sub)
    return out
