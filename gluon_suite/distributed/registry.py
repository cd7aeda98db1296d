"""The names of synchronisation algorithms and compressors, and the one place a name is looked up.

An algorithm or a compressor registers under a name with a decorator, and declares its options as
a dataclass (``Options``: defaults, the checking function of each field, help text)::

    @register_algorithm("every_other")
    class EveryOther(Algorithm):
        @dataclasses.dataclass
        class Options(AlgorithmOptions):
            offset: int = option(0, nonneg_int, help="the first step that synchronises")

        @classmethod
        def from_options(cls, opts):
            return cls(offset=opts.offset)

    make_algorithm("every_other", offset=1)   # checked by the dataclass, built by the class

``make_algorithm(name, **options)`` and ``make_compressor(name, **options)`` look the name up,
check the options against the class's dataclass (an unknown option or a bad value is a one-line
``ValueError``) and let the class build itself; nothing else in the package knows a name. A name
of the form ``module:name`` imports ``module`` first, so an algorithm registered in a user's own
module works wherever a name is accepted: ``DistributedTrainer(algorithm=...)``, every training
script's ``--algorithm``/``--compressor``, config files and ``auto``'s candidates (docs/distributed.md,
"Your own algorithm or compressor").
"""
import argparse
import dataclasses
import importlib
import warnings
from collections.abc import Mapping

from ..utils.runconfig import convert_value, option
from ..utils.validate import nonneg_int, suggest

__all__ = ["Registry", "ALGORITHMS", "COMPRESSORS", "register_algorithm", "register_compressor",
           "make_algorithm", "make_compressor", "build_options", "AlgorithmOptions", "CompressorOptions",
           "algorithm_class", "compressor_class", "compressor_value", "algo_option", "option_key",
           "algorithm_from"]


class UnknownName(ValueError):
    """A name that no algorithm or compressor is registered under."""


class Registry(Mapping):
    """Classes by name, case-insensitive. ``registry["name"] = cls`` registers like the decorator
    does (so a dict-style registration cannot be silently ignored); ``registry["module:name"]``
    imports ``module`` first. ``base`` is the class every entry must derive from."""

    def __init__(self, kind, base=None):
        self.kind, self.base = kind, base
        self._items = {}

    def register(self, name, cls, replace=False):
        """Register ``cls`` under ``name`` (lower case, no ``:``); another class under a taken name
        needs ``replace=True``."""
        key = str(name).strip().lower()
        if not key or ":" in key or any(c.isspace() for c in key):
            raise ValueError(f"a {self.kind} name must be a non-empty word without ':' or spaces, got {name!r}")
        if self.base is not None and not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise TypeError(f"register_{self.kind}({name!r}): {cls!r} is not a subclass of {self.base.__name__}")
        options = getattr(cls, "Options", None)
        if options is None or not dataclasses.is_dataclass(options):
            raise TypeError(f"register_{self.kind}({name!r}): {cls.__name__} needs an Options dataclass")
        if key in self._items and self._items[key] is not cls and not replace:
            raise ValueError(f"{self.kind} name {key!r} is taken by {self._items[key].__qualname__}; "
                             f"choose another name or pass replace=True")
        cls.name = key
        self._items[key] = cls
        return cls

    def resolve(self, name):
        """The registered key of ``name``; ``module:name`` imports ``module`` first. Raises
        ``UnknownName`` (one line, with the registered names) for a name nobody registered."""
        text = str(name).strip()
        module, sep, short = text.rpartition(":")
        if sep:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise UnknownName(f"{self.kind} {text!r}: cannot import module {module!r} ({exc}); give "
                                  f"module:name with a module on the Python path") from None
            text = short
        key = text.lower()
        if key not in self._items:
            raise UnknownName(f"unknown {self.kind} {str(name)!r}{suggest(key, sorted(self._items))}; registered: "
                              f"{', '.join(sorted(self._items))} (or module:name for one registered in your module)")
        return key

    def checker(self):
        """An argparse type (and config check) for a name of this registry: the registered key
        (``module:key`` for a name given with its module)."""
        def check(text):
            try:
                key = self.resolve(text)
            except UnknownName as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None
            module, sep, _ = str(text).strip().rpartition(":")
            return f"{module}:{key}" if sep else key   # the module stays: a resumed run imports it again
        check.__name__ = self.kind
        return check

    def __getitem__(self, name):
        return self._items[self.resolve(name)]

    def __setitem__(self, name, cls):
        self.register(name, cls, replace=True)

    def __contains__(self, name):
        try:
            self.resolve(name)
        except UnknownName:
            return False
        return True

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)


ALGORITHMS = Registry("algorithm")
COMPRESSORS = Registry("compressor")


def register_algorithm(name, replace=False):
    """Class decorator: register a synchronisation algorithm (an ``Algorithm`` subclass with an
    ``Options`` dataclass and, unless its constructor takes the options' fields, ``from_options``)
    under ``name``."""
    return lambda cls: ALGORITHMS.register(name, cls, replace)


def register_compressor(name, replace=False):
    """Class decorator: register a ``Compressor`` subclass (with an ``Options`` dataclass) under
    ``name``."""
    return lambda cls: COMPRESSORS.register(name, cls, replace)


def compressor_value(value):
    """An option check: a ``Compressor`` object as it is, or the registered key of a name."""
    if COMPRESSORS.base is not None and isinstance(value, COMPRESSORS.base):
        return value
    return COMPRESSORS.checker()(value)


def algorithm_class(name):
    """The class registered under ``name`` (``module:name`` imports the module)."""
    return ALGORITHMS[name]


def compressor_class(name):
    """The compressor class registered under ``name``."""
    return COMPRESSORS[name]


def algo_option(default=None, type=None, many=False, help=None, key=None, own=False):
    """An option field of an algorithm's ``Options``: ``option()``'s default, check, list-ness and
    help, plus ``key`` (its config key and flag, when it differs from the field's name, e.g.
    ``auto_candidates`` for ``candidates``) and ``own`` (the option makes sense for this algorithm
    alone: giving it with another one is an error, not ignored)."""
    f = option(default, type, many=many, help=help)
    f.metadata = {**f.metadata, "key": key, "own": own}
    return f


@dataclasses.dataclass
class CompressorOptions:
    """What every compressor takes: its ratio (None: the class's own), tensors under ``min_size``
    elements and the first ``warmup_steps`` steps sent dense, and the seed of the randomness all
    workers share."""
    ratio: float = option(None, None, help="compression ratio (dense bytes / sent bytes)")
    min_size: int = option(0, nonneg_int, help="tensors smaller than this go uncompressed")
    warmup_steps: int = option(0, nonneg_int, help="first steps uncompressed")
    seed: int = option(0, nonneg_int, help="seed of the randomness every worker shares")


@dataclasses.dataclass
class AlgorithmOptions:
    """What every algorithm takes: the compressors' reach (``min_size``, ``warmup_steps``) and the
    seed of their shared randomness. A subclass adds the algorithm's own fields."""
    min_size: int = algo_option(0, nonneg_int, help="tensors smaller than this go uncompressed")
    warmup_steps: int = algo_option(0, nonneg_int, key="compress_warmup", help="first steps uncompressed")
    seed: int = algo_option(0, nonneg_int, help="seed of the randomness every worker shares")

    def compressor_common(self, seed_offset=0):
        """The keyword arguments every compressor of this algorithm gets."""
        return {"min_size": self.min_size, "warmup_steps": self.warmup_steps, "seed": self.seed + seed_offset}


def option_key(field):
    """The config key (and flag, with ``-`` for ``_``) of an options field."""
    return field.metadata.get("key") or field.name


def _default(field):
    return field.default_factory() if field.default is dataclasses.MISSING else field.default


def algorithm_from(name, values, keyed=False):
    """The algorithm ``name`` built from ``values``, a mapping that may hold more than its options
    (a recipe's configuration, an old keyword call): None and the options of other algorithms are
    dropped, except an option that another algorithm declares as its ``own`` with a value other
    than its default, which is a one-line ValueError naming the algorithms it belongs to.
    ``keyed``: ``values`` are keyed by config key (``option_key``), not by field name."""
    cls = ALGORITHMS[name]
    name_of = (lambda f: option_key(f)) if keyed else (lambda f: f.name)
    mine = {name_of(f): f.name for f in dataclasses.fields(cls.Options)}
    opts = {}
    for k, v in values.items():
        if v is None or (isinstance(v, (list, tuple)) and not v):
            continue
        if k in mine:
            opts[mine[k]] = v
            continue
        owners = [c for c in ALGORITHMS.values() for f in dataclasses.fields(c.Options)
                  if name_of(f) == k and f.metadata.get("own") and v != _default(f)]
        if owners:
            shown = "--" + k.replace("_", "-") if keyed else k
            raise ValueError(f"{shown} is an option of algorithm {' and '.join(repr(c.name) for c in owners)}, not "
                             f"{cls.name!r}; drop it or use algorithm {owners[0].name!r}")
    return make_algorithm(cls.name, **opts)


def _check_value(field, value, what):
    """``value`` checked by the field's type as a configuration key is (``convert_value``); a bad
    one is a ValueError naming ``what`` and the option."""
    try:
        return convert_value(field, value)
    except (argparse.ArgumentTypeError, TypeError, ValueError) as exc:
        raise ValueError(f"{what}: option {field.name}: {exc}") from None


def build_options(options_cls, values, what):
    """An ``options_cls`` instance from the mapping ``values`` (None: the field's default), each
    value checked by its field's ``type``; then the class's ``check()`` if it has one. An unknown
    key is a one-line ValueError naming ``what`` and its options."""
    fields = {f.name: f for f in dataclasses.fields(options_cls) if f.init}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"{what} takes no option {', '.join(unknown)}{suggest(unknown[0], sorted(fields))}; "
                         f"its options: {', '.join(sorted(fields))}")
    checked = {k: _check_value(fields[k], v, what) for k, v in values.items() if v is not None}
    opts = options_cls(**checked)
    if hasattr(opts, "check"):
        opts.check(what)
    return opts


def _build(cls, values, what):
    opts = build_options(cls.Options, values, what)
    make = getattr(cls, "from_options", None)
    return make(opts) if make is not None else cls(**dataclasses.asdict(opts))


def make_compressor(name="none", **options):
    """The compressor registered under ``name`` built from ``options`` (its ``Options`` fields:
    ``ratio``, ``min_size``, ``warmup_steps``, ``seed``, and its own); a ``Compressor`` object is
    returned as it is (its own options stand: an algorithm's shared options do not change it)."""
    if COMPRESSORS.base is not None and isinstance(name, COMPRESSORS.base):
        return name   # an object carries its own options
    cls = COMPRESSORS[name]
    return _build(cls, options, f"compressor {cls.name!r}")


def make_algorithm(name="sync", **options):
    """The algorithm registered under ``name`` built from ``options`` (its ``Options`` fields;
    None keeps a default). ``name`` may also be an ``Algorithm`` (returned as it is), an options
    instance of a registered algorithm, or a mapping ``{"name": ..., **options}`` (what
    ``Algorithm.config()`` writes for the simple algorithms)."""
    if ALGORITHMS.base is not None and isinstance(name, ALGORITHMS.base):
        if any(v is not None for v in options.values()):
            raise ValueError(f"options {', '.join(options)} given with an algorithm object; set them on the object")
        return name
    if isinstance(name, Mapping):
        spec = dict(name)
        return make_algorithm(spec.pop("name"), **spec, **options)
    if dataclasses.is_dataclass(name) and not isinstance(name, type):
        owner = next((c for c in ALGORITHMS.values() if type(name) is c.Options), None)
        if owner is None:
            raise ValueError(f"{type(name).__name__} is the options class of no registered algorithm")
        return _build(owner, {**dataclasses.asdict(name), **options}, f"algorithm {owner.name!r}")
    cls = ALGORITHMS[name]
    return _build(cls, options, f"algorithm {cls.name!r}")


# keywords of DistributedTrainer before algorithms carried their options: the option each one is
_DEPRECATED = {"ratio": "ratio", "period": "period", "compressor2": "compressor2", "ratio2": "ratio2",
               "min_size": "min_size", "warmup_steps": "warmup_steps", "seed": "seed", "c1_operand": "c1_operand",
               "reset_step": "reset_step", "target_sf": "target_sf", "auto_candidates": "candidates",
               "auto_ratios": "cser_ratios", "auto_periods": "pl_periods"}
_warned = set()


def resolve_algorithm(algorithm, compressor=None, deprecated=None):
    """``DistributedTrainer``'s algorithm from its ``algorithm`` and ``compressor`` arguments (see
    its docstring) and the keywords of earlier versions (``deprecated``: a one-line notice, once per
    process and keyword set; the values become the algorithm's options)."""
    deprecated = dict(deprecated or {})
    unknown = sorted(set(deprecated) - set(_DEPRECATED))
    if unknown:
        raise TypeError(f"DistributedTrainer() got unexpected keyword argument(s) {', '.join(unknown)}")
    if deprecated:
        key = tuple(sorted(deprecated))
        if key not in _warned:
            _warned.add(key)
            warnings.warn(f"DistributedTrainer({', '.join(k + '=' for k in key)}) is deprecated and goes in the next "
                          "release: pass algorithm=make_algorithm(name, **options) (docs/distributed.md)",
                          FutureWarning, stacklevel=3)
    if ALGORITHMS.base is not None and isinstance(algorithm, ALGORITHMS.base):
        if compressor is not None or any(v is not None for v in deprecated.values()):
            raise ValueError("options given beside an Algorithm object; set them on the object "
                             "(make_algorithm(name, compressor=..., ...))")
        return algorithm
    values = {_DEPRECATED[k]: v for k, v in deprecated.items()}
    if compressor is not None:
        values["compressor"] = compressor
    if isinstance(algorithm, Mapping) or (dataclasses.is_dataclass(algorithm) and not isinstance(algorithm, type)):
        return make_algorithm(algorithm, **{k: v for k, v in values.items() if v is not None})
    return algorithm_from(algorithm, values)
