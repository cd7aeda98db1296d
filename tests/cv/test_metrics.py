"""gluon_suite.cv.metrics: VOC and COCO mAP, segmentation mIoU and pixel accuracy, and the
combination of several workers' shares (a simulated two-worker communicator, and real Horovod)."""
import contextlib
import io
import json
import threading
from fractions import Fraction

import mxnet as mx
import numpy as np
import pytest

from gluon_suite.cv.metrics import DetectionMetric, SegmentationMetric

CLASSES = ["cat", "dog", "bird"]
PAD = [-1, -1, -1, -1]

# The hand case: two images, boxes in GluonCV's inclusive pixels (so a box matches only itself).
# image 0: gt cat A (0,0,9,9), cat B (20,20,29,29), dog (40,40,49,49) *difficult*
#          pred cat on A 0.9 (TP), cat on A again 0.8 (duplicate: FP), dog on the difficult dog
#          0.7 (neither TP nor FP); cat B is missed
# image 1: gt cat (0,0,9,9), dog (20,20,29,29), dog (40,40,49,49)
#          pred dog 0.95 (TP), dog on nothing 0.85 (FP), cat 0.6 (TP), dog 0.5 (TP),
#          bird 0.4 (no bird anywhere: FP), cat on a dog 0.3 (FP)
#
# cat, 3 objects, ranked TP FP TP FP: recall 1/3 1/3 2/3 2/3, precision 1 1/2 2/3 1/2
#   11-point: t = 0 .. .3 -> 1 (4 points), t = .4 .. .6 -> 2/3 (3 points), t >= .7 -> 0
#     AP07 = (4 + 3 * 2/3) / 11 = 6/11
#   area: recall 0 -> 1/3 at precision 1, 1/3 -> 2/3 at 2/3: AP12 = 1/3 + 2/9 = 5/9
# dog, 2 objects (the difficult one does not count), ranked TP FP (ignored) TP:
#   recall 1/2 1/2 1, precision 1 1/2 2/3
#   11-point: t = 0 .. .5 -> 1 (6 points), t = .6 .. 1 -> 2/3 (5 points): AP07 = (6 + 10/3) / 11 = 28/33
#   area: 1/2 * 1 + 1/2 * 2/3: AP12 = 5/6
# bird: no object: AP None, left out of the mean
# mAP07 = (6/11 + 28/33) / 2 = 23/33; mAP12 = (5/9 + 5/6) / 2 = 25/36
HAND = {"voc07": {"cat": Fraction(6, 11), "dog": Fraction(28, 33), "map": Fraction(23, 33)},
        "voc12": {"cat": Fraction(5, 9), "dog": Fraction(5, 6), "map": Fraction(25, 36)}}
RANKED = {"cat": ([1, 0, 1, 0], 3), "dog": ([1, 0, None, 1], 2)}   # flags in score order, objects


def voc_case():
    """The hand case as GluonCV-style batches, one image per entry: (pred boxes, labels, scores,
    gt boxes, labels, difficult)."""
    a, b, c, far = [0, 0, 9, 9], [20, 20, 29, 29], [40, 40, 49, 49], [60, 60, 69, 69]
    image0 = ([a, a, c, PAD, PAD, PAD], [0, 0, 1, -1, -1, -1], [.9, .8, .7, -1, -1, -1],
              [a, b, c, PAD], [0, 0, 1, -1], [0, 0, 1, 0])
    image1 = ([b, far, a, c, a, c], [1, 1, 0, 1, 2, 0], [.95, .85, .6, .5, .4, .3],
              [a, b, c, PAD], [0, 1, 1, -1], [0, 0, 0, 0])
    return [image0, image1]


def batch(images, as_nd=True):
    arrays = [np.array([im[i] for im in images], dtype=np.float32) for i in range(6)]
    return [mx.nd.array(a) for a in arrays] if as_nd else arrays


def same(a, b, tol=1e-12):
    """Equal Nones, or floats within ``tol``."""
    return a is None and b is None or (a is not None and b is not None and abs(a - b) <= tol)


def plain_points(flags, n_pos):
    """(recall, precision) after each ranked detection that counts (exact fractions)."""
    tp = fp = 0
    points = []
    for f in flags:
        if f is None:
            continue
        tp, fp = tp + f, fp + 1 - f
        points.append((Fraction(tp, n_pos), Fraction(tp, tp + fp)))
    return points


def plain_ap07(points):
    """VOC2007: the mean over t = 0, 0.1, ..., 1 of the best precision at recall >= t."""
    return sum(max([p for r, p in points if r >= Fraction(i, 10)], default=Fraction(0))
               for i in range(11)) / 11


def plain_ap12(points):
    """VOC2010+: the area under the precision envelope (best precision at recall >= r)."""
    area, last = Fraction(0), Fraction(0)
    for r in sorted({r for r, _ in points}):
        area += (r - last) * max(p for rr, p in points if rr >= r)
        last = r
    return area


@pytest.mark.parametrize("kind,plain", [("voc07", plain_ap07), ("voc12", plain_ap12)])
@pytest.mark.parametrize("as_nd", [True, False])
def test_voc_map_matches_the_hand_computed_values(kind, plain, as_nd):
    expected = {name: plain(plain_points(*RANKED[name])) for name in RANKED}
    assert expected == {k: v for k, v in HAND[kind].items() if k != "map"}
    assert sum(expected.values()) / 2 == HAND[kind]["map"]
    metric = DetectionMetric(CLASSES, kind=kind)
    for image in voc_case():     # one image per batch, then the same in one batch
        metric.update(*batch([image], as_nd))
    res = metric.result()
    assert res["per_class"]["cat"] == pytest.approx(float(HAND[kind]["cat"]), abs=1e-12)
    assert res["per_class"]["dog"] == pytest.approx(float(HAND[kind]["dog"]), abs=1e-12)
    assert res["per_class"]["bird"] is None
    assert res["map"] == pytest.approx(float(HAND[kind]["map"]), abs=1e-12)
    assert res["images"] == 2
    metric.reset()
    metric.update(*batch(voc_case(), as_nd))
    assert metric.result() == res


class TwoWorkers:
    """Simulated workers: one thread per rank, meeting at every collective (which must be the same
    kind and name on every rank, as Horovod requires)."""

    def __init__(self, size=2):
        self.size = size
        self.barrier = threading.Barrier(size, timeout=60)
        self.slots = [None] * size

    def meet(self, rank, kind, name, array):
        self.slots[rank] = (kind, name, array)
        self.barrier.wait()
        calls = list(self.slots)
        self.barrier.wait()
        assert len({c[:2] for c in calls}) == 1, calls
        return [c[2] for c in calls]

    def run(self, metrics):
        """``m.result(comm)`` of each rank's metric, in rank order."""
        results, errors = [None] * self.size, []

        def work(rank):
            try:
                results[rank] = metrics[rank].result(FakeComm(self, rank))
            except BaseException as e:   # noqa: BLE001 - handed to the test's thread
                errors.append(e)
                self.barrier.abort()

        threads = [threading.Thread(target=work, args=(r,)) for r in range(self.size)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return results


class FakeComm:
    """The communicator interface the metrics use, over ``TwoWorkers``."""

    def __init__(self, hub, rank):
        self.hub, self.rank, self.size = hub, rank, hub.size

    def allreduce(self, tensor, average=True, name=None):
        total = sum(self.hub.meet(self.rank, "allreduce", name, tensor.asnumpy()))
        return mx.nd.array(total / self.size if average else total, dtype=tensor.dtype)

    def allgather(self, tensor, name=None):
        parts = self.hub.meet(self.rank, "allgather", name, tensor.asnumpy())
        return mx.nd.array(np.concatenate(parts, axis=0), dtype=tensor.dtype)


def split_detection(make, images, shares, **update):
    """One metric per worker, each updated with its share of ``images``, plus one with them all."""
    whole, parts = make(), []
    for i, im in enumerate(images):
        whole.update(*batch([im]), indices=[i], **update)
    for share in shares:
        m = make()
        for i in share:
            m.update(*batch([images[i]]), indices=[i], **update)
        parts.append(m)
    return whole, parts


def random_voc_images(seed, n=8):
    """Random images: detections near the objects (some of the wrong class, some duplicates),
    scores with one decimal so that ties cross images (and workers)."""
    rng = np.random.RandomState(seed)
    images = []
    for _ in range(n):
        xy = rng.randint(0, 60, size=(4, 2))
        gt = np.concatenate([xy, xy + rng.randint(8, 20, size=(4, 2))], axis=1)
        gt_labels = rng.randint(-1, 3, 4)
        near = rng.randint(0, 4, 6)
        pred = gt[near] + rng.randint(-3, 4, size=(6, 4))
        labels = np.where(rng.rand(6) < .75, np.maximum(gt_labels[near], 0), rng.randint(-1, 3, 6))
        images.append((pred.tolist(), labels.tolist(), np.round(rng.rand(6), 1).tolist(),
                       gt.tolist(), gt_labels.tolist(), (rng.rand(4) < .2).astype(int).tolist()))
    return images


@pytest.mark.parametrize("kind", ["voc07", "voc12"])
@pytest.mark.parametrize("case,shares", [("hand", [[0], [1]]), ("hand", [[0, 1], []]),
                                         ("random", [[0, 2, 4, 6], [1, 3, 5, 7]]),
                                         ("random", [[7, 1, 2], [0, 3, 4, 5, 6]])])
def test_voc_two_workers_equal_one_worker(kind, case, shares):
    images = voc_case() if case == "hand" else random_voc_images(3)
    whole, parts = split_detection(lambda: DetectionMetric(CLASSES, kind=kind), images, shares)
    one = whole.result()
    assert TwoWorkers().run(parts) == [one, one]
    if case == "hand":
        assert one["map"] == pytest.approx(float(HAND[kind]["map"]), abs=1e-12)


def test_an_image_evaluated_twice_is_refused():
    images = voc_case()
    _, parts = split_detection(lambda: DetectionMetric(CLASSES), images, [[0, 1], [1]])
    with pytest.raises(ValueError, match="more than once"):
        TwoWorkers().run(parts)


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown detection metric"):
        DetectionMetric(CLASSES, kind="voc")
    with pytest.raises(ValueError, match="coco="):
        DetectionMetric(CLASSES, kind="coco")
    with pytest.raises(ValueError, match="outside the 2 classes"):
        DetectionMetric(CLASSES[:2]).update(*batch(voc_case()))


# --- COCO ---------------------------------------------------------------------------------------
COCO_IMAGES = [11, 42]
COCO_CATS = [3, 7, 9]            # cat, dog, bird (no bird annotated)
COCO_GT = {11: [(3, [10, 10, 30, 30]), (7, [50, 50, 20, 40])],
           42: [(3, [0, 0, 50, 50]), (3, [60, 60, 20, 20]), (7, [5, 60, 30, 30])]}
COCO_DETS = {11: [(3, [11, 11, 30, 29], .9), (7, [50, 52, 20, 38], .8), (3, [50, 50, 20, 40], .3),
                  (9, [0, 0, 5, 5], .1)],
             42: [(3, [2, 0, 48, 50], .85), (3, [60, 62, 18, 18], .6), (7, [5, 60, 25, 30], .7),
                  (7, [70, 0, 10, 10], .2), (3, [1, 1, 49, 49], .5)]}


class FakeCocoReader:
    """What the COCO reader exposes to the metric."""

    def __init__(self, annotation_file, inclusive_boxes=True):
        self.annotation_file = str(annotation_file)
        self.inclusive_boxes = inclusive_boxes

    def image_id(self, i):
        return COCO_IMAGES[i]

    def category_id(self, k):
        return COCO_CATS[k]


def write_coco(tmp_path):
    gt = {"images": [{"id": i, "width": 100, "height": 100, "file_name": f"{i}.jpg"} for i in COCO_IMAGES],
          "categories": [{"id": c, "name": n} for c, n in zip(COCO_CATS, CLASSES)],
          "annotations": [{"id": n + 1, "image_id": i, "category_id": c, "bbox": box,
                           "area": box[2] * box[3], "iscrowd": 0}
                          for n, (i, c, box) in enumerate((i, c, b) for i in COCO_IMAGES for c, b in COCO_GT[i])]}
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(gt))
    return path


def coco_batch(index, inclusive=True):
    """The detections of image ``index`` as the metric takes them: (x1, y1, x2, y2), with
    GluonCV's inclusive pixels (x2 = x + w - 1) or not (x2 = x + w)."""
    dets = COCO_DETS[COCO_IMAGES[index]]
    cut = 1 if inclusive else 0
    boxes = [[x, y, x + w - cut, y + h - cut] for _, (x, y, w, h), _ in dets]
    labels = [COCO_CATS.index(c) for c, _, _ in dets]
    return ([boxes], [labels], [[s for _, _, s in dets]], [[PAD]], [[-1]])


def reference_coco(ann, image_ids, tmp_path):
    """pycocotools on the same files, called directly."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    dets = [{"image_id": i, "category_id": c, "bbox": b, "score": s}
            for i in image_ids for c, b, s in COCO_DETS[i]]
    path = tmp_path / "dets.json"
    path.write_text(json.dumps(dets))
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(ann))
        ev = COCOeval(gt, gt.loadRes(str(path)), "bbox")
        ev.params.imgIds = list(image_ids)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    per_class = {}
    for name, cat in zip(CLASSES, COCO_CATS):
        p = ev.eval["precision"][:, :, ev.params.catIds.index(cat), 0, -1]
        per_class[name] = float(p[p > -1].mean()) if (p > -1).any() else None
    return ev.stats, per_class


@pytest.mark.parametrize("indices,inclusive", [([0, 1], True), ([0], True), ([1, 0], False)])
def test_coco_map_matches_pycocotools(tmp_path, indices, inclusive, capsys):
    ann = write_coco(tmp_path)
    metric = DetectionMetric(CLASSES, kind="coco", coco=FakeCocoReader(ann, inclusive))
    for i in indices:
        metric.update(*coco_batch(i, inclusive), indices=[i])
    res = metric.result()
    assert capsys.readouterr().out == ""          # COCOeval's table only when asked
    stats, per_class = reference_coco(ann, [COCO_IMAGES[i] for i in indices], tmp_path)
    assert 0 < stats[0] < stats[1] <= 1
    assert res["map"] == pytest.approx(stats[0], abs=1e-12)
    assert res["ap50"] == pytest.approx(stats[1], abs=1e-12)
    assert res["ap75"] == pytest.approx(stats[2], abs=1e-12)
    assert res["per_class"].keys() == per_class.keys()
    assert all(same(res["per_class"][k], per_class[k]) for k in per_class)
    assert res["per_class"]["bird"] is None and res["images"] == len(indices)
    metric.result(verbose=True)
    assert "Average Precision" in capsys.readouterr().out


@pytest.mark.parametrize("shares", [[[0], [1]], [[], [1, 0]]])
def test_coco_two_workers_equal_one_worker(tmp_path, shares):
    reader = FakeCocoReader(write_coco(tmp_path))
    whole = DetectionMetric(CLASSES, kind="coco", coco=reader)
    parts = [DetectionMetric(CLASSES, kind="coco", coco=reader) for _ in shares]
    for i in (0, 1):
        whole.update(*coco_batch(i), indices=[i])
    for m, share in zip(parts, shares):
        for i in share:
            m.update(*coco_batch(i), indices=[i])
    one = whole.result()
    assert TwoWorkers().run(parts) == [one, one]


# --- segmentation -------------------------------------------------------------------------------
def numpy_scores(labels, preds, n, ignore=255):
    """mIoU, pixel accuracy and IoUs from a float64 NumPy confusion matrix."""
    keep = labels != ignore
    conf = np.zeros((n, n), dtype=np.float64)
    np.add.at(conf, (labels[keep].astype(int), preds[keep].astype(int)), 1)
    inter = np.diag(conf)
    union = conf.sum(0) + conf.sum(1) - inter
    iou = [i / u if u else None for i, u in zip(inter, union)]
    return np.mean([v for v in iou if v is not None]), inter.sum() / conf.sum(), iou, conf


def random_segmentation(seed, n=5, shape=(3, 7, 9), ignore=255, absent=None):
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, n, size=shape)
    labels[rng.rand(*shape) < .15] = ignore
    scores = rng.rand(shape[0], n, *shape[1:]).astype(np.float32)
    if absent is not None:   # a class in neither the ground truth nor the prediction
        labels[labels == absent] = ignore
        scores[:, absent] = -1
    return labels, scores


@pytest.mark.parametrize("absent", [None, 2])
def test_segmentation_matches_numpy(absent, monkeypatch):
    labels, scores = random_segmentation(0, absent=absent)
    metric = SegmentationMetric(5)
    real = mx.nd.NDArray.asnumpy

    def no_copy(self):
        raise AssertionError("update copied an array to the host")
    monkeypatch.setattr(mx.nd.NDArray, "asnumpy", no_copy)
    for b in range(3):    # class scores (B, C, H, W), one image per batch
        metric.update(mx.nd.array(labels[b:b + 1]), mx.nd.array(scores[b:b + 1]))
    monkeypatch.setattr(mx.nd.NDArray, "asnumpy", real)
    miou, acc, iou, conf = numpy_scores(labels, scores.argmax(1), 5)
    res = metric.result()
    assert res["confusion"] == conf.astype(int).tolist()
    assert res["miou"] == pytest.approx(miou, rel=1e-12)
    assert res["pixel_acc"] == pytest.approx(acc, rel=1e-12)
    assert len(res["iou"]) == 5 and all(same(a, b) for a, b in zip(res["iou"], iou))
    assert (res["iou"][2] is None) == (absent == 2)
    again = SegmentationMetric(5)      # the same as label maps (B, H, W), NumPy, in one batch
    again.update(labels, scores.argmax(1))
    assert again.result() == res


def test_segmentation_agrees_with_gluoncv_when_every_class_occurs():
    from gluoncv.utils.metrics.segmentation import SegmentationMetric as GluonCVMetric
    labels, scores = random_segmentation(1)
    ours, theirs = SegmentationMetric(5), GluonCVMetric(5)
    ours.update(mx.nd.array(labels), mx.nd.array(scores))
    theirs.update(mx.nd.array(np.where(labels == 255, -1, labels)), mx.nd.array(scores))  # GluonCV ignores -1
    acc, miou = theirs.get()
    res = ours.result()
    assert res["pixel_acc"] == pytest.approx(acc, rel=1e-9)
    assert res["miou"] == pytest.approx(miou, rel=1e-9)


def test_segmentation_ignore_label_and_unknown_labels():
    metric = SegmentationMetric(3, ignore_label=-1)
    metric.update(np.array([[[0, 1, -1, 2]]]), np.array([[[0, 2, 7, 2]]]))
    res = metric.result()
    assert res["pixel_acc"] == pytest.approx(2 / 3) and res["iou"] == [1.0, 0.0, 0.5]
    metric.update(np.array([[[5]]]), np.array([[[0]]]))
    with pytest.raises(ValueError, match="1 pixel"):
        metric.result()


def test_segmentation_two_workers_equal_one_worker():
    labels, scores = random_segmentation(2, shape=(4, 6, 5))
    whole, parts = SegmentationMetric(5), [SegmentationMetric(5), SegmentationMetric(5)]
    whole.update(mx.nd.array(labels), mx.nd.array(scores))
    parts[0].update(mx.nd.array(labels[:3]), mx.nd.array(scores[:3]))
    parts[1].update(mx.nd.array(labels[3:]), mx.nd.array(scores[3:]))
    one = whole.result()
    assert TwoWorkers().run(parts) == [one, one]
    assert TwoWorkers().run([SegmentationMetric(5), whole])[0] == one   # a worker with no images


HOROVOD_JOB = """
import json, os
import mxnet as mx
from gluon_suite.distributed import get_communicator
from gluon_suite.cv.metrics import DetectionMetric, SegmentationMetric
from tests.cv.test_metrics import (CLASSES, FakeCocoReader, batch, coco_batch, random_segmentation,
                                   voc_case)
comm = get_communicator()
out = {}
for kind in ("voc07", "voc12"):
    m = DetectionMetric(CLASSES, kind=kind)
    if comm.rank == 1:
        m.update(*batch(voc_case()), indices=[0, 1])
    out[kind] = m.result(comm)
m = DetectionMetric(CLASSES, kind="coco", coco=FakeCocoReader(os.environ["ANN"]))
m.update(*coco_batch(comm.rank), indices=[comm.rank])
out["coco"] = m.result(comm)
labels, scores = random_segmentation(2, shape=(4, 6, 5))
s = SegmentationMetric(5)
s.update(mx.nd.array(labels[comm.rank::2]), mx.nd.array(scores[comm.rank::2]))
out["seg"] = s.result(comm)
with open(os.path.join(os.environ["OUT"], f"rank{comm.rank}.json"), "w") as f:
    json.dump(out, f)
"""


@pytest.mark.horovod
def test_horovod_two_workers(tmp_path, horovod, monkeypatch):
    ann = write_coco(tmp_path)
    monkeypatch.setenv("ANN", str(ann))
    ranks = horovod(HOROVOD_JOB)
    expected = {}
    for kind in ("voc07", "voc12"):
        m = DetectionMetric(CLASSES, kind=kind)
        m.update(*batch(voc_case()), indices=[0, 1])
        expected[kind] = m.result()
    m = DetectionMetric(CLASSES, kind="coco", coco=FakeCocoReader(ann))
    m.update(*coco_batch(0), indices=[0])
    m.update(*coco_batch(1), indices=[1])
    expected["coco"] = m.result()
    labels, scores = random_segmentation(2, shape=(4, 6, 5))
    s = SegmentationMetric(5)
    s.update(mx.nd.array(labels), mx.nd.array(scores))
    expected["seg"] = s.result()
    expected = json.loads(json.dumps(expected))
    assert ranks == [expected, expected]
