"""``HeteroGraphConv``, ``dgl.nn.mxnet.HeteroGraphConv``: one module per relation of a
heterograph, each run on its relation graph, and the results for each destination type
aggregated across relations.

    conv = HeteroGraphConv({"follows": GraphConv(8, 4), "plays": SAGEConv((8, 6), 4, "mean")}, aggregate="sum")
    out = conv(g, {"user": x_user, "game": x_game})       # {"user": (N_user, 4), "game": (N_game, 4)}

Each relation graph is the heterograph's own (``g[relation]``), so a module runs on the same
compiled kernels and cached structures as on a homogeneous or bipartite graph."""
from mxnet import nd
from mxnet.gluon import Block

from ...base import GraphError
from ...hetero_graph import relation_graph
from ...hetero_message import CROSS_REDUCERS

__all__ = ["HeteroGraphConv", "get_aggregate_fn"]


def get_aggregate_fn(agg):
    """DGL's aggregation of the results of several relations for one destination type: a
    function ``(list of tensors, dsttype) -> tensor``. ``'sum'``, ``'max'``, ``'min'``, ``'mean'``
    reduce element-wise over the relations; ``'stack'`` stacks them on axis 1, (N, R, ...), in
    ``canonical_etypes`` order."""
    if agg not in CROSS_REDUCERS:
        raise GraphError(f"HeteroGraphConv(aggregate={agg!r}): choose one of {', '.join(CROSS_REDUCERS)} "
                         "or pass a callable (tensors, dsttype) -> tensor")

    def aggregate(tensors, dsttype):
        if not tensors:
            return None
        if agg == "stack":
            return nd.stack(*tensors, axis=1)
        if len(tensors) == 1:
            return tensors[0]
        if agg == "sum":
            return nd.add_n(*tensors)
        if agg == "mean":
            return nd.add_n(*tensors) / len(tensors)
        return getattr(nd.stack(*tensors, axis=0), agg)(axis=0)
    return aggregate


def _child_name(key):
    return key if isinstance(key, str) else "__".join(key)


class HeteroGraphConv(Block):
    """A module per relation (``mods``: ``{edge type name or canonical triple: module}``; the
    triple wins where both are given), each called as ``module(relation graph, (source
    features, destination features), *mod_args[etype])``; the outputs for one destination type
    merged by ``aggregate`` (``'sum'``, ``'max'``, ``'min'``, ``'mean'``, ``'stack'`` or a callable
    ``(tensors, dsttype)``). Modules' zero-in-degree checks are turned off (there is no general
    self-loop for a relation between two types), as in DGL.

    ``forward(g, inputs, mod_args=None, mod_kwargs=None)``: ``inputs`` ``{node type: tensor}`` or
    a pair of such dicts (sources, destinations); on a block, the destination rows are the first
    ones of the source tensors. A relation whose source type (or, with a pair, destination type)
    has no input is skipped. Returns ``{destination type: tensor}`` for the types some relation
    reached. Gluon 1.x blocks take no keyword arguments: ``mod_kwargs`` only reaches modules that
    are plain callables."""

    def __init__(self, mods, aggregate="sum"):
        super().__init__()
        if not isinstance(mods, dict) or not mods:
            raise GraphError("HeteroGraphConv takes a dict {edge type: module}")
        with self.name_scope():
            for key, mod in mods.items():
                if not (isinstance(key, str) or (isinstance(key, tuple) and len(key) == 3)):
                    raise GraphError(f"HeteroGraphConv: module key {key!r} must be an edge type name or a "
                                     "(srctype, etype, dsttype) triple")
                if isinstance(mod, Block):
                    self.register_child(mod, _child_name(key))
                setter = getattr(mod, "set_allow_zero_in_degree", None)
                if callable(setter):
                    setter(True)
        self.mods = dict(mods)
        self.agg_fn = get_aggregate_fn(aggregate) if isinstance(aggregate, str) else aggregate
        if not callable(self.agg_fn):
            raise GraphError("HeteroGraphConv(aggregate=...): a name or a callable (tensors, dsttype) -> tensor")

    def _module(self, c):
        mod = self.mods.get(c, self.mods.get(c[1]))
        if mod is None:
            raise GraphError(f"HeteroGraphConv has no module for relation {c} (it has "
                             f"{', '.join(map(str, self.mods))}); give one per edge type")
        return mod

    def forward(self, g, inputs, mod_args=None, mod_kwargs=None):
        """``{destination type: output}``; see the class."""
        mod_args, mod_kwargs = mod_args or {}, mod_kwargs or {}
        if isinstance(inputs, tuple):
            if len(inputs) != 2:
                raise GraphError("HeteroGraphConv: inputs are {type: tensor} or a pair of such dicts")
            src_in, dst_in = inputs
        elif g.is_block:
            src_in = inputs
            dst_in = {t: x[:g.num_dst_nodes(t)] for t, x in inputs.items()}
        else:
            src_in = dst_in = inputs
        if not isinstance(src_in, dict) or not isinstance(dst_in, dict):
            raise GraphError("HeteroGraphConv: inputs are {node type: tensor} dicts")
        outputs = {t: [] for t in g.dsttypes}
        for c in g.canonical_etypes:
            stype, etype, dtype = c
            if stype not in src_in or (dtype not in dst_in and isinstance(inputs, tuple)):
                continue
            if g.is_block and not (g.num_src_nodes(stype) and g.num_dst_nodes(dtype)):
                continue   # a sampled block without such nodes (MXNet has no zero-row tensors to give)
            mod = self._module(c)
            args = mod_args.get(c, mod_args.get(etype, ()))
            kwargs = mod_kwargs.get(c, mod_kwargs.get(etype, {}))
            if kwargs and isinstance(mod, Block):
                raise GraphError(f"HeteroGraphConv: mod_kwargs for {c}, but Gluon 1.x blocks take no keyword "
                                 "arguments; pass them in mod_args, by position")
            dst_x = dst_in.get(dtype)
            if dst_x is None:
                raise GraphError(f"HeteroGraphConv: relation {c} has source input but its destination type "
                                 f"{dtype!r} has none; give inputs for {dtype!r} too")
            outputs[dtype].append(mod(relation_graph(g, c), (src_in[stype], dst_x), *args, **kwargs))
        return {t: self.agg_fn(outs, t) for t, outs in outputs.items() if outs}

    def __repr__(self):
        inner = ",\n".join(f"  {k}: {m}" for k, m in self.mods.items())
        return f"HeteroGraphConv({{\n{inner}\n}})"
