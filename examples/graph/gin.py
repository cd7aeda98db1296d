"""GIN graph classification written against DGL's MXNet API (``dgl``, ``dgl.nn.mxnet``).

Follows DGL's example examples/mxnet/gin (gin.py, main.py, dataloader.py; Apache-2.0, Copyright
the DGL team): the same model (GINConv layers whose apply function is an MLP + BatchNorm + ReLU,
BatchNorm and ReLU after every layer, a graph readout of every layer's output, each through its
own linear predictor with dropout, summed), a collate function that batches graphs with
``dgl.batch``, Adam with a step-halving schedule and softmax cross-entropy. It is written anew,
not copied; the only lines a DGL user would write differently are the imports marked
``# gluon_suite`` and the data set (generated graph families here, ``GINDataset('MUTAG')`` in DGL,
with a seeded random 70/30 split in place of DGL's 10-fold split). Defaults are trimmed for speed.

    python examples/graph/gin.py --epochs 20
"""
import argparse

import mxnet as mx
import numpy as np
from mxnet import gluon, nd
from mxnet.gluon import nn

import gluon_suite.graph as dgl                                  # gluon_suite: was `import dgl`
from gluon_suite.graph.data import GraphFamiliesDataset          # gluon_suite: was dgl.data.gindt.GINDataset
from gluon_suite.graph.nn import AvgPooling, GINConv, MaxPooling, SumPooling   # gluon_suite: was dgl.nn.mxnet


class ApplyNodeFunc(nn.Block):
    """The MLP, then BatchNorm and ReLU."""

    def __init__(self, mlp):
        super().__init__()
        with self.name_scope():
            self.mlp = mlp
            self.bn = nn.BatchNorm(in_channels=self.mlp.output_dim)

    def forward(self, h):
        return nd.relu(self.bn(self.mlp(h)))


class MLP(nn.Block):
    """``num_layers`` dense layers, BatchNorm and ReLU between them, a linear output."""

    def __init__(self, num_layers, input_dim, hidden_dim, output_dim):
        super().__init__()
        self.num_layers, self.output_dim = num_layers, output_dim
        with self.name_scope():
            self.linears, self.batch_norms = nn.Sequential(), nn.Sequential()
            dims = [input_dim] + [hidden_dim] * (num_layers - 1) + [output_dim]
            for i in range(num_layers):
                self.linears.add(nn.Dense(dims[i + 1], in_units=dims[i]))
            for _ in range(num_layers - 1):
                self.batch_norms.add(nn.BatchNorm(in_channels=hidden_dim))

    def forward(self, x):
        h = x
        for i in range(self.num_layers - 1):
            h = nd.relu(self.batch_norms[i](self.linears[i](h)))
        return self.linears[-1](h)


class GIN(nn.Block):
    def __init__(self, num_layers, num_mlp_layers, input_dim, hidden_dim, output_dim, final_dropout, learn_eps,
                 graph_pooling_type, neighbor_pooling_type):
        super().__init__()
        self.num_layers = num_layers
        with self.name_scope():
            self.ginlayers, self.batch_norms = nn.Sequential(), nn.Sequential()
            for i in range(num_layers - 1):
                mlp = MLP(num_mlp_layers, input_dim if i == 0 else hidden_dim, hidden_dim, hidden_dim)
                self.ginlayers.add(GINConv(ApplyNodeFunc(mlp), neighbor_pooling_type, 0, learn_eps))
                self.batch_norms.add(nn.BatchNorm(in_channels=hidden_dim))
            self.linears_prediction = nn.Sequential()
            for i in range(num_layers):
                self.linears_prediction.add(nn.Dense(output_dim, in_units=input_dim if i == 0 else hidden_dim))
            self.drop = nn.Dropout(final_dropout)
            self.pool = {"sum": SumPooling, "mean": AvgPooling, "max": MaxPooling}[graph_pooling_type]()

    def forward(self, g, h):
        hidden_rep = [h]
        for i in range(self.num_layers - 1):
            h = nd.relu(self.batch_norms[i](self.ginlayers[i](g, h)))
            hidden_rep.append(h)
        score = 0
        for i, h in enumerate(hidden_rep):
            score = score + self.drop(self.linears_prediction[i](self.pool(g, h)))
        return score


def collate(samples):
    graphs, labels = map(list, zip(*samples))
    return dgl.batch(graphs), nd.concat(*[nd.reshape(label, (1,)) for label in labels], dim=0)


def eval_net(net, dataloader, criterion):
    total, total_loss, total_correct = 0, 0.0, 0
    for graphs, labels in dataloader:
        outputs = net(graphs, graphs.ndata["attr"])
        total += len(labels)
        total_correct += (nd.argmax(outputs, axis=1).astype("int64") == labels).sum().asscalar()
        total_loss += criterion(outputs, labels).sum().asscalar()
    return total_loss / total, total_correct / total


def main(args):
    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    dataset = GraphFamiliesDataset(seed=args.seed)
    order = np.random.RandomState(args.seed).permutation(len(dataset))
    split = int(0.7 * len(dataset))
    train_set = [dataset[int(i)] for i in order[:split]]
    valid_set = [dataset[int(i)] for i in order[split:]]
    trainloader = gluon.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True, batchify_fn=collate)
    validloader = gluon.data.DataLoader(valid_set, batch_size=args.batch_size, batchify_fn=collate)
    model = GIN(args.num_layers, args.num_mlp_layers, dataset.dim_nfeats, args.hidden_dim, dataset.gclasses,
                args.final_dropout, args.learn_eps, args.graph_pooling_type, args.neighbor_pooling_type)
    model.initialize()
    criterion = gluon.loss.SoftmaxCELoss()
    lr_scheduler = mx.lr_scheduler.FactorScheduler(50, 0.5)
    trainer = gluon.Trainer(model.collect_params(), "adam", {"learning_rate": args.lr, "lr_scheduler": lr_scheduler})
    for epoch in range(args.epochs):
        for graphs, labels in trainloader:
            with mx.autograd.record():
                loss = criterion(model(graphs, graphs.ndata["attr"]), labels).sum() / len(labels)
            loss.backward()
            trainer.step(batch_size=1)
        if epoch % 5 == 4 or epoch == args.epochs - 1:
            train_loss, train_acc = eval_net(model, trainloader, criterion)
            valid_loss, valid_acc = eval_net(model, validloader, criterion)
            print(f"epoch {epoch}: train loss {train_loss:.4f} acc {train_acc:.0%} | "
                  f"valid loss {valid_loss:.4f} acc {valid_acc:.0%}")
    valid_loss, valid_acc = eval_net(model, validloader, criterion)
    print(f"Validation accuracy {valid_acc:.2%}")
    return valid_acc


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="GIN")
    parser.add_argument("--batch_size", type=int, default=32, help="batch size for training and validation")
    parser.add_argument("--num_layers", type=int, default=3, help="number of layers (DGL's default: 5)")
    parser.add_argument("--num_mlp_layers", type=int, default=2, help="number of MLP layers; 1 means linear")
    parser.add_argument("--hidden_dim", type=int, default=32, help="number of hidden units (DGL's default: 64)")
    parser.add_argument("--graph_pooling_type", type=str, default="sum", choices=["sum", "mean", "max"])
    parser.add_argument("--neighbor_pooling_type", type=str, default="sum", choices=["sum", "mean", "max"])
    parser.add_argument("--learn_eps", action="store_true", help="learn the epsilon weighting")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--epochs", type=int, default=20, help="number of epochs to train (DGL's default: 350)")
    parser.add_argument("--lr", type=float, default=0.01, help="learning rate")
    parser.add_argument("--final_dropout", type=float, default=0.5, help="final layer dropout")
    return parser.parse_args(argv)


if __name__ == "__main__":
    main(parse_args())
