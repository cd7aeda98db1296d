"""What the node-classification examples share: the ``--dataset``/``--data-dir``/``--gpu``
flags, the data set they name (embedded karate club or stochastic block model, or Cora/Citeseer
files in a local folder) and the device to run on."""
import mxnet as mx

from gluon_suite.graph.data import CiteseerGraphDataset, CoraGraphDataset, KarateClubDataset, SBMDataset

DATASETS = {"karate": KarateClubDataset, "sbm": SBMDataset, "cora": CoraGraphDataset,
            "citeseer": CiteseerGraphDataset}


def add_data_args(parser, default="sbm"):
    """``--dataset``, ``--data-dir`` (for cora/citeseer) and ``--gpu`` (-1: CPU)."""
    parser.add_argument("--dataset", default=default, choices=sorted(DATASETS),
                        help="karate, sbm (embedded) or cora/citeseer (LINQS files in --data-dir)")
    parser.add_argument("--data-dir", default=None, help="folder holding <name>.content and <name>.cites")
    parser.add_argument("--gpu", type=int, default=-1, help="GPU id, -1 for the CPU")


def load_data(args):
    """The data set the flags name (``data[0]`` is the graph, ``data.num_classes`` its classes)."""
    if args.dataset in ("cora", "citeseer"):
        return DATASETS[args.dataset](raw_dir=args.data_dir)
    return DATASETS[args.dataset]()


def context(args):
    """``mx.gpu(args.gpu)``, or the CPU for -1."""
    return mx.gpu(args.gpu) if args.gpu >= 0 else mx.cpu()


def accuracy(logits, labels, mask):
    """Share of the masked nodes whose arg-max class is the label."""
    correct = (logits.argmax(axis=1) == labels.astype("float32")) * mask
    return correct.sum().asscalar() / max(mask.sum().asscalar(), 1.0)
