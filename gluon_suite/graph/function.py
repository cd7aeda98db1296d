"""Built-in message and reduce functions, as in ``dgl.function``: descriptions, not code, so that
``update_all`` can fuse a (message, reduce) pair into one sparse product.

    import gluon_suite.graph.function as fn
    g.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "h_new"))
"""
from collections import namedtuple

Message = namedtuple("Message", "op lhs rhs out")   # lhs/rhs: (target, field), target in u, v, e
Reduce = namedtuple("Reduce", "op msg out")

# name -> (lhs target, rhs target or None, binary op or None)
_MESSAGES = {
    "copy_u": ("u", None, None), "copy_e": ("e", None, None), "copy_v": ("v", None, None),
    "u_mul_e": ("u", "e", "mul"), "u_add_e": ("u", "e", "add"),
    "u_add_v": ("u", "v", "add"), "u_sub_v": ("u", "v", "sub"), "u_mul_v": ("u", "v", "mul"),
    "u_dot_v": ("u", "v", "dot"), "e_mul_u": ("e", "u", "mul"),
}


def _make_message(name, lhs_t, rhs_t, op):
    if rhs_t is None:
        def f(field, out):
            return Message(name, (lhs_t, field), None, out)
        f.__doc__ = f"Message: the {lhs_t} feature ``field`` as it is, written to ``out``."
    else:
        def f(lhs_field, rhs_field, out):
            return Message(name, (lhs_t, lhs_field), (rhs_t, rhs_field), out)
        f.__doc__ = f"Message: {lhs_t}.{{lhs}} {op} {rhs_t}.{{rhs}}, written to ``out``."
    f.__name__ = name
    return f


for _n, (_l, _r, _o) in _MESSAGES.items():
    globals()[_n] = _make_message(_n, _l, _r, _o)


def sum(msg, out):  # noqa: A001 - the dgl.function name
    """Reduce: sum of the incoming messages ``msg`` (0 for no incoming edge)."""
    return Reduce("sum", msg, out)


def mean(msg, out):
    """Reduce: mean of the incoming messages (0 for no incoming edge)."""
    return Reduce("mean", msg, out)


def max(msg, out):  # noqa: A001
    """Reduce: element-wise max of the incoming messages (0 for no incoming edge)."""
    return Reduce("max", msg, out)


__all__ = list(_MESSAGES) + ["sum", "mean", "max", "Message", "Reduce"]
