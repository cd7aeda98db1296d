"""A small image folder of our own in the layout ``--dataset folder`` reads
(``train/<class>/<image>`` and ``val/<class>/<image>``): scikit-learn's bundled 8x8 digits,
scaled up and written as 8-bit RGB PNG files (encoded here with zlib: no image library needed)."""
import os
import struct
import zlib

import numpy as np


def _write_png(path, gray):
    rgb = np.repeat(gray[:, :, None], 3, axis=2).astype(np.uint8)
    h, w = rgb.shape[:2]
    raw = b"".join(b"\x00" + rgb[r].tobytes() for r in range(h))   # filter type 0 per row

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def write_image_folder(folder, classes=(0, 1, 2), train=20, val=10, scale=4):
    """``folder/train/<digit>/*.png`` and ``folder/val/<digit>/*.png``: the first ``train`` and the
    next ``val`` images of each digit in ``classes`` from scikit-learn's digits, ``8*scale`` pixels
    square, white on black. Returns the folder."""
    from sklearn.datasets import load_digits
    d = load_digits()
    for c in classes:
        imgs = d.images[d.target == c]
        for split, part in (("train", imgs[:train]), ("val", imgs[train:train + val])):
            sub = os.path.join(folder, split, str(c))
            os.makedirs(sub, exist_ok=True)
            for i, img in enumerate(part):
                big = np.kron(img * (255.0 / 16.0), np.ones((scale, scale)))
                _write_png(os.path.join(sub, f"{c}_{i:03d}.png"), big)
    return folder
