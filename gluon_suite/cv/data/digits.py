"""scikit-learn's bundled handwritten digits (1,797 8x8 grey images, 10 classes): the suite's
embedded image data set, available with no download.

The train/test split is fixed (stratified, 20% test, its own seed), so every run and every worker
sees the same split whatever the global random state.
"""
import numpy as np

DIGITS_CLASSES = 10
_SPLIT_SEED = 20200601
_TEST_FRACTION = 0.2


def _split(labels):
    rng = np.random.RandomState(_SPLIT_SEED)
    test = []
    for c in range(DIGITS_CLASSES):
        idx = np.flatnonzero(labels == c)
        rng.shuffle(idx)
        test.extend(idx[: int(round(len(idx) * _TEST_FRACTION))])
    mask = np.zeros(len(labels), dtype=bool)
    mask[test] = True
    return np.flatnonzero(~mask), np.flatnonzero(mask)


def load_digits(split="train", size=8):
    """Return ``(images, labels)``: float32 NCHW images in [0, 1] of ``size`` x ``size`` (1 channel)
    and int32 labels, for ``split`` 'train' (1,438 images) or 'test' (359 images).

    ``size`` other than 8 resizes bilinearly (e.g. 32 for CIFAR-style networks).
    """
    if split not in ("train", "test"):
        raise ValueError(f"unknown digits split {split!r}; choose 'train' or 'test'")
    if int(size) < 1:
        raise ValueError(f"image size must be >= 1, got {size}")
    from sklearn.datasets import load_digits as _sk_load

    bunch = _sk_load()
    images = (bunch.images.astype(np.float32) / 16.0)[:, None, :, :]
    labels = bunch.target.astype(np.int32)
    train_idx, test_idx = _split(labels)
    idx = train_idx if split == "train" else test_idx
    images, labels = images[idx], labels[idx]
    if size != 8:
        import mxnet as mx
        images = mx.nd.contrib.BilinearResize2D(mx.nd.array(images), height=size, width=size).asnumpy()
        images = np.clip(images, 0.0, 1.0)
    return np.ascontiguousarray(images), labels
