#!/usr/bin/env python
"""Train a semantic segmenter (FCN, PSPNet, DeepLabV3) on the embedded digit canvases, a VOC folder or image/mask folders, on one process or many (horovodrun).

    python scripts/cv/train_segmentation.py --model fpn_resnet18_canvas --epochs 12 --out runs/seg
    python scripts/cv/train_segmentation.py --model fcn --backbone resnet50 --dataset voc --data-dir VOCdevkit/VOC2012
    horovodrun -np 2 -H localhost:2 --gloo python scripts/cv/train_segmentation.py --epochs 2 --out runs/segmentation

A YAML --config sets defaults; flags override it; the merged configuration is saved as
OUT/config.json. Outputs: OUT/log.jsonl (one JSON line per epoch), OUT/summary.csv, OUT/best.params
(the worker-averaged model of the best mIoU), OUT/last.rank*.params|states + OUT/state.json (resumable).
"""
import sys

from gluon_suite.utils import run_cli


def build_parser():
    """The script's flags, generated from ``SegmentationConfig`` (its keys, GluonCV's aliases)."""
    from gluon_suite.cv.segmentation import SegmentationConfig
    return SegmentationConfig.build_parser(__doc__.split("\n")[0],
                                           config="YAML file of defaults (keys as the flags, with _ for -)")


def main(argv=None):
    from gluon_suite.cv.dense_common import script_main
    from gluon_suite.cv.segmentation import SegmentationConfig, train_segmentation
    return script_main(SegmentationConfig, train_segmentation, build_parser(), argv)


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
