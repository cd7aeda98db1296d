"""CIFAR-10 and CIFAR-100 from the standard *binary* distribution, at a local path.

Accepted: the archive itself (``cifar-10-binary.tar.gz`` / ``cifar-100-binary.tar.gz``) or the
folder it unpacks to (``cifar-10-batches-bin/``, ``cifar-100-binary/``), or a folder that holds
either. Records: CIFAR-10 ``<1 label byte><3072 pixel bytes>`` in ``data_batch_1..5.bin`` and
``test_batch.bin``; CIFAR-100 ``<coarse byte><fine byte><3072 pixel bytes>`` in ``train.bin`` and
``test.bin``. Pixels are 1024 R, then G, then B values, row-major 32x32.
"""
import os
import tarfile

import numpy as np

from ...utils.errors import UserError
from ...utils.readers import data_reader

_LAYOUT = {
    "cifar10": {"archive": "cifar-10-binary.tar.gz", "folder": "cifar-10-batches-bin", "label_bytes": 1,
                "train": [f"data_batch_{i}.bin" for i in range(1, 6)], "test": ["test_batch.bin"],
                "classes": 10},
    "cifar100": {"archive": "cifar-100-binary.tar.gz", "folder": "cifar-100-binary", "label_bytes": 2,
                 "train": ["train.bin"], "test": ["test.bin"], "classes": 100},
}


def _parse(buf, name, label_bytes):
    rec = label_bytes + 3072
    if len(buf) == 0 or len(buf) % rec:
        raise UserError(f"{name} is truncated or not a CIFAR binary batch ({len(buf)} bytes is not a "
                        f"multiple of the {rec}-byte record); download the archive again")
    arr = np.frombuffer(buf, dtype=np.uint8).reshape(-1, rec)
    labels = arr[:, label_bytes - 1].astype(np.int32)      # CIFAR-100: the fine label
    images = arr[:, label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels


def _find(path, layout):
    """Return ('dir', folder) or ('tar', archive) for the data under ``path``."""
    if os.path.isfile(path):
        return "tar", path
    if not os.path.isdir(path):
        raise UserError(f"CIFAR data path {path} does not exist; point --data-dir at the folder or the "
                        f"{layout['archive']} archive")
    for cand in (path, os.path.join(path, layout["folder"])):
        if all(os.path.isfile(os.path.join(cand, f)) for f in layout["train"] + layout["test"]):
            return "dir", cand
    arc = os.path.join(path, layout["archive"])
    if os.path.isfile(arc):
        return "tar", arc
    raise UserError(f"no CIFAR binary data in {path}: expected {layout['folder']}/ with "
                    f"{', '.join(layout['train'][:1] + layout['test'])}, or {layout['archive']}")


@data_reader("CIFAR binary distribution", path="path", fix="download the archive again",
             checks=("the files of the split are there", "whole records of 1 (CIFAR-100: 2) label bytes and 3072 "
                     "pixel bytes", "the archive is a readable tar", "labels below the class count"))
def load_cifar(path, split="train", dataset="cifar10"):
    """Return ``(images, labels)``: uint8 HWC images (N, 32, 32, 3) and int32 labels of a CIFAR
    split ('train' or 'test') read from the binary distribution at ``path``."""
    if dataset not in _LAYOUT:
        raise UserError(f"unknown CIFAR variant {dataset!r}; choose cifar10 or cifar100")
    if split not in ("train", "test"):
        raise UserError(f"unknown split {split!r}; choose train or test")
    layout = _LAYOUT[dataset]
    kind, where = _find(os.path.expanduser(path), layout)
    parts = []
    if kind == "dir":
        for f in layout[split]:
            with open(os.path.join(where, f), "rb") as fh:
                parts.append(_parse(fh.read(), os.path.join(where, f), layout["label_bytes"]))
    else:
        try:
            with tarfile.open(where, "r:*") as tf:
                members = {os.path.basename(m.name): m for m in tf.getmembers() if m.isfile()}
                for f in layout[split]:
                    if f not in members:
                        raise UserError(f"{where} has no {f}; is it the {dataset} *binary* archive?")
                    parts.append(_parse(tf.extractfile(members[f]).read(), f"{where}:{f}",
                                        layout["label_bytes"]))
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise UserError(f"{where} is truncated or not a tar archive ({exc}); download it again") from None
    images = np.concatenate([p[0] for p in parts])
    labels = np.concatenate([p[1] for p in parts])
    if labels.max() >= layout["classes"]:
        raise UserError(f"{where}: label {labels.max()} out of range for {dataset}")
    return images, labels
