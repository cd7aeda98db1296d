"""GraphSAGE (Hamilton et al., NeurIPS 2017) trained on the whole graph with the DGL-compatible
API: ``SAGEConv`` layers with a chosen aggregator (mean, gcn or pool) and feature dropout. The
mini-batch version, on sampled blocks, is ``graphsage_sampling.py``.

    python examples/graph/graphsage.py --dataset sbm --aggregator-type mean
"""
import argparse
import time

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.gluon import nn

import gluon_suite.graph as dgl                    # with DGL: import dgl
from gluon_suite.graph.nn import SAGEConv         # with DGL: from dgl.nn.mxnet import SAGEConv
from node_data import accuracy, add_data_args, context, load_data


class GraphSAGE(nn.Block):
    """``n_layers`` SAGEConv layers of ``n_hidden`` units (ReLU) and an output SAGEConv; the
    forward takes one graph for every layer or a list of blocks, one per layer."""

    def __init__(self, in_feats, n_hidden, n_classes, n_layers, aggregator_type, dropout):
        super().__init__()
        with self.name_scope():
            self.convs = nn.Sequential()
            sizes = [in_feats] + [n_hidden] * n_layers
            for a, b in zip(sizes[:-1], sizes[1:]):
                self.convs.add(SAGEConv(a, b, aggregator_type, feat_drop=dropout, activation=mx.nd.relu))
            self.convs.add(SAGEConv(sizes[-1], n_classes, aggregator_type, feat_drop=dropout))

    def forward(self, graphs, h):
        blocks = graphs if isinstance(graphs, list) else [graphs] * len(self.convs)
        for conv, block in zip(self.convs, blocks):
            h = conv(block, h)
        return h


def main(args):
    ctx = context(args)
    data = load_data(args)
    g = data[0].to(ctx)
    feat, label = g.ndata["feat"], g.ndata["label"]
    train_mask, val_mask, test_mask = g.ndata["train_mask"], g.ndata["val_mask"], g.ndata["test_mask"]

    model = GraphSAGE(feat.shape[1], args.n_hidden, data.num_classes, args.n_layers, args.aggregator_type,
                      args.dropout)
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
    parser = argparse.ArgumentParser(description="GraphSAGE node classification (full graph)", allow_abbrev=False)
    add_data_args(parser)
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--n-hidden", type=int, default=16)
    parser.add_argument("--n-layers", type=int, default=1, help="hidden layers")
    parser.add_argument("--aggregator-type", default="gcn", choices=["mean", "gcn", "pool"])
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--log-every", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    mx.random.seed(a.seed)
    main(a)
