"""GraphSAGE trained on sampled mini-batches, as DGL users write it: a
``MultiLayerNeighborSampler`` draws a fixed number of in-neighbours per layer, a node
``DataLoader`` yields ``(input_nodes, output_nodes, blocks)``, and the model runs one block per
layer. Evaluation runs the same model on the full graph.

    python examples/graph/graphsage_sampling.py --dataset sbm --fanouts 5,10 --batch-size 32
"""
import argparse
import time

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

import gluon_suite.graph as dgl                    # with DGL: import dgl
from graphsage import GraphSAGE
from node_data import accuracy, add_data_args, context, load_data


def main(args):
    ctx = context(args)
    dgl.seed(args.seed)
    data = load_data(args)
    g = dgl.add_self_loop(dgl.remove_self_loop(data[0])).to(ctx)
    feat, label = g.ndata["feat"], g.ndata["label"]
    val_mask, test_mask = g.ndata["val_mask"], g.ndata["test_mask"]
    train_nids = np.flatnonzero(g.ndata["train_mask"].asnumpy())

    fanouts = [int(f) for f in args.fanouts.split(",")]
    model = GraphSAGE(feat.shape[1], args.n_hidden, data.num_classes, len(fanouts) - 1, args.aggregator_type,
                      args.dropout)
    model.initialize(ctx=ctx)
    trainer = gluon.Trainer(model.collect_params(), "adam", {"learning_rate": args.lr, "wd": args.weight_decay})
    loss_fn = gluon.loss.SoftmaxCELoss()
    sampler = dgl.dataloading.MultiLayerNeighborSampler(fanouts)
    loader = dgl.dataloading.DataLoader(g, train_nids, sampler, batch_size=args.batch_size, shuffle=True)

    for epoch in range(args.epochs):
        t0 = time.time()
        for input_nodes, output_nodes, blocks in loader:
            with autograd.record():
                logits = model(blocks, feat[input_nodes])
                loss = loss_fn(logits, label[output_nodes]).mean()
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
    parser = argparse.ArgumentParser(description="GraphSAGE node classification on sampled blocks", allow_abbrev=False)
    add_data_args(parser)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--n-hidden", type=int, default=16)
    parser.add_argument("--fanouts", default="5,10", help="neighbours sampled per layer, input layer first")
    parser.add_argument("--batch-size", type=int, default=32, help="seed nodes per mini-batch")
    parser.add_argument("--aggregator-type", default="gcn", choices=["mean", "gcn", "pool"])
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--weight-decay", type=float, default=5e-4)
    parser.add_argument("--log-every", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


if __name__ == "__main__":
    a = parse_args()
    mx.random.seed(a.seed)
    main(a)
