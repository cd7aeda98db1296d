"""Built-in message and reduce functions, as in ``dgl.function``: descriptions, not code, so that
``update_all`` can fuse a (message, reduce) pair into one sparse product.

    import gluon_suite.graph.function as fn
    g.update_all(fn.u_mul_e("h", "w", "m"), fn.sum("m", "h_new"))

Messages: ``copy_u(u, out)``, ``copy_e(e, out)`` (and DGL's older names ``copy_src(src, out)``,
``copy_edge(edge, out)``), and every ``{lhs}_{op}_{rhs}(lhs_field, rhs_field, out)`` with lhs
and rhs two different ones of u (source node), v (destination node), e (edge) and op one of add,
sub, mul, div, dot (dot sums over the last axis, keeping it as size 1). Reducers: ``sum``,
``mean``, ``max``, ``min``, ``prod`` with ``(msg, out)``.
"""
import itertools

from collections import namedtuple

Message = namedtuple("Message", "op lhs rhs out")   # lhs/rhs: (target, field), target in u, v, e
Reduce = namedtuple("Reduce", "op msg out")

_TARGET = {"u": "source node", "v": "destination node", "e": "edge"}


def _copy(name, target, arg):
    def f(*args, **kwargs):
        field, out = _bind(name, (arg, "out"), args, kwargs)
        return Message(name, (target, field), None, out)
    f.__doc__ = f"Message: the {_TARGET[target]} feature ``{arg}`` as it is, written to ``out``."
    f.__name__ = name
    return f


def _binary(name, lhs, op, rhs):
    def f(*args, **kwargs):
        lf, rf, out = _bind(name, ("lhs_field", "rhs_field", "out"), args, kwargs)
        return Message(name, (lhs, lf), (rhs, rf), out)
    f.__doc__ = (f"Message: {_TARGET[lhs]} feature ``lhs_field`` {op} {_TARGET[rhs]} feature "
                 f"``rhs_field``, written to ``out``.")
    f.__name__ = name
    return f


def _bind(name, params, args, kwargs):
    """Positional and keyword arguments matched to ``params`` by name, as a Python signature would."""
    if len(args) > len(params):
        raise TypeError(f"{name}() takes {len(params)} arguments ({', '.join(params)})")
    values = dict(zip(params, args))
    for k, v in kwargs.items():
        if k not in params or k in values:
            raise TypeError(f"{name}() got an unexpected or repeated argument {k!r}; it takes {', '.join(params)}")
        values[k] = v
    missing = [p for p in params if p not in values]
    if missing:
        raise TypeError(f"{name}() is missing {', '.join(missing)}")
    return [values[p] for p in params]


_MESSAGES = {"copy_u": _copy("copy_u", "u", "u"), "copy_e": _copy("copy_e", "e", "e"),
             "copy_src": _copy("copy_u", "u", "src"), "copy_edge": _copy("copy_e", "e", "edge"),
             "copy_v": _copy("copy_v", "v", "v")}
for _l, _r in itertools.permutations("uve", 2):
    for _o in ("add", "sub", "mul", "div", "dot"):
        _MESSAGES[f"{_l}_{_o}_{_r}"] = _binary(f"{_l}_{_o}_{_r}", _l, _o, _r)
globals().update(_MESSAGES)
# DGL's older names for the source/destination side
for _old, _new in (("src_mul_edge", "u_mul_e"), ("src_mul_dst", "u_mul_v"), ("src_add_dst", "u_add_v")):
    globals()[_old] = _MESSAGES[_new]


def sum(msg, out):  # noqa: A001 - the dgl.function name
    """Reduce: sum of the incoming messages ``msg`` (0 for no incoming edge)."""
    return Reduce("sum", msg, out)


def mean(msg, out):
    """Reduce: mean of the incoming messages (0 for no incoming edge)."""
    return Reduce("mean", msg, out)


def max(msg, out):  # noqa: A001
    """Reduce: element-wise max of the incoming messages (0 for no incoming edge)."""
    return Reduce("max", msg, out)


def min(msg, out):  # noqa: A001
    """Reduce: element-wise min of the incoming messages (0 for no incoming edge)."""
    return Reduce("min", msg, out)


def prod(msg, out):
    """Reduce: element-wise product of the incoming messages (0 for no incoming edge)."""
    return Reduce("prod", msg, out)


__all__ = list(_MESSAGES) + ["src_mul_edge", "src_mul_dst", "src_add_dst", "sum", "mean", "max", "min",
                             "prod", "Message", "Reduce"]
