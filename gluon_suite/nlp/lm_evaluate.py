"""Validation and test perplexity of a trained word language model: a zoo checkpoint with its published
vocabulary (``evaluate_pretrained``, offline once cached) or a run folder of ``train_language_model``
(``evaluate_run``), on the corpus, splits and BPTT settings its card or config.json records.

The corpus is rebuilt from the recorded settings and its vocabulary checked against the model's, so a
perplexity is only given on the text the model was trained and held out on."""
import json
import os

import mxnet as mx

from ..distributed import LocalCommunicator
from ..utils import UserError
from .language_model import _corpus, build_model, _sizes
from .lm_windows import perplexity
from .wikipedia import Vocabulary

SETTINGS = ("model", "corpus", "data_path", "max_pages", "seed", "valid_fraction", "test_fraction", "min_freq",
            "max_vocab", "bptt", "eval_batch_size", "emsize", "nhid", "nlayers", "dropout", "tied", "nproj", "k")


def _settings(hp, data_path):
    missing = [k for k in SETTINGS if k not in hp]
    if missing:
        raise UserError(f"the model's recorded settings lack {', '.join(missing)}: it was not trained by "
                        "scripts/nlp/train_language_model.py, so its corpus cannot be rebuilt")
    cfg = {k: hp[k] for k in SETTINGS}
    if data_path:
        cfg["data_path"] = data_path
    elif cfg["data_path"]:
        raise UserError(f"the model was trained on {cfg['data_path']}; give --data-path to where that file is here")
    return cfg


def _perplexities(net, cfg, vocab, what):
    corpus = _corpus(cfg)
    vocab.check_matches(corpus.vocabulary(min_freq=cfg["min_freq"], max_size=cfg["max_vocab"]), what)
    comm, out = LocalCommunicator(), {}
    for split in ("valid", "test"):
        ids = vocab.to_indices(corpus.tokens(split))
        out[f"{split}_ppl"] = perplexity(net, ids, int(cfg["eval_batch_size"]), comm, int(cfg["bptt"]), mx.cpu())
    return out


def evaluate_pretrained(name, source=None, root=None, data_path=None):
    """``{"valid_ppl", "test_ppl", "card"}`` of zoo model ``name``'s published checkpoint, on the data
    its card records; ``source``/``root`` as in ``get_model``."""
    from ..model_zoo import get_model
    from ..model_zoo.cards import read_card_of
    from ..model_zoo.store import checkpoint_path, load_records, record_for
    rec = record_for(name, source)
    if f"{name}:vocab" not in load_records(source):
        raise UserError(f"{name} has no published vocabulary; only a language model published by "
                        "train_language_model.py --publish can be evaluated")
    card = read_card_of(rec, source)
    cfg = _settings(card.get("hyperparameters") or {}, data_path)
    vocab = Vocabulary.load(checkpoint_path(f"{name}:vocab", root, source))
    net = get_model(name, pretrained=True, source=source, root=root)
    return {**_perplexities(net, cfg, vocab, f"{name}'s published vocabulary"), "card": card}


def evaluate_run(folder, data_path=None, params="best.params"):
    """``{"valid_ppl", "test_ppl"}`` of run folder ``folder`` (its config.json, vocab.json and
    ``params``)."""
    paths = {n: os.path.join(folder, n) for n in ("config.json", "vocab.json", params)}
    for n, p in paths.items():
        if not os.path.isfile(p):
            raise UserError(f"{folder} has no {n}: give the --out folder of a train_language_model.py run")
    with open(paths["config.json"], encoding="utf-8") as f:
        cfg = _settings(json.load(f), data_path)
    vocab = Vocabulary.load(paths["vocab.json"])
    net = build_model(cfg["model"], len(vocab), **_sizes(cfg))
    net.load_parameters(paths[params], ctx=mx.cpu(), cast_dtype=True, dtype_source="current")   # float16 storage
    return _perplexities(net, cfg, vocab, f"{folder}'s vocab.json")
