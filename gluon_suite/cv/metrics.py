"""Detection and segmentation metrics over a test set sharded across workers.

Each worker ``update``s a metric with its own images only; ``result(comm)`` combines every
worker's share through the communicator and returns the same dict on every worker (with
``comm=None``, or a one-worker communicator, it is this process's images alone).

``DetectionMetric(classes, kind, iou_thresh, coco)``, ``kind`` one of:

- ``'voc07'``: PASCAL VOC2007's 11-point AP (GluonCV's ``VOC07MApMetric``);
- ``'voc12'``: the area under the whole interpolated precision/recall curve, as VOC2010 and
  later define it (GluonCV's ``VOCMApMetric``);
- ``'coco'``: pycocotools' ``COCOeval`` on boxes; ``"map"`` is AP averaged over IoU 0.50:0.95,
  with ``"ap50"`` and ``"ap75"`` beside it.

For VOC the matching of detections to ground truth (the VOC rules: greedy by score, one detection
per object, a detection of a *difficult* object neither true nor false) is GluonCV's, done in
``update``; what it accumulates per class (the score and the match flag of every detection, the
count of non-difficult objects) is gathered from all workers and handed to a fresh GluonCV metric,
which computes the APs. The gathered detections are put in one canonical order first, so the
result does not depend on how the images were split between workers: detections of equal score
are ranked the same way whatever the split (which of them comes first is not otherwise defined).
For COCO each worker keeps its detections as ``(image id, category id, box, score)``; they are
gathered and every worker runs ``COCOeval`` on the whole set, restricted to the images that were
evaluated (a partial pass over the validation set scores those images only). Boxes are
``(x1, y1, x2, y2)`` in the original image's pixels; they become COCO's ``[x, y, w, h]`` with
GluonCV's inclusive-pixel convention ``w = x2 - x1 + 1`` (the inverse of GluonCV's COCO reader),
or ``w = x2 - x1`` when the ``coco`` object has ``inclusive_boxes = False``.
A class without ground truth has AP None and is left out of ``"map"``. Every image must be
updated exactly once over all workers: ``result`` raises when an index comes back twice.

``SegmentationMetric(num_classes, ignore_label)`` counts a ``num_classes x num_classes``
confusion matrix (rows: ground truth, columns: prediction) on the arrays' device with MXNet
operators, as float64 counts; ``result`` sums it over the workers. Definitions:

- ``pixel_acc`` = correctly labelled pixels / pixels whose label is not ``ignore_label``;
- ``iou[c]`` = TP / (TP + FP + FN) of class c, None when c has no pixel in either the ground
  truth or the prediction (a union of 0);
- ``miou`` = the mean of the IoUs that are not None.

Compared with GluonCV's ``SegmentationMetric``: GluonCV averages the IoU over all classes, so a
class absent from both ground truth and prediction counts as 0 there and is left out here (the two
agree whenever every class occurs in the evaluated images, as on the full VOC or ADE20K validation
sets); GluonCV ignores label -1 (its readers turn 255 into -1) where this metric ignores
``ignore_label``; and GluonCV adds ``np.spacing(1)`` to its denominators. A label or prediction
that is neither a class nor ``ignore_label`` is counted and makes ``result`` raise.
"""
import contextlib
import copy
import io
import warnings

import mxnet as mx
import numpy as np

KINDS = ("voc07", "voc12", "coco")


def _numpy(a):
    """``a`` as a NumPy array: an NDArray, a NumPy array, a list of batches of either (concatenated)
    or nested lists of numbers."""
    if isinstance(a, (list, tuple)):
        if a and all(isinstance(x, (mx.nd.NDArray, np.ndarray)) and x.ndim for x in a):
            return np.concatenate([_numpy(x) for x in a], axis=0)
        return np.asarray(a)
    return a.asnumpy() if isinstance(a, mx.nd.NDArray) else np.asarray(a)


def _comm(comm):
    if comm is None:
        from ..distributed import LocalCommunicator
        return LocalCommunicator()
    return comm


def gather_rows(comm, rows, width, name):
    """Every worker's ``rows`` (a sequence of ``width`` numbers each) as one float64 array, in rank
    order. Each worker sends one marker row more than it has, so none sends an empty tensor."""
    block = np.zeros((len(rows) + 1, width + 1), dtype=np.float64)
    block[1:, 0] = 1
    if len(rows):
        block[1:, 1:] = np.asarray(rows, dtype=np.float64).reshape(len(rows), width)
    out = comm.allgather(mx.nd.array(block, dtype="float64"), name=name).asnumpy()
    return out[out[:, 0] == 1, 1:]


def _check_once(ids, what):
    unique, counts = np.unique(np.asarray(ids, dtype=np.int64), return_counts=True)
    if (counts > 1).any():
        twice = unique[counts > 1][:5].tolist()
        raise ValueError(f"{int((counts > 1).sum())} {what}(s) were evaluated more than once (e.g. "
                         f"{twice}): each image must be updated exactly once over all workers")


def _nan_none(v):
    return None if v is None or not np.isfinite(v) else float(v)


class DetectionMetric:
    """Mean average precision of a detector (see the module's docstring for the kinds)."""

    def __init__(self, classes, kind="voc07", iou_thresh=0.5, coco=None):
        if kind not in KINDS:
            raise ValueError(f"unknown detection metric {kind!r}; choose one of: {', '.join(KINDS)}")
        if kind == "coco" and coco is None:
            raise ValueError("kind='coco' needs coco= (an object with annotation_file, image_id(i) "
                             "and category_id(class_index))")
        self.classes = [str(c) for c in classes]
        self.kind, self.iou_thresh, self.coco = kind, float(iou_thresh), coco
        self._gt = None
        self.reset()

    def _voc_metric(self):
        from gluoncv.utils.metrics.voc_detection import VOC07MApMetric, VOCMApMetric
        cls = VOC07MApMetric if self.kind == "voc07" else VOCMApMetric
        return cls(iou_thresh=self.iou_thresh, class_names=self.classes)

    def reset(self):
        """Forget every update (start a new evaluation pass)."""
        self._voc = None if self.kind == "coco" else self._voc_metric()
        self._dets = []      # coco: (image id, category id, x, y, w, h, score)
        self._ids = []       # the dataset indices (voc) or image ids (coco) updated
        self._images = 0

    def update(self, pred_bboxes, pred_labels, pred_scores, gt_bboxes, gt_labels,
               gt_difficults=None, indices=None):
        """Add a batch: predictions ``(B, N, 4)``, ``(B, N)``, ``(B, N)`` (label < 0: padding), ground
        truth ``(B, M, 4)``, ``(B, M)`` (label < 0: padding) and optional difficult flags ``(B, M)``,
        as NDArrays or NumPy arrays (or lists of them, as GluonCV's VOC metrics take). ``indices``:
        the data set index of each image (required for coco, whose ground truth comes from the
        annotation file; the ``gt_*`` arguments are then not read)."""
        labels = _numpy(pred_labels)
        n = len(labels)
        if indices is not None:
            indices = _numpy(indices).reshape(-1).astype(np.int64)
            if len(indices) != n:
                raise ValueError(f"indices has {len(indices)} entries for a batch of {n} images")
        elif self.kind == "coco":
            raise ValueError("kind='coco' needs indices= (the data set index of each image)")
        if self.kind == "coco":
            self._add_coco(_numpy(pred_bboxes), labels, _numpy(pred_scores), indices)
        else:
            self._voc.update(pred_bboxes, pred_labels, pred_scores, gt_bboxes, gt_labels, gt_difficults)
            bad = sorted(int(k) for k in self._voc._n_pos if not 0 <= k < len(self.classes))
            if bad:
                raise ValueError(f"class label(s) {bad} outside the {len(self.classes)} classes")
            if indices is not None:
                self._ids.extend(indices.tolist())
        self._images += n

    def _add_coco(self, boxes, labels, scores, indices):
        inclusive = 1.0 if getattr(self.coco, "inclusive_boxes", True) else 0.0
        for box, label, score, index in zip(boxes, labels, scores, indices):
            image_id = int(self.coco.image_id(int(index)))
            self._ids.append(image_id)
            label, score = label.reshape(-1), score.reshape(-1)
            for k in np.where(label >= 0)[0]:
                x1, y1, x2, y2 = (float(v) for v in box[k][:4])
                self._dets.append((image_id, int(self.coco.category_id(int(label[k]))), x1, y1,
                                   x2 - x1 + inclusive, y2 - y1 + inclusive, float(score[k])))

    def result(self, comm=None, verbose=False):
        """``{"map", "per_class": {name: AP or None}, "images"}`` over every worker's updates (plus
        ``"ap50"``, ``"ap75"`` for coco); the same on every worker. ``verbose`` lets COCOeval print
        its table."""
        comm = _comm(comm)
        if self.kind == "coco":
            return self._coco_result(comm, verbose)
        return self._voc_result(comm)

    def _voc_result(self, comm):
        n_cls = len(self.classes)
        counts = np.zeros(n_cls + 1, dtype=np.float64)
        for k, v in self._voc._n_pos.items():
            counts[int(k)] = v
        counts[n_cls] = self._images
        counts = comm.allreduce(mx.nd.array(counts, dtype="float64"), average=False,
                                name="metrics.detection.counts").asnumpy()
        rows = [(k, s, m) for k in sorted(self._voc._score)
                for s, m in zip(self._voc._score[k], self._voc._match[k])]
        rows = gather_rows(comm, rows, 3, "metrics.detection.matches")
        ids = gather_rows(comm, [(i,) for i in self._ids], 1, "metrics.detection.images")
        _check_once(ids[:, 0], "image index")
        rows = rows[np.lexsort((rows[:, 2], -rows[:, 1], rows[:, 0]))]   # class, score down, flag
        metric = self._voc_metric()
        for k in range(n_cls):
            mine = rows[rows[:, 0] == k]
            metric._n_pos[k] = int(round(counts[k]))
            metric._score[k] = mine[:, 1].tolist()
            metric._match[k] = mine[:, 2].astype(np.int64).tolist()
        with warnings.catch_warnings(), np.errstate(invalid="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)   # nanmean of no class with objects
            _, values = metric.get()
        per_class = {name: _nan_none(v) for name, v in zip(self.classes, values[:n_cls])}
        return {"map": float(values[n_cls]), "per_class": per_class, "images": int(counts[n_cls])}

    def _coco_gt(self):
        if self._gt is None:
            from pycocotools.coco import COCO
            with contextlib.redirect_stdout(io.StringIO()):
                self._gt = COCO(self.coco.annotation_file)
        return self._gt

    def _coco_result(self, comm, verbose):
        rows = gather_rows(comm, self._dets, 7, "metrics.detection.coco")
        ids = gather_rows(comm, [(i,) for i in self._ids], 1, "metrics.detection.images")[:, 0]
        _check_once(ids, "image id")
        empty = {"map": float("nan"), "ap50": float("nan"), "ap75": float("nan"),
                 "per_class": {name: None for name in self.classes}, "images": len(ids)}
        if not len(ids):
            return empty
        rows = rows[np.lexsort(rows.T[::-1])]   # one order on every worker, whatever the split
        with contextlib.nullcontext() if verbose else contextlib.redirect_stdout(io.StringIO()):
            evaluation = self._run_cocoeval(rows, sorted(int(i) for i in ids))
        stats = [float(s) if s >= 0 else float("nan") for s in evaluation.stats[:3]]   # -1: no objects
        precision = evaluation.eval["precision"]   # [iou, recall, class, area, max dets]
        cat_ids = list(evaluation.params.catIds)
        per_class = {}
        for k, name in enumerate(self.classes):
            cat = int(self.coco.category_id(k))
            p = precision[:, :, cat_ids.index(cat), 0, -1] if cat in cat_ids else np.array([])
            p = p[p > -1]
            per_class[name] = float(p.mean()) if p.size else None
        return {**empty, "map": stats[0], "ap50": stats[1], "ap75": stats[2], "per_class": per_class}

    def _run_cocoeval(self, rows, image_ids):
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
        gt = self._coco_gt()
        dets = [{"image_id": int(r[0]), "category_id": int(r[1]), "bbox": [float(v) for v in r[2:6]],
                 "score": float(r[6])} for r in rows]
        if dets:
            res = gt.loadRes(dets)
        else:   # loadRes cannot take an empty list
            res = COCO()
            res.dataset = {"images": list(gt.dataset["images"]), "annotations": [],
                           "categories": copy.deepcopy(gt.dataset["categories"])}
            res.createIndex()
        evaluation = COCOeval(gt, res, "bbox")
        evaluation.params.imgIds = image_ids
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
        return evaluation


class SegmentationMetric:
    """Pixel accuracy and mean IoU from a confusion matrix kept on the device (see the module's
    docstring for the definitions)."""

    def __init__(self, num_classes, ignore_label=255):
        if int(num_classes) < 1:
            raise ValueError(f"num_classes must be at least 1, not {num_classes}")
        self.num_classes = int(num_classes)
        self.ignore_label = ignore_label
        self.reset()

    def reset(self):
        """Forget every update (start a new evaluation pass)."""
        self._counts = None   # float64, num_classes**2 cells then the count of unknown pixels

    def update(self, labels, preds):
        """Add a batch: ``labels`` (B, H, W) label maps, ``preds`` class scores (B, C, H, W) or label
        maps (B, H, W); NDArrays (NumPy arrays are copied to the CPU), or lists of them."""
        if isinstance(labels, (list, tuple)):
            for label, pred in zip(labels, preds):
                self.update(label, pred)
            return
        preds = preds if isinstance(preds, mx.nd.NDArray) else mx.nd.array(preds)
        labels = labels if isinstance(labels, mx.nd.NDArray) else mx.nd.array(labels)
        labels = labels.as_in_context(preds.context)
        if preds.ndim == labels.ndim + 1:
            preds = mx.nd.argmax(preds, axis=1)
        if labels.shape != preds.shape:
            raise ValueError(f"labels {labels.shape} and predictions {preds.shape} differ in shape")
        n = self.num_classes
        lab, pred = labels.astype("float32").reshape(-1), preds.astype("float32").reshape(-1)
        known = (lab >= 0) * (lab < n) * (pred >= 0) * (pred < n)
        cell = known * (lab * n + pred) + (1 - known) * (n * n)   # unknown pixels: the last bin
        if self.ignore_label is not None:
            cell = mx.nd.where(lab == float(self.ignore_label), -mx.nd.ones_like(cell), cell)
        hist, _ = mx.nd.histogram(cell, bins=n * n + 1, range=(-0.5, n * n + 0.5))
        hist = hist.astype("float64")
        if self._counts is None:
            self._counts = hist
        else:
            self._counts += hist

    def result(self, comm=None):
        """``{"miou", "pixel_acc", "iou": [per class or None], "confusion": [[gt x pred]]}`` over every
        worker's updates; the same on every worker."""
        n = self.num_classes
        counts = self._counts.as_in_context(mx.cpu()) if self._counts is not None \
            else mx.nd.zeros((n * n + 1,), dtype="float64")
        counts = _comm(comm).allreduce(counts, average=False,
                                       name="metrics.segmentation.confusion").asnumpy()
        if counts[-1]:
            raise ValueError(f"{int(counts[-1])} pixel(s) have a label or prediction outside "
                             f"0..{n - 1} that is not ignore_label ({self.ignore_label})")
        confusion = counts[:n * n].reshape(n, n)
        inter = np.diag(confusion)
        union = confusion.sum(axis=0) + confusion.sum(axis=1) - inter
        iou = [float(i / u) if u > 0 else None for i, u in zip(inter, union)]
        present = [v for v in iou if v is not None]
        total = confusion.sum()
        return {"miou": float(np.mean(present)) if present else float("nan"),
                "pixel_acc": float(inter.sum() / total) if total else float("nan"),
                "iou": iou, "confusion": confusion.astype(np.int64).tolist()}
