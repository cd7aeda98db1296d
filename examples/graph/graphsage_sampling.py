"""GraphSAGE node classification on sampled mini-batches of blocks, written against DGL's API
(``dgl``, ``dgl.nn.mxnet.conv``, ``dgl.dataloading``).

DGL's MXNet GraphSAGE example (ported unchanged in examples/graph/dgl/graphsage) trains on the
full graph, and DGL's mini-batch examples (``MultiLayerNeighborSampler``, a node ``DataLoader``
yielding ``(input_nodes, output_nodes, blocks)``) exist for PyTorch only. This script is that
mini-batch loop for MXNet, with the full-graph example's model (SAGEConv layers with feature
dropout, ReLU, aggregator 'gcn' by default), self-loops, Adam with weight decay and masked
accuracy; the lines a DGL user would write differently are the imports marked ``# gluon_suite``
and the data set (``SBMDataset``).

    python examples/graph/graphsage_sampling.py --n-epochs 10 --fanouts 5,10 --batch-size 32
"""
import argparse
import time

import mxnet as mx
import numpy as np
from mxnet import gluon, nd
from mxnet.gluon import nn

import gluon_suite.graph as dgl                                  # gluon_suite: was `import dgl`
from gluon_suite.graph.data import SBMDataset                    # gluon_suite: was dgl.data.CoraGraphDataset
from gluon_suite.graph.nn.conv import SAGEConv                   # gluon_suite: was dgl.nn.mxnet.conv


class GraphSAGE(nn.Block):
    def __init__(self, in_feats, n_hidden, n_classes, n_layers, activation, dropout, aggregator_type):
        super().__init__()
        with self.name_scope():
            self.layers = nn.Sequential()
            self.layers.add(SAGEConv(in_feats, n_hidden, aggregator_type, feat_drop=dropout, activation=activation))
            for _ in range(n_layers - 1):
                self.layers.add(SAGEConv(n_hidden, n_hidden, aggregator_type, feat_drop=dropout,
                                         activation=activation))
            self.layers.add(SAGEConv(n_hidden, n_classes, aggregator_type, feat_drop=dropout, activation=None))

    def forward(self, graphs, features):
        """``graphs``: one block per layer, or the full graph (every layer runs on it)."""
        blocks = graphs if isinstance(graphs, list) else [graphs] * len(self.layers)
        h = features
        for layer, block in zip(self.layers, blocks):
            h = layer(block, h)
        return h


def evaluate(model, g, features, labels, mask):
    pred = model(g, features).argmax(axis=1)
    return (((pred == labels) * mask).sum() / mask.sum().asscalar()).asscalar()


def main(args):
    mx.random.seed(args.seed)
    dgl.seed(args.seed)
    data = SBMDataset(seed=args.seed)
    g = data[0]
    features, labels = g.ndata["feat"], mx.nd.array(g.ndata["label"], dtype="float32")
    train_mask, val_mask, test_mask = (g.ndata[k] for k in ("train_mask", "val_mask", "test_mask"))
    g = dgl.remove_self_loop(g)
    g = dgl.add_self_loop(g)
    model = GraphSAGE(features.shape[1], args.n_hidden, data.num_classes, args.n_layers, nd.relu, args.dropout,
                      args.aggregator_type)
    model.initialize()
    loss_fcn = gluon.loss.SoftmaxCELoss()
    trainer = gluon.Trainer(model.collect_params(), "adam", {"learning_rate": args.lr, "wd": args.weight_decay})
    sampler = dgl.dataloading.MultiLayerNeighborSampler([int(f) for f in args.fanouts.split(",")])
    train_nids = np.nonzero(train_mask.asnumpy())[0]
    loader = dgl.dataloading.DataLoader(g, train_nids, sampler, batch_size=args.batch_size, shuffle=True)
    dur = []
    for epoch in range(args.n_epochs):
        t0 = time.time()
        for input_nodes, output_nodes, blocks in loader:
            with mx.autograd.record():
                pred = model(blocks, features[input_nodes])
                loss = loss_fcn(pred, labels[output_nodes]).mean()
            loss.backward()
            trainer.step(batch_size=1)
        dur.append(time.time() - t0)
        if epoch % 10 == 9 or epoch == args.n_epochs - 1:
            acc = evaluate(model, g, features, labels, val_mask)
            print(f"Epoch {epoch:05d} | Time(s) {np.mean(dur):.4f} | Loss {loss.asscalar():.4f} | Accuracy {acc:.4f}")
    acc = evaluate(model, g, features, labels, test_mask)
    print(f"Test accuracy {acc:.2%}")
    return acc


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="GraphSAGE")
    parser.add_argument("--dropout", type=float, default=0.5, help="dropout probability")
    parser.add_argument("--lr", type=float, default=1e-2, help="learning rate")
    parser.add_argument("--n-epochs", type=int, default=10, help="number of training epochs")
    parser.add_argument("--n-hidden", type=int, default=16, help="number of hidden units")
    parser.add_argument("--n-layers", type=int, default=1, help="number of hidden layers")
    parser.add_argument("--weight-decay", type=float, default=5e-4, help="weight for L2 loss")
    parser.add_argument("--aggregator-type", type=str, default="gcn", help="aggregator type: mean/gcn/pool")
    parser.add_argument("--fanouts", type=str, default="5,10", help="neighbours sampled per layer, input layer first")
    parser.add_argument("--batch-size", type=int, default=32, help="seed nodes per mini-batch")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    return parser.parse_args(argv)


if __name__ == "__main__":
    main(parse_args())
