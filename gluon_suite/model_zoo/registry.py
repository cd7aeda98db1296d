"""The model registry: constructors register themselves where they are defined.

    @register_model("resnest14_cifar", task="classification", pretrained=False)
    def resnest14_cifar(classes=10, **kwargs): ...

    net = get_model("resnest14_cifar", classes=10)
    net = get_model("resnest14_digits", pretrained=True)  # weights via the checkpoint store

Names are stable. A renamed model keeps its old name as a deprecated alias that still works and
warns. Unknown names raise ValueError listing the closest registered names.
"""
import difflib
import fnmatch
import warnings
from dataclasses import dataclass, field


class ModelNotFound(ValueError):
    """No model is registered under the requested name."""


@dataclass
class ModelEntry:
    """One registered constructor. ``weights`` says where pretrained weights come from:
    ``None`` (none published), ``'store'`` (our checkpoint store, by record) or ``'gluoncv'``
    (GluonCV's model store, under the same name)."""
    name: str
    fn: object
    task: str = ""
    weights: object = None
    description: str = ""
    defaults: dict = field(default_factory=dict)


_REGISTRY = {}
_DEPRECATED = {}   # old name -> new name


def register_model(name=None, task="", weights=None, deprecated_aliases=(), **defaults):
    """Decorator: register ``fn`` under ``name`` (default: the function's name).

    ``weights``: None, ``'store'`` or ``'gluoncv'`` (see ``ModelEntry``). ``deprecated_aliases``:
    old names that keep working with a warning. ``defaults``: keyword arguments passed to ``fn``
    unless the caller overrides them.
    """
    def deco(fn):
        key = name or fn.__name__
        if key in _REGISTRY and _REGISTRY[key].fn is not fn:
            raise ValueError(f"model name {key!r} is already registered by "
                             f"{_REGISTRY[key].fn.__module__}.{_REGISTRY[key].fn.__name__}")
        doc = (fn.__doc__ or "").strip().split("\n")[0]
        _REGISTRY[key] = ModelEntry(key, fn, task, weights, doc, dict(defaults))
        for old in deprecated_aliases:
            _DEPRECATED[old] = key
        return fn
    return deco


_LOADED = False


def _load_domains():
    """Import the model modules that packages declare under the ``gluon_suite.models`` entry-point
    group (setup.py): the zoo itself knows no domain, registration tells it everything."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    from importlib.metadata import entry_points
    for ep in entry_points(group="gluon_suite.models"):
        ep.load()


def resolve(name):
    """The ``ModelEntry`` for ``name`` (deprecated aliases warn); ModelNotFound otherwise."""
    _load_domains()
    key = str(name).lower()
    if key in _DEPRECATED:
        new = _DEPRECATED[key]
        warnings.warn(f"model name {key!r} is deprecated; use {new!r}", FutureWarning, stacklevel=3)
        key = new
    entry = _REGISTRY.get(key)
    if entry is None:
        close = difflib.get_close_matches(key, list(_REGISTRY) + list(_DEPRECATED), n=5, cutoff=0.5)
        hint = f"; did you mean: {', '.join(close)}" if close else ""
        raise ModelNotFound(f"unknown model {name!r}{hint} (`gluon-suite zoo list` shows all "
                            f"{len(_REGISTRY)} models)")
    return entry


def list_models(pattern=None, pretrained=None):
    """Sorted registered names, filtered by a shell-style ``pattern`` (e.g. ``'resnest*'``) and by
    whether pretrained weights are published (``pretrained=True/False``)."""
    from .store import has_pretrained
    _load_domains()
    names = sorted(_REGISTRY)
    if pattern:
        names = [n for n in names if fnmatch.fnmatch(n, pattern)]
    if pretrained is not None:
        names = [n for n in names if has_pretrained(_REGISTRY[n]) == bool(pretrained)]
    return names


TAG_SEP = "."


def split_tag(name):
    """``(entry, key)`` for a model name that may carry a checkpoint tag, timm-style
    (``resnest14_digits.mine``: the registered model ``resnest14_digits``, the checkpoint record
    ``resnest14_digits.mine``); ``key`` is the entry's name when there is no tag. A registered name
    is never read as a tag (``mobilenet1.0``); ``mobilenet1.0.mine`` is its tag ``mine``."""
    text = str(name)
    _load_domains()
    if text.lower() in _REGISTRY or text.lower() in _DEPRECATED:   # GluonCV's names hold dots (mobilenet1.0)
        return resolve(text), None
    base, sep, tag = text.rpartition(TAG_SEP)   # a tag has no dot: the name is what comes before the last
    if not sep:
        return resolve(text), None
    if not tag or not all(c.isalnum() or c in "_-" for c in tag):
        raise ModelNotFound(f"model name {text!r}: a checkpoint tag after '{TAG_SEP}' is letters, digits, "
                            "'_' and '-' (e.g. resnest14_digits.mine)")
    entry = resolve(base)
    return entry, f"{entry.name}{TAG_SEP}{tag}"


def get_model(name, pretrained=False, root=None, ctx=None, source=None, **kwargs):
    """Build the model registered as ``name``; with ``pretrained=True`` load its published weights
    through the checkpoint store (downloaded, verified and cached under ``root``, default
    ``$GLUON_SUITE_HOME/models``). Without weights the model is returned uninitialised, as Gluon
    model zoos do. ``ctx``: the context to load the weights on (default CPU).

    Which checkpoint: a name the suite ships means the shipped checkpoint, unless this machine's
    record was published with ``--replace``; ``source='local'`` (this machine's records),
    ``'shipped'`` or a zoo store folder asks for one layer explicitly, and ``name.tag`` (e.g.
    ``resnest14_digits.mine``) for a checkpoint published with ``--tag``. A pretrained network
    carries ``net.pretrained_cfg``: what its card records about the input (``image_size``,
    ``dataset``, ``classes``) and the metric it reached, as timm's models carry theirs."""
    import mxnet as mx
    entry, key = split_tag(name)
    ctx = ctx or mx.cpu()
    args = {**entry.defaults, **kwargs}
    if pretrained and entry.weights == "gluoncv" and key is None:
        from .store import gluoncv_weights
        return gluoncv_weights(entry, args, root=root, ctx=ctx)
    net = entry.fn(**args)
    if pretrained:
        from .cards import pretrained_config, warn_ignored_local
        from .store import fetch, record_for
        key = key or entry.name
        if source is None:
            warn_ignored_local(key)
        rec = record_for(key, source)
        net.load_parameters(fetch(rec, root), ctx=ctx, cast_dtype=True, dtype_source="current")  # float16 runs too
        net.pretrained_cfg = pretrained_config(rec, source)
    return net


def model_name(text):
    """An argparse type: a registered model name (an unknown one fails with the closest names)."""
    import argparse
    try:
        return resolve(text).name
    except ModelNotFound as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def checkpoint_name(text):
    """An argparse type: a registered model name, optionally with a checkpoint tag
    (``resnest14_digits.mine``); returned as ``name`` or ``name.tag``."""
    import argparse
    try:
        entry, key = split_tag(text)
    except ModelNotFound as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return key or entry.name


def check_weights(path, model, what, fix=None, error=None, **kwargs):
    """Check, before anything is loaded, that the parameter file ``path`` (``what`` names it in
    messages, e.g. ``--params``) is an NDArray file holding exactly the parameters of the
    registered ``model`` (built with ``kwargs`` over its defaults; skipped when its constructor
    needs arguments not given). Returns ``{name: shape}`` of the file."""
    from ..utils.checkpoints import check_params_file
    from ..utils.errors import UserError
    error = error or UserError
    fix = fix or f"give a checkpoint of '{model}' (written by net.save_parameters)"
    shapes = check_params_file(path, what, fix, error=error)
    try:
        net = get_model(model, **kwargs)
    except TypeError:  # the constructor needs sizes (features, classes) that only the run knew
        return shapes
    expected = set(net._collect_params_with_prefix())
    if expected and set(shapes) != expected:
        extra, missing = sorted(set(shapes) - expected), sorted(expected - set(shapes))
        raise error(f"{what} {path} does not hold the parameters of '{model}' ({len(missing)} missing, "
                    f"{len(extra)} foreign, e.g. '{(missing or extra)[0]}'); {fix}")
    return shapes
