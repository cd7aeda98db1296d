"""Image data readers on small files written here in the exact standard formats."""
import io
import os
import tarfile

import cv2
import mxnet as mx
import numpy as np
import pytest

from gluon_suite.cv.data import build_datasets, folder_dataset, load_cifar, record_dataset
from gluon_suite.utils import UserError


def write_cifar10(folder, n=6, seed=0):
    rs = np.random.RandomState(seed)
    folder = folder / "cifar-10-batches-bin"
    folder.mkdir(parents=True)
    truth = {}
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        labels = rs.randint(0, 10, size=n).astype(np.uint8)
        pix = rs.randint(0, 256, size=(n, 3072)).astype(np.uint8)
        (folder / name).write_bytes(np.concatenate([labels[:, None], pix], axis=1).tobytes())
        truth[name] = (labels, pix)
    return folder, truth


def test_cifar10_binary_folder_and_archive(tmp_path):
    folder, truth = write_cifar10(tmp_path)
    x, y = load_cifar(str(tmp_path), "train")
    assert x.shape == (30, 32, 32, 3) and y.shape == (30,)
    labels, pix = truth["data_batch_1.bin"]
    assert list(y[:6]) == list(labels)
    # pixel (row 2, col 5, channel G) of record 0 is byte 1024 + 2*32 + 5 of its 3072
    assert x[0, 2, 5, 1] == pix[0, 1024 + 2 * 32 + 5]
    arc = tmp_path / "cifar-10-binary.tar.gz"
    with tarfile.open(arc, "w:gz") as tf:
        tf.add(folder, arcname="cifar-10-batches-bin")
    xt, yt = load_cifar(str(arc), "test")
    np.testing.assert_array_equal(yt, truth["test_batch.bin"][0])


def test_cifar100_binary_uses_fine_labels(tmp_path):
    d = tmp_path / "cifar-100-binary"
    d.mkdir()
    rec = np.zeros((3, 3074), np.uint8)
    rec[:, 0] = [1, 2, 3]          # coarse
    rec[:, 1] = [40, 50, 99]       # fine
    for f in ("train.bin", "test.bin"):
        (d / f).write_bytes(rec.tobytes())
    _, y = load_cifar(str(tmp_path), "train", "cifar100")
    assert list(y) == [40, 50, 99]


def test_truncated_cifar_file_and_archive(tmp_path):
    folder, _ = write_cifar10(tmp_path)
    f = folder / "data_batch_3.bin"
    f.write_bytes(f.read_bytes()[:-100])
    with pytest.raises(UserError, match="data_batch_3.bin is truncated"):
        load_cifar(str(tmp_path), "train")
    arc = tmp_path / "cut.tar.gz"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        tf.add(folder, arcname="cifar-10-batches-bin")
    arc.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    with pytest.raises(UserError, match="truncated or not a tar archive|is truncated"):
        load_cifar(str(arc), "train")


def test_missing_data_dir(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_cifar(str(tmp_path / "nope"), "train")
    with pytest.raises(UserError, match="pass --data-dir"):
        build_datasets("cifar10", None)


def _png(path, value):
    img = np.full((12, 10, 3), value, np.uint8)
    cv2.imwrite(str(path), img)


def test_image_folder_layout(tmp_path):
    for c in ("cat", "dog"):
        (tmp_path / "ok" / c).mkdir(parents=True)
        for i in range(2):
            _png(tmp_path / "ok" / c / f"{i}.png", 40 * i)
    ds = folder_dataset(str(tmp_path / "ok"))
    assert len(ds) == 4 and ds.synsets == ["cat", "dog"]
    assert ds[0][0].shape == (12, 10, 3)
    flat = tmp_path / "flat"
    flat.mkdir()
    _png(flat / "a.png", 1)
    with pytest.raises(UserError, match="one sub-folder per class"):
        folder_dataset(str(flat))
    (tmp_path / "empty" / "a").mkdir(parents=True)
    with pytest.raises(UserError, match="hold no images"):
        folder_dataset(str(tmp_path / "empty"))


def test_image_folder_refuses_files_that_are_not_images_and_names_one_that_does_not_decode(tmp_path):
    for c in ("cat", "dog"):
        (tmp_path / c).mkdir()
        _png(tmp_path / c / "0.png", 10)
    zero = tmp_path / "dog" / "1.jpg"
    zero.write_bytes(b"")
    with pytest.raises(UserError, match=rf"image file {zero} is empty \(0 bytes\); remove it"):
        folder_dataset(str(tmp_path))
    zero.write_bytes(b"GIF89a not what the name says")
    with pytest.raises(UserError, match=rf"image file {zero} is not a JPEG or PNG image \(it starts with b'GIF8'\)"):
        folder_dataset(str(tmp_path))
    # a JPEG's first bytes, then garbage: found when it is decoded, named in one line
    zero.write_bytes(b"\xff\xd8\xff\xe0" + b"garbage" * 20)
    ds = folder_dataset(str(tmp_path))
    assert ds[0][0].shape == (12, 10, 3)
    bad = [i for i, (path, _) in enumerate(ds.items) if path == str(zero)][0]
    with pytest.raises(UserError, match=rf"image file {zero} cannot be decoded \(.*Invalid image file\.\); remove") as info:
        ds[bad]
    assert "\n" not in str(info.value)


def test_recordio(tmp_path):
    rec, idx = str(tmp_path / "train.rec"), str(tmp_path / "train.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i in range(5):
        img = np.full((8, 8, 3), 50 * i, np.uint8)
        w.write_idx(i, mx.recordio.pack_img(mx.recordio.IRHeader(0, float(i % 2), i, 0), img, img_fmt=".png"))
    w.close()
    ds = record_dataset(rec)
    assert len(ds) == 5 and ds[3][1] == 1.0 and int(ds[2][0].asnumpy().mean()) == 100
    os.unlink(idx)
    with pytest.raises(UserError, match="index .* is missing"):
        record_dataset(rec)
