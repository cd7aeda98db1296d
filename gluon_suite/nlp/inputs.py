"""Checks of the fine-tuning scripts' inputs before any model is built: the pretraining output
folder given to ``--init`` and the TSV data files (the SQuAD files: ``squad.check_squad_files``)."""
import os

from ..utils.errors import UserError


def check_init_folder(init):
    """Check a pretraining output folder (``--init``): ``config.json`` naming a registered BERT,
    ``vocab.txt`` and ``ckpt.rank0.params`` holding that model's parameters. Returns the config."""
    from ..model_zoo.registry import check_weights, resolve
    from ..utils.checkpoints import read_json_file
    fix = "give --init the --out folder of a finished scripts/nlp/pretrain_bert.py run"
    cfg = read_json_file(os.path.join(init, "config.json"), "--init run configuration", ("model",), fix)
    if not (cfg.get("max_length") or cfg.get("phases")):
        raise UserError(f"--init run configuration {os.path.join(init, 'config.json')} has neither max_length "
                        f"nor phases; {fix}")
    try:
        model = resolve(cfg["model"]).name
    except ValueError as exc:
        raise UserError(f"--init run configuration names {exc}; {fix}") from None
    vocab = os.path.join(init, "vocab.txt")
    if not os.path.isfile(vocab):
        raise UserError(f"--init folder {init} lacks vocab.txt; {fix}")
    check_weights(os.path.join(init, "ckpt.rank0.params"), model, "--init checkpoint", fix=fix)
    return cfg


def check_tsv_files(train, dev, text_columns, label_column):
    """Read the ``--train`` and ``--dev`` TSV files once before any model is built; a malformed one
    fails with one line naming the flag, the file and line, and the fix."""
    from .tasks import read_tsv
    fix = "fix the file, or name its columns with --text-columns/--label-column"
    try:
        _, _, names = read_tsv(train, text_columns, label_column)
    except UserError as exc:
        raise UserError(f"--train {exc}; {fix}") from None
    try:
        read_tsv(dev, text_columns, label_column, labels=names)
    except UserError as exc:
        raise UserError(f"--dev {exc}; {fix} (its labels must occur in --train)") from None
