"""Semi-supervised node classification with a graph convolutional network (Kipf & Welling,
ICLR 2017), written the way a DGL user writes it: ``dgl.graph`` data, ``GraphConv`` layers,
masked cross-entropy on the labelled nodes.

    python examples/graph/gcn.py --dataset karate --epochs 100
    python examples/graph/gcn.py --dataset cora --data-dir ~/data/cora --gpu 0
"""
import argparse
import time

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.gluon import nn

import gluon_suite.graph as dgl                    # with DGL: import dgl
from gluon_suite.graph.nn import GraphConv        # with DGL: from dgl.nn.mxnet import GraphConv
from node_data import accuracy, add_data_args, context, load_data


class GCN(nn.Block):
    """``n_layers`` hidden GraphConv layers of ``n_hidden`` units (ReLU) and an output layer,
    with dropout before every layer but the first."""

    def __init__(self, in_feats, n_hidden, n_classes, n_layers, dropout):
        super().__init__()
        with self.name_scope():
            self.convs = nn.Sequential()
            sizes = [in_feats] + [n_hidden] * n_layers
            for a, b in zip(sizes[:-1], sizes[1:]):
                self.convs.add(GraphConv(a, b, activation=mx.nd.relu))
            self.convs.add(GraphConv(sizes[-1], n_classes))
            self.dropout = nn.Dropout(dropout)

    def forward(self, g, h):
        for i, conv in enumerate(self.convs):
            h = conv(g, self.dropout(h) if i else h)
        return h


def main(args):
    ctx = context(args)
    data = load_data(args)
    g = data[0]
    g = dgl.add_self_loop(dgl.remove_self_loop(g)).to(ctx)
    feat, label = g.ndata["feat"], g.ndata["label"]
    train_mask, val_mask, test_mask = g.ndata["train_mask"], g.ndata["val_mask"], g.ndata["test_mask"]

    model = GCN(feat.shape[1], args.n_hidden, data.num_classes, args.n_layers, args.dropout)
    model.initialize(ctx=ctx)
    trainer = gluon.Trainer(model.collect_params(), "adam", {"learning_rate": args.lr, "wd": args.weight_decay})
    loss_fn = gluon.loss.SoftmaxCELoss()

    for epoch in range(args.epochs):
        t0 = time.time()
        with autograd.record():
            logits = model(g, feat)
            loss = (loss_fn(logits, label) * train_mask).sum() / train_mask.sum()
        loss.backward()
        trainer.step(batch_size=1)
        if epoch % args.log_every == 0 or epoch == args.epochs - 1:
            acc = accuracy(model(g, feat), label, val_mask)
            print(f"Epoch {epoch:04d} | Loss {loss.asscalar():.4f} | Val acc {acc:.4f} | "
                  f"Time {time.time() - t0:.4f}s")
    acc = accuracy(model(g, feat), label, test_mask)
    print(f"Test accuracy {acc:.4f}")
    return acc


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="GCN node classification", allow_abbrev=False)
    add_data_args(parser, default="karate")
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--n-hidden", type=int, default=16)
    parser.add_argument("--n-layers", type=int, default=1, help="hidden layers")
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--log-every", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    mx.random.seed(a.seed)
    main(a)
