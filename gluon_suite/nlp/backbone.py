"""The backbone a fine-tuning recipe starts from: a BERT without the pretraining heads and its
vocabulary, from a pretraining output folder, a zoo checkpoint, or a GluonNLP user's own files."""
import json
import os

from ..utils.errors import UserError


def load_backbone(init, model=None, max_length=None, dropout=0.1, use_pooler=True, pretrained=False,
                  gluonnlp=None):
    """A BERT backbone (pooler, no pretraining heads) and its vocabulary: from a pretraining output
    folder ``init`` (``config.json``, ``vocab.txt``, ``ckpt.rank0.params``), or with
    ``pretrained=True`` from the zoo checkpoint of ``model`` and the vocabulary published beside
    it (``MODEL:vocab``), downloaded, verified and cached like any checkpoint; or with ``gluonnlp``
    (``(model, dataset, folder)``) from a GluonNLP user's own parameter and vocabulary files
    (``gluonnlp_weights``). The third value describes the start: ``model``, ``max_length`` and, for
    GluonNLP's files, ``lower`` (whether the tokenizer lower-cases; True otherwise)."""
    from ..model_zoo import get_model
    from .text import load_vocab
    if gluonnlp:
        from .gluonnlp_weights import load_gluonnlp_bert
        return load_gluonnlp_bert(*gluonnlp, max_length=max_length, dropout=dropout, use_pooler=use_pooler)
    if pretrained:
        return _zoo_backbone(model, max_length, dropout, use_pooler)
    if not init or not os.path.isdir(init):
        raise UserError(f"--init must be a pretraining output folder (with config.json, vocab.txt and "
                        f"ckpt.rank0.params); got {init!r}")
    for f in ("config.json", "vocab.txt", "ckpt.rank0.params"):
        if not os.path.exists(os.path.join(init, f)):
            raise UserError(f"{init} lacks {f}: is it a finished pretraining run?")
    with open(os.path.join(init, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    vocab = load_vocab(os.path.join(init, "vocab.txt"))
    max_len = int(cfg.get("max_length") or max(int(p["seq_len"]) for p in cfg["phases"]))
    if max_length and max_length > max_len:
        raise UserError(f"--max-len {max_length} exceeds the {max_len} positions the model in {init} "
                        "was pretrained with")
    net = get_model(model or cfg["model"], vocab_size=len(vocab), max_length=max_len,
                    dropout=dropout, use_pooler=use_pooler, use_decoder=False, use_classifier=False)
    net.load_parameters(os.path.join(init, "ckpt.rank0.params"), ignore_extra=True, cast_dtype=True,
                        dtype_source="current")   # a float16 pretraining run loads into float32
    return net, vocab, cfg


def _zoo_backbone(model, max_length, dropout, use_pooler):
    from ..model_zoo import get_model
    from ..model_zoo.registry import resolve
    from ..model_zoo.store import checkpoint_path, load_records
    from .text import load_vocab
    if not model:
        raise UserError("--pretrained needs --model, a pretrained zoo BERT (gluon-suite zoo list 'bert*' "
                        "--pretrained)")
    name = resolve(model).name
    if f"{name}:vocab" not in load_records():
        raise UserError(f"{name} has no published vocabulary, so it cannot be fine-tuned from the zoo; "
                        "choose a model listed by gluon-suite zoo list 'bert*' --pretrained, or use --init")
    vocab = load_vocab(checkpoint_path(f"{name}:vocab"))
    net = get_model(name, dropout=dropout, use_pooler=use_pooler, use_decoder=False, use_classifier=False)
    limit = net.encoder._max_length
    if max_length and max_length > limit:
        raise UserError(f"--max-len {max_length} exceeds the {limit} positions {name} was pretrained with")
    net.load_parameters(checkpoint_path(name), ignore_extra=True, cast_dtype=True, dtype_source="current")
    return net, vocab, {"model": name, "max_length": limit}
