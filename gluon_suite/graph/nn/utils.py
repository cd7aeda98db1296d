"""What the layers share: the zero-in-degree guard, DGL's split of features into the source
and destination sides, and the activation call; and DGL's ``Sequential`` container of graph
layers."""
import mxnet as mx
from mxnet import gluon

from ..base import GraphError
from ..digraph import Graph


def apply_activation(fn, x):
    """``fn(x)`` (``x`` when ``fn`` is None). MXNet's ``nd.relu`` runs as
    ``nd.Activation(act_type="relu")``: the same values and gradient (1 where x > 0, else 0) from
    oneDNN's kernel, whose forward and backward take 3.5 ms on 100k x 64 with 2 threads against
    ``nd.relu``'s 18.7 ms (docs/graph.md, "Where the time went")."""
    if fn is None:
        return x
    if fn is mx.nd.relu:
        return mx.nd.Activation(x, act_type="relu")
    return fn(x)


def check_in_degree(graph, allow, layer):
    """Refuse a graph whose destination nodes include one with no incoming edge (its output
    would be only the bias), unless ``allow``; the message says how to fix it. Reads the graph's
    cached degrees, so no device round trip."""
    if not allow and graph.has_zero_in_degree():
        raise GraphError(f"{layer}: the graph has nodes with no incoming edge, whose output would be "
                         "invalid; add self-loops (g = g.add_self_loop()) or pass allow_zero_in_degree=True")


def expand_as_pair(feat, graph):
    """``(source features, destination features)``: a pair as given, or one tensor for both sides
    (on a block, its first ``num_dst_nodes()`` rows are the destinations)."""
    if isinstance(feat, (tuple, list)):
        if len(feat) != 2:
            raise GraphError("pass node features as one tensor or a (source, destination) pair")
        return feat[0], feat[1]
    if graph.is_block:
        return feat, feat[:graph.num_dst_nodes()]
    return feat, feat


def check_rows(graph, feat_src, layer):
    """Source features must have one row per source node."""
    if feat_src.shape[0] != graph.num_src_nodes():
        raise GraphError(f"{layer}: features have {feat_src.shape[0]} rows but the graph has "
                         f"{graph.num_src_nodes()} (source) nodes; give one row per node")


def maybe_dropout(block, rate, x):
    """``block(x)`` for a dropout rate above 0, else ``x`` itself: Gluon's ``Dropout(0)`` returns a
    copy, one more (N, F) tensor forward and backward for nothing."""
    return block(x) if rate > 0 else x


class Sequential(gluon.nn.Sequential):
    """DGL's ``dgl.nn.mxnet.Sequential``: graph layers run one after another. ``net(g, x)`` calls
    every layer as ``layer(g, *feats)`` on the same graph; ``net([g1, g2, ...], x)`` gives layer
    i the graph i (one graph per layer, blocks of a sampled mini-batch for instance). A layer
    that returns a tuple passes its items to the next layer as separate arguments; the last
    layer's output is returned."""

    def forward(self, graph, *feats):
        """Run the layers on ``graph`` (a graph, or a list with one graph per layer)."""
        layers = list(self._children.values())
        if isinstance(graph, (list, tuple)):
            if len(graph) != len(layers):
                raise GraphError(f"Sequential: {len(graph)} graphs for {len(layers)} layers; give one graph per "
                                 "layer, or one graph for all of them")
            graphs = list(graph)
        elif isinstance(graph, Graph):
            graphs = [graph] * len(layers)
        else:
            raise GraphError(f"Sequential: the first argument is a {type(graph).__name__}; pass a graph or a list "
                             "of graphs (one per layer)")
        out = feats
        for g, layer in zip(graphs, layers):
            if not isinstance(g, Graph):
                raise GraphError(f"Sequential: a {type(g).__name__} in the list of graphs; pass graphs or blocks")
            out = layer(g, *feats)
            feats = out if isinstance(out, tuple) else (out,)
        return out
