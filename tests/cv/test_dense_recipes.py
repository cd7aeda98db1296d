"""The detection and segmentation recipes in one process: they train on the embedded canvases and on
the VOC and COCO layouts that ``gluon-suite samples`` writes, a run stopped after an epoch and
resumed ends exactly as the uninterrupted run, GluonCV's flag spellings parse with GluonCV's
meanings, and bad requests are one-line errors."""
import json
import os
import subprocess
import sys

import pytest

from ..conftest import REPO, job_output, max_param_diff

DET = os.path.join(REPO, "scripts", "cv", "train_detection.py")
SEG = os.path.join(REPO, "scripts", "cv", "train_segmentation.py")
SMALL = ["--canvases", "24", "--val-canvases", "12", "--batch-size", "8", "--no-progress", "--seed", "3"]


def script(path, *args, ok=True):
    p = subprocess.run([sys.executable, path, *args], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1"))
    if ok:
        assert p.returncode == 0, job_output(p)
    return p


def records(folder):
    return [json.loads(line) for line in open(os.path.join(folder, "log.jsonl"))]


@pytest.mark.long
@pytest.mark.parametrize("path,metric", [(DET, "map"), (SEG, "miou")], ids=["detection", "segmentation"])
def test_resumed_run_ends_as_the_uninterrupted_one(tmp_path, path, metric):
    whole, part = tmp_path / "whole", tmp_path / "part"
    script(path, *SMALL, "--epochs", "2", "--out", str(whole))
    script(path, *SMALL, "--epochs", "2", "--stop-after-epochs", "1", "--out", str(part))
    assert [r["epoch"] for r in records(part)] == [1]
    script(path, *SMALL, "--epochs", "2", "--resume", "auto", "--out", str(part))
    a, b = records(whole), records(part)
    assert [r["epoch"] for r in a] == [r["epoch"] for r in b] == [1, 2]
    for ra, rb in zip(a, b):
        for key in ("train_loss", "lr", metric, "step"):
            assert rb[key] == pytest.approx(ra[key], rel=1e-5, abs=1e-7), key
    assert a[1]["step"] == 2 * 3            # 24 canvases, 8 a step
    assert max_param_diff(whole / "last.rank0.params", part / "last.rank0.params") <= 1e-6
    config = json.load(open(whole / "config.json"))
    assert config["canvases"] == 24 and config["workers"] == 1
    assert (whole / "best.params").exists() and (whole / "summary.csv").exists()
    assert 0.0 <= a[-1][metric] <= 1.0 and a[-1]["train_loss"] < a[0]["train_loss"] * 1.5


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    out = tmp_path_factory.mktemp("samples")
    p = subprocess.run([sys.executable, "-m", "gluon_suite.cli", "samples", "--out", str(out)], capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, PYTHONPATH=REPO))
    assert p.returncode == 0, job_output(p)
    return out


@pytest.mark.long
def test_detection_trains_on_voc_and_coco_folders(samples, tmp_path):
    voc = script(DET, "--dataset", "voc", "--data-dir", str(samples / "detection_voc"), "--epochs", "1",
                 "--batch-size", "8", "--no-progress", "--out", str(tmp_path / "voc"))
    assert "metric voc07" in voc.stdout
    coco = script(DET, "--dataset", "coco", "--data-dir", str(samples / "detection_coco"), "--epochs", "1",
                  "--batch-size", "8", "--no-progress", "--out", str(tmp_path / "coco"))
    assert "metric coco" in coco.stdout
    rec = records(tmp_path / "coco")[-1]
    assert 0.0 <= rec["map"] <= 1.0 and "ap50" in rec
    config = json.load(open(tmp_path / "voc" / "config.json"))
    assert config["classes"] == [str(d) for d in range(10)]


@pytest.mark.long
def test_segmentation_trains_on_the_voc_folder(samples, tmp_path):
    script(SEG, "--dataset", "voc", "--num-classes", "11", "--data-dir", str(samples / "detection_voc"),
           "--epochs", "1", "--batch-size", "8", "--no-progress", "--out", str(tmp_path / "seg"))
    rec = records(tmp_path / "seg")[-1]
    assert 0.0 <= rec["miou"] <= 1.0 and 0.0 <= rec["pixel_acc"] <= 1.0


def test_gluoncv_flag_spellings():
    from gluon_suite.cv.detection import DetectionConfig
    from gluon_suite.cv.segmentation import SegmentationConfig
    parser = DetectionConfig.build_parser()
    cfg = DetectionConfig.from_sources(vars(parser.parse_args(
        ["--network", "resnet50_v1", "--data-shape", "512", "--lr-decay-epoch", "160,200", "-j", "2",
         "--save-prefix", "runs/x", "--val-interval", "5", "--syncbn", "--num-epochs", "240"])), parser)
    assert cfg.model_name() == "ssd_512_resnet50_v1_custom" and cfg.input_size() == 512
    assert cfg.lr_decay_epoch == [160.0, 200.0] and cfg.num_workers == 2 and cfg.out == "runs/x"
    assert (cfg.val_interval, cfg.epochs, cfg.syncbn) == (5, 240, True)
    parser = SegmentationConfig.build_parser()
    cfg = SegmentationConfig.from_sources(vars(parser.parse_args(
        ["--model", "psp", "--backbone", "resnet50", "--crop-size", "480", "--base-size", "520", "--aux",
         "--weight-decay", "1e-4", "--checkname", "runs/y"])), parser)
    assert (cfg.model, cfg.backbone, cfg.crop(), cfg.base_size, cfg.aux, cfg.wd) == \
        ("psp", "resnet50", 480, 520, True, 1e-4)
    assert cfg.out == "runs/y" and cfg.classes() == 11


@pytest.mark.parametrize("model", ["yolo3_mobilenet0.25_custom",
                                   pytest.param("center_net_resnet18_v1b_voc", marks=pytest.mark.long)])
def test_yolo3_and_centernet_train_with_their_own_targets_and_losses(tmp_path, model):
    """GluonCV's YOLOv3 and CenterNet by name, for the canvases' ten digits: their own training
    transforms and losses on the shared loop; the loss falls from the first epoch to the second
    and the validation mAP is evaluated on the decoded detections."""
    out = tmp_path / "run"
    script(DET, "--model", model, "--data-shape", "128", "--canvases", "16", "--val-canvases", "8", "--batch-size",
           "4", "--epochs", "2", "--no-progress", "--seed", "1", "--out", str(out))
    recs = records(out)
    assert [r["epoch"] for r in recs] == [1, 2]
    assert recs[1]["train_loss"] < recs[0]["train_loss"], recs
    assert all(0.0 <= r["map"] <= 1.0 for r in recs)
    assert json.load(open(out / "config.json"))["model"] == model


def test_gluoncv_models_by_name_build_for_our_classes():
    import mxnet as mx
    from gluon_suite.cv.detection import build_detector
    from gluon_suite.cv.models.dense import gluoncv_segmenter, scores_of
    net = build_detector("ssd_300_vgg16_atrous_custom", ["a", "b", "c"])
    assert list(net.classes) == ["a", "b", "c"]
    seg = gluoncv_segmenter("fcn", "resnet50", 5, crop_size=64)
    seg.initialize()
    out = scores_of(seg(mx.nd.zeros((1, 3, 64, 64))))
    assert out.shape == (1, 5, 64, 64)


@pytest.mark.parametrize("path,args,words", [
    (DET, ["--model", "faster_rcnn_resnet50_v1b_voc"], "Faster R-CNN and others are not supported"),
    (DET, ["--model", "yolo3_mobilenet0.25_custom", "--augment", "upright"], "for SSD detectors only"),
    (DET, ["--metric", "coco"], "--metric coco needs COCO annotations"),
    pytest.param(DET, ["--dataset", "voc"], "give --data-dir", marks=pytest.mark.long),
    pytest.param(DET, ["--model", "ssd_512_nosuchnet_custom"], "not one of GluonCV's models", marks=pytest.mark.long),
    pytest.param(DET, ["--lr-decay-epoch", "ten"], "epochs separated by commas", marks=pytest.mark.long),
    pytest.param(SEG, ["--model", "unet"], "segmentation model unet", marks=pytest.mark.long),
    pytest.param(SEG, ["--model", "fcn", "--backbone", "vgg"], "backbone vgg", marks=pytest.mark.long),
    pytest.param(SEG, ["--publish", "store", "--model", "fcn", "--backbone", "resnet50"], "--publish needs a registered zoo name",
                 marks=pytest.mark.long),
    pytest.param(DET, ["--network", "resnet50_v1", "--publish", "store"], "give --publish-name",
                 marks=pytest.mark.long),
    (SEG, ["--canvas-size", "100"], "multiple of 32"),
    pytest.param(SEG, ["--num-classes", "5"], "the canvases have 11 classes", marks=pytest.mark.long),
], ids=["family", "yolo-upright", "coco-metric", "data-dir", "unknown-ssd", "decay-epochs", "seg-model", "seg-backbone", "publish",
        "publish-network", "crop", "canvas-classes"])
def test_bad_requests_are_one_line_errors(tmp_path, path, args, words):
    p = script(path, *args, "--epochs", "1", "--no-progress", "--out", str(tmp_path / "run"), ok=False)
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
    assert words in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("path,model,word", [(DET, "ssd_128_resnet18_canvas", "mAP"),
                                             pytest.param(SEG, "fpn_resnet18_canvas", "mIoU", marks=pytest.mark.long)],
                         ids=["detection", "segmentation"])
def test_published_checkpoint_reproduces_its_card(tmp_path, path, model, word):
    """--publish writes a card with the run's settings; evaluate.py, given only the name and the
    store, rebuilds the same validation canvases and reproduces the card's metric."""
    out, store = tmp_path / "run", tmp_path / "store"
    env = {"GLUON_SUITE_HOME": str(tmp_path / "home")}
    os.environ.update(env)
    try:
        script(path, *SMALL, "--epochs", "1", "--canvas-seed", "2", "--model", model, "--out", str(out),
               "--publish", str(store))
        card = json.load(open(out / f"{model}.json"))
        assert card["hyperparameters"]["canvas_seed"] == 2 and card["hyperparameters"]["val_canvases"] == 12
        said = script(os.path.join(REPO, "scripts", "cv", "evaluate.py"), "--model", model, "--source",
                      str(store)).stdout
        from gluon_suite.cv.dense_eval import evaluate_dense
        metrics, cfg = evaluate_dense(model, source=str(store))
    finally:
        for k in env:
            os.environ.pop(k)
    value = float(said.split(f"{word} ")[1].split()[0].rstrip(","))
    assert value == pytest.approx(card["metric"]["value"], abs=1e-4), said
    assert card["metric"]["value"] == pytest.approx(records(out)[-1]["best_metric"], abs=1e-9)
    # the card's 12 held-out canvases of canvas seed 2 (a detector this short may score 0 on them)
    assert (cfg.val_canvases, cfg.canvas_seed) == (12, 2)
    if word == "mAP":
        assert metrics["images"] == 12
    else:
        assert sum(map(sum, metrics["confusion"])) == 12 * 128 * 128


def test_images_without_objects():
    """Training skips an image without objects (SSD's targets need one, as GluonCV's training
    skips them); evaluation keeps it with one padding row, so a batch of such images still runs."""
    import numpy as np
    from gluon_suite.cv.data.canvases import canvas_dataset
    from gluon_suite.cv.detection import _ValTransform, _with_objects
    from gluon_suite.utils import UserError

    class Two:
        classes = ("a",)
        _labels = [np.zeros((0, 6), "float32"), np.array([[1, 2, 30, 40, 0, 0]], "float32")]

        def __len__(self):
            return 2

        def __getitem__(self, i):
            return i, self._labels[i]
    kept = _with_objects(Two())
    assert len(kept) == 1 and kept[0][0] == 1 and kept.classes == ("a",)
    Two._labels = [np.zeros((0, 6), "float32")] * 2
    with pytest.raises(UserError, match="no training image has an object"):
        _with_objects(Two())
    image, _ = canvas_dataset("val", 1).detection[0]
    x, y, wh = _ValTransform(128)(image, np.zeros((0, 6), "float32"))
    assert x.shape == (3, 128, 128) and y.shape == (1, 6) and (y == -1).all() and list(wh) == [128, 128]
