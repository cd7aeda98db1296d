"""Pretraining shards: the instances of ``create_instances`` (the arrays ``KEYS``) written as
NumPy ``.npz`` files (no pickled objects) and read back, checked against a phase's sequence length
and the vocabulary, by a phase's ``shards`` or ``eval_shards``."""
import glob
import os
import zipfile

import numpy as np

from ..utils import UserError
from ..utils.fileio import atomic_path
from ..utils.readers import data_reader

KEYS = ("input_ids", "token_types", "valid_length", "masked_positions", "masked_ids", "masked_weights",
        "nsp_labels")


def write_shards(data, folder, per_shard=10000):
    """Write the instances ``data`` (``create_instances``' arrays) into ``folder`` as NumPy
    ``part-NNNNN.npz`` files of at most ``per_shard`` instances each (each written atomically; no
    pickled objects). Returns the paths. Pretraining reads them back with a phase's ``shards`` (or
    ``eval_shards``, for held-out evaluation) naming the folder or a glob."""
    os.makedirs(folder, exist_ok=True)
    n, paths = len(data["nsp_labels"]), []
    for i, first in enumerate(range(0, n, int(per_shard))):
        path = os.path.join(folder, f"part-{i:05d}.npz")
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            np.savez(f, **{k: data[k][first:first + int(per_shard)] for k in KEYS})
        paths.append(path)
    return paths


@data_reader("folder of pretraining shards", path="spec",
             checks=("at least one shard", "the arrays of a shard", "the phase's seq_len",
                     "token ids in the vocabulary"))
def read_shards(spec, seq_len, vocab_size, what="shards"):
    """The instances of the shards ``spec`` (a folder of ``.npz`` files or a glob), in name order, as
    one dict of arrays; checked for the arrays, the phase's ``seq_len`` and the vocabulary's size."""
    paths = sorted(glob.glob(os.path.join(spec, "*.npz")) if os.path.isdir(spec) else glob.glob(spec))
    if not paths:
        raise UserError(f"{what} {spec}: no .npz shards there; write them with nlp.pretrain.write_shards")
    parts = []
    for path in paths:
        try:
            with np.load(path, allow_pickle=False) as z:
                parts.append({k: z[k] for k in KEYS})
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise UserError(f"{path} is not a pretraining shard ({' '.join(str(exc).split())[:100]}); "
                            f"it needs the arrays {', '.join(KEYS)}") from None
    shapes = {(p["input_ids"].shape[1], p["masked_ids"].shape[1]) for p in parts}
    if len(shapes) > 1 or next(iter(shapes))[0] != seq_len:
        raise UserError(f"{what} {spec} hold sequences of {sorted(s for s, _ in shapes)} tokens (masked slots "
                        f"{sorted(m for _, m in shapes)}); the phase's seq_len is {seq_len}: build them for it")
    data = {k: np.concatenate([p[k] for p in parts]) for k in KEYS}
    if int(data["input_ids"].max(initial=0)) >= vocab_size or int(data["masked_ids"].max(initial=0)) >= vocab_size:
        raise UserError(f"{what} {spec} use token ids beyond this vocabulary's {vocab_size}: give the --vocab "
                        "they were built with")
    return data
