#!/usr/bin/env python
"""Train an object detector (SSD) on the embedded digit canvases, a VOC folder or COCO JSON, on one process or many (horovodrun).

    python scripts/cv/train_detection.py --model ssd_128_resnet18_canvas --epochs 12 --out runs/det
    python scripts/cv/train_detection.py --network resnet50_v1 --data-shape 512 --dataset voc --data-dir VOCdevkit/VOC2007
    horovodrun -np 2 -H localhost:2 --gloo python scripts/cv/train_detection.py --epochs 2 --out runs/detection

A YAML --config sets defaults; flags override it; the merged configuration is saved as
OUT/config.json. Outputs: OUT/log.jsonl (one JSON line per epoch), OUT/summary.csv, OUT/best.params
(the worker-averaged model of the best mAP), OUT/last.rank*.params|states + OUT/state.json (resumable).
"""
import sys

from gluon_suite.utils import run_cli


def build_parser():
    """The script's flags, generated from ``DetectionConfig`` (its keys, GluonCV's aliases)."""
    from gluon_suite.cv.detection import DetectionConfig
    return DetectionConfig.build_parser(__doc__.split("\n")[0],
                                        config="YAML file of defaults (keys as the flags, with _ for -)")


def main(argv=None):
    from gluon_suite.cv.dense_common import script_main
    from gluon_suite.cv.detection import DetectionConfig, train_detection
    return script_main(DetectionConfig, train_detection, build_parser(), argv)


if __name__ == "__main__":
    run_cli(main, sys.argv[1:])
