"""Feature initializers, as DGL's ``dgl.init``: what ``g.set_n_initializer`` /
``g.set_e_initializer`` take, a function ``(shape, dtype, ctx, id_range)`` returning the rows of
a feature for nodes or edges that get no value otherwise (nodes and edges added in place, the
other nodes when ``pull``/``send_and_recv`` write a new feature). ``zero_initializer`` is the
default."""
from .base import zero_initializer

__all__ = ["zero_initializer"]
