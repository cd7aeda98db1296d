"""GCN node classification written against DGL's MXNet API (``dgl``, ``dgl.nn.mxnet``).

Follows DGL's example examples/mxnet/gcn (gcn.py + train.py; Apache-2.0, Copyright the DGL team):
the same model (GraphConv layers, ReLU, dropout between layers), masked softmax cross-entropy,
Adam with weight decay and the masked-accuracy evaluation. It is written anew, not copied; the
only lines a DGL user would write differently are the two imports marked ``# gluon_suite`` and the
data set (``KarateClubDataset`` here, ``CoraGraphDataset`` in DGL). Defaults are trimmed for speed.

    python examples/graph/gcn.py --n-epochs 50
"""
import argparse
import time

import mxnet as mx
import numpy as np
from mxnet import gluon

import gluon_suite.graph as dgl                                  # gluon_suite: was `import dgl`
from gluon_suite.graph.data import KarateClubDataset             # gluon_suite: was dgl.data.CoraGraphDataset
from gluon_suite.graph.nn import GraphConv                       # gluon_suite: was dgl.nn.mxnet


class GCN(gluon.Block):
    def __init__(self, g, in_feats, n_hidden, n_classes, n_layers, activation, dropout):
        super().__init__()
        self.g = g
        self.layers = gluon.nn.Sequential()
        self.layers.add(GraphConv(in_feats, n_hidden, activation=activation))
        for _ in range(n_layers - 1):
            self.layers.add(GraphConv(n_hidden, n_hidden, activation=activation))
        self.layers.add(GraphConv(n_hidden, n_classes))
        self.dropout = gluon.nn.Dropout(rate=dropout)

    def forward(self, features):
        h = features
        for i, layer in enumerate(self.layers):
            if i:
                h = self.dropout(h)
            h = layer(self.g, h)
        return h


def evaluate(model, features, labels, mask):
    pred = model(features).argmax(axis=1)
    return (((pred == labels) * mask).sum() / mask.sum().asscalar()).asscalar()


def main(args):
    mx.random.seed(args.seed)
    data = KarateClubDataset()
    g = data[0]
    ctx = mx.cpu(0) if args.gpu < 0 else mx.gpu(args.gpu)
    features = g.ndata["feat"].as_in_context(ctx)
    labels = mx.nd.array(g.ndata["label"], dtype="float32", ctx=ctx)
    train_mask, val_mask, test_mask = (g.ndata[k].as_in_context(ctx) for k in ("train_mask", "val_mask", "test_mask"))
    if args.self_loop:
        g = dgl.remove_self_loop(g)
        g = dgl.add_self_loop(g)
    degs = g.in_degrees().astype("float32")
    g.ndata["norm"] = mx.nd.expand_dims(mx.nd.power(degs, -0.5), 1).as_in_context(ctx)

    model = GCN(g, features.shape[1], args.n_hidden, data.num_classes, args.n_layers, mx.nd.relu, args.dropout)
    model.initialize(ctx=ctx)
    n_train = train_mask.sum().asscalar()
    loss_fcn = gluon.loss.SoftmaxCELoss()
    trainer = gluon.Trainer(model.collect_params(), "adam", {"learning_rate": args.lr, "wd": args.weight_decay})
    dur = []
    for epoch in range(args.n_epochs):
        t0 = time.time()
        with mx.autograd.record():
            pred = model(features)
            loss = loss_fcn(pred, labels, mx.nd.expand_dims(train_mask, 1)).sum() / n_train
        loss.backward()
        trainer.step(batch_size=1)
        dur.append(time.time() - t0)
        if epoch % 10 == 9:
            acc = evaluate(model, features, labels, val_mask)
            print(f"Epoch {epoch:05d} | Time(s) {np.mean(dur):.4f} | Loss {loss.asscalar():.4f} | "
                  f"Accuracy {acc:.4f} | ETputs(KTEPS) {g.number_of_edges() / np.mean(dur) / 1000:.2f}")
    acc = evaluate(model, features, labels, test_mask)
    print(f"Test accuracy {acc:.2%}")
    return acc


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="GCN")
    parser.add_argument("--dropout", type=float, default=0.5, help="dropout probability")
    parser.add_argument("--gpu", type=int, default=-1, help="gpu (-1: CPU)")
    parser.add_argument("--lr", type=float, default=3e-2, help="learning rate")
    parser.add_argument("--n-epochs", type=int, default=50, help="number of training epochs")
    parser.add_argument("--n-hidden", type=int, default=16, help="number of hidden gcn units")
    parser.add_argument("--n-layers", type=int, default=1, help="number of hidden gcn layers")
    parser.add_argument("--weight-decay", type=float, default=5e-4, help="weight for L2 loss")
    parser.add_argument("--self-loop", action="store_true", help="graph self-loop (default=False)")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    return parser.parse_args(argv)


if __name__ == "__main__":
    main(parse_args())
