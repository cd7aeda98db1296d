"""GAT node classification written against DGL's MXNet API (``dgl``, ``dgl.nn.mxnet.conv``).

Follows DGL's example examples/mxnet/gat (gat.py + train.py; Apache-2.0, Copyright the DGL team):
the same model (multi-head GATConv layers whose heads are concatenated, ELU, a last layer whose
heads are averaged), self-loops added after removing existing ones, softmax cross-entropy on the
training nodes and Adam. It is written anew, not copied; the only lines a DGL user would write
differently are the imports marked ``# gluon_suite`` and the data set (``SBMDataset``, a
stochastic block model, here; ``CoraGraphDataset`` in DGL). Defaults are trimmed for speed.

    python examples/graph/gat.py --epochs 60
"""
import argparse
import time

import mxnet as mx
import numpy as np
from mxnet import gluon

import gluon_suite.graph as dgl                                  # gluon_suite: was `import dgl`
from gluon_suite.graph.data import SBMDataset                    # gluon_suite: was dgl.data.CoraGraphDataset
from gluon_suite.graph.nn.conv import GATConv                    # gluon_suite: was dgl.nn.mxnet.conv


class GAT(gluon.nn.Block):
    def __init__(self, g, num_layers, in_dim, num_hidden, num_classes, heads, activation, feat_drop, attn_drop,
                 alpha, residual):
        super().__init__()
        self.g, self.num_layers, self.activation = g, num_layers, activation
        self.gat_layers = []
        self.gat_layers.append(GATConv(in_dim, num_hidden, heads[0], feat_drop, attn_drop, alpha, False))
        for i in range(1, num_layers):
            self.gat_layers.append(GATConv(num_hidden * heads[i - 1], num_hidden, heads[i], feat_drop, attn_drop,
                                           alpha, residual))
        self.gat_layers.append(GATConv(num_hidden * heads[-2], num_classes, heads[-1], feat_drop, attn_drop, alpha,
                                       residual))
        for i, layer in enumerate(self.gat_layers):
            self.register_child(layer, f"gat_layer_{i}")

    def forward(self, inputs):
        h = inputs
        for i in range(self.num_layers):
            h = self.activation(self.gat_layers[i](self.g, h).flatten())
        return self.gat_layers[-1](self.g, h).mean(1)


def elu(data):
    return mx.nd.LeakyReLU(data, act_type="elu")


def evaluate(model, features, labels, mask):
    logits = model(features)[mask].asnumpy().squeeze()
    return float(np.mean(np.argmax(logits, axis=1) == labels[mask].asnumpy().squeeze()))


def main(args):
    mx.random.seed(args.seed)
    data = SBMDataset(seed=args.seed)
    g = data[0]
    ctx = mx.cpu(0) if args.gpu < 0 else mx.gpu(args.gpu)
    features = g.ndata["feat"].as_in_context(ctx)
    labels = mx.nd.array(g.ndata["label"], dtype="float32", ctx=ctx)
    mask, val_mask, test_mask = (mx.nd.array(np.nonzero(g.ndata[k].asnumpy())[0], ctx=ctx)
                                 for k in ("train_mask", "val_mask", "test_mask"))
    g = dgl.remove_self_loop(g)
    g = dgl.add_self_loop(g)
    heads = [args.num_heads] * args.num_layers + [args.num_out_heads]
    model = GAT(g, args.num_layers, features.shape[1], args.num_hidden, data.num_classes, heads, elu,
                args.in_drop, args.attn_drop, args.alpha, args.residual)
    model.initialize(ctx=ctx)
    trainer = gluon.Trainer(model.collect_params(), "adam", {"learning_rate": args.lr})
    dur = []
    for epoch in range(args.epochs):
        t0 = time.time()
        with mx.autograd.record():
            logits = model(features)
            loss = mx.nd.softmax_cross_entropy(logits[mask].squeeze(), labels[mask].squeeze())
            loss.backward()
        trainer.step(mask.shape[0])
        dur.append(time.time() - t0)
        if epoch % 10 == 9:
            print(f"Epoch {epoch:05d} | Loss {loss.asnumpy()[0]:.4f} | Time(s) {np.mean(dur):.4f} | "
                  f"Validation Accuracy {evaluate(model, features, labels, val_mask):.4f}")
    acc = evaluate(model, features, labels, test_mask)
    print(f"Test Accuracy {acc:.4f}")
    return acc


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="GAT")
    parser.add_argument("--gpu", type=int, default=-1, help="which GPU to use; -1: CPU")
    parser.add_argument("--epochs", type=int, default=60, help="number of training epochs")
    parser.add_argument("--num-heads", type=int, default=8, help="number of hidden attention heads")
    parser.add_argument("--num-out-heads", type=int, default=1, help="number of output attention heads")
    parser.add_argument("--num-layers", type=int, default=1, help="number of hidden layers")
    parser.add_argument("--num-hidden", type=int, default=8, help="number of hidden units")
    parser.add_argument("--residual", action="store_true", default=False, help="use residual connection")
    parser.add_argument("--in-drop", type=float, default=0.6, help="input feature dropout")
    parser.add_argument("--attn-drop", type=float, default=0.6, help="attention dropout")
    parser.add_argument("--lr", type=float, default=0.01, help="learning rate")
    parser.add_argument("--alpha", type=float, default=0.2, help="the negative slope of leaky relu")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    return parser.parse_args(argv)


if __name__ == "__main__":
    main(parse_args())
