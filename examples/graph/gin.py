"""Graph classification with graph isomorphism networks (Xu et al., ICLR 2019) on the
DGL-compatible API: ``GINConv`` layers with two-layer MLPs, a sum readout of every layer's node
features, and one linear prediction per layer, summed. Mini-batches of graphs come from
``GraphDataLoader``.

    python examples/graph/gin.py --dataset families --epochs 30
    python examples/graph/gin.py --dataset MUTAG --data-dir ~/data/MUTAG   # TU-format text files
"""
import argparse
import time

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon
from mxnet.gluon import nn

import gluon_suite.graph as dgl                                 # with DGL: import dgl
from gluon_suite.graph.data import GINDataset                  # with DGL: from dgl.data import GINDataset
from gluon_suite.graph.nn import GINConv, SumPooling           # with DGL: from dgl.nn.mxnet import ...


class MLP(nn.Block):
    """Linear, batch norm, ReLU, linear."""

    def __init__(self, in_feats, hidden, out_feats):
        super().__init__()
        with self.name_scope():
            self.body = nn.Sequential()
            self.body.add(nn.Dense(hidden, in_units=in_feats), nn.BatchNorm(in_channels=hidden),
                          nn.Activation("relu"), nn.Dense(out_feats, in_units=hidden))

    def forward(self, h):
        return self.body(h)


class GIN(nn.Block):
    """``n_layers`` GINConv layers (sum aggregation, learned eps) with batch norm and ReLU; the
    graph score is the sum over layers (input features included) of a linear map of the summed
    node features."""

    def __init__(self, in_feats, hidden, n_classes, n_layers, dropout):
        super().__init__()
        with self.name_scope():
            self.convs, self.norms, self.heads = nn.Sequential(), nn.Sequential(), nn.Sequential()
            for i in range(n_layers):
                self.convs.add(GINConv(MLP(in_feats if i == 0 else hidden, hidden, hidden), "sum", learn_eps=True))
                self.norms.add(nn.BatchNorm(in_channels=hidden))
            for i in range(n_layers + 1):
                self.heads.add(nn.Dense(n_classes, in_units=in_feats if i == 0 else hidden))
            self.pool = SumPooling()
            self.dropout = nn.Dropout(dropout)

    def forward(self, g, h):
        score = self.dropout(self.heads[0](self.pool(g, h)))
        for conv, norm, head in zip(self.convs, self.norms, self.heads[1:]):
            h = mx.nd.relu(norm(conv(g, h)))
            score = score + self.dropout(head(self.pool(g, h)))
        return score


def evaluate(model, loader, ctx):
    correct = total = 0
    for bg, labels in loader:
        bg = bg.to(ctx)
        pred = model(bg, bg.ndata["attr"]).argmax(axis=1).asnumpy()
        correct += int((pred == labels.asnumpy().ravel()).sum())
        total += len(pred)
    return correct / max(total, 1)


def main(args):
    ctx = mx.gpu(args.gpu) if args.gpu >= 0 else mx.cpu()
    dataset = GINDataset(args.dataset, self_loop=False, raw_dir=args.data_dir)
    order = np.random.RandomState(args.seed).permutation(len(dataset))
    cut = int(len(order) * 0.8)
    train = [dataset[int(i)] for i in order[:cut]]
    test = [dataset[int(i)] for i in order[cut:]]
    train_loader = dgl.dataloading.GraphDataLoader(train, batch_size=args.batch_size, shuffle=True)
    test_loader = dgl.dataloading.GraphDataLoader(test, batch_size=args.batch_size)

    model = GIN(dataset.dim_nfeats, args.hidden_dim, dataset.gclasses, args.num_layers, args.dropout)
    model.initialize(ctx=ctx)
    trainer = gluon.Trainer(model.collect_params(), "adam", {"learning_rate": args.lr})
    loss_fn = gluon.loss.SoftmaxCELoss()

    for epoch in range(args.epochs):
        t0, total = time.time(), 0.0
        for bg, labels in train_loader:
            bg, labels = bg.to(ctx), labels.as_in_context(ctx)
            with autograd.record():
                loss = loss_fn(model(bg, bg.ndata["attr"]), labels).mean()
            loss.backward()
            trainer.step(batch_size=1)
            total += loss.asscalar()
        if epoch % args.log_every == 0 or epoch == args.epochs - 1:
            print(f"Epoch {epoch:04d} | Loss {total / len(train_loader):.4f} | "
                  f"Train acc {evaluate(model, train_loader, ctx):.4f} | Time {time.time() - t0:.4f}s")
    acc = evaluate(model, test_loader, ctx)
    print(f"Test accuracy {acc:.4f}")
    return acc


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="GIN graph classification", allow_abbrev=False)
    parser.add_argument("--dataset", default="families", help="'families' (embedded) or a TU data set name")
    parser.add_argument("--data-dir", default=None, help="folder holding the TU data set's text files")
    parser.add_argument("--gpu", type=int, default=-1, help="GPU id, -1 for the CPU")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-layers", type=int, default=3)
    parser.add_argument("--hidden-dim", type=int, default=32)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--log-every", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    mx.random.seed(a.seed)
    dgl.seed(a.seed)   # the loader's shuffle
    main(a)
