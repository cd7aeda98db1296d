"""Node classification with graph attention networks (Velickovic et al., ICLR 2018) on the
DGL-compatible API: ``GATConv`` hidden layers whose heads are concatenated, an output layer whose
heads are averaged, ELU, feature and attention dropout.

    python examples/graph/gat.py --dataset sbm --epochs 50
    python examples/graph/gat.py --dataset cora --data-dir ~/data/cora --num-heads 8
"""
import argparse
import time

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.gluon import nn

import gluon_suite.graph as dgl                    # with DGL: import dgl
from gluon_suite.graph.nn import GATConv          # with DGL: from dgl.nn.mxnet import GATConv
from node_data import accuracy, add_data_args, context, load_data


def elu(x):
    return mx.nd.LeakyReLU(x, act_type="elu")


class GAT(nn.Block):
    """``n_layers`` GATConv layers of ``num_heads`` x ``n_hidden`` (flattened between layers)
    and an output GATConv with ``num_out_heads`` heads, averaged."""

    def __init__(self, in_feats, n_hidden, n_classes, n_layers, num_heads, num_out_heads, feat_drop, attn_drop):
        super().__init__()
        with self.name_scope():
            self.convs = nn.Sequential()
            width = in_feats
            for _ in range(n_layers):
                self.convs.add(GATConv(width, n_hidden, num_heads, feat_drop, attn_drop, activation=elu))
                width = n_hidden * num_heads
            self.out = GATConv(width, n_classes, num_out_heads, feat_drop, attn_drop)

    def forward(self, g, h):
        for conv in self.convs:
            h = conv(g, h).flatten()              # (N, heads, hidden) -> (N, heads * hidden)
        return self.out(g, h).mean(axis=1)        # (N, out heads, classes) -> (N, classes)


def main(args):
    ctx = context(args)
    data = load_data(args)
    g = dgl.add_self_loop(dgl.remove_self_loop(data[0])).to(ctx)
    feat, label = g.ndata["feat"], g.ndata["label"]
    train_mask, val_mask, test_mask = g.ndata["train_mask"], g.ndata["val_mask"], g.ndata["test_mask"]

    model = GAT(feat.shape[1], args.n_hidden, data.num_classes, args.n_layers, args.num_heads,
                args.num_out_heads, args.in_drop, args.attn_drop)
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
    parser = argparse.ArgumentParser(description="GAT node classification", allow_abbrev=False)
    add_data_args(parser)
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--n-hidden", type=int, default=8, help="units per head")
    parser.add_argument("--n-layers", type=int, default=1, help="hidden layers")
    parser.add_argument("--num-heads", type=int, default=8)
    parser.add_argument("--num-out-heads", type=int, default=1)
    parser.add_argument("--in-drop", type=float, default=0.6)
    parser.add_argument("--attn-drop", type=float, default=0.6)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--log-every", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    mx.random.seed(a.seed)
    main(a)
