"""One typed configuration per recipe: defaults, then a ``--config`` YAML file, then the flags,
merged once where they enter; checked once at the recipe's start; saved with the run.

A recipe's configuration is a dataclass built from option groups (the run folder, publishing
here; compression and elastic training in ``distributed.options``) and its own fields. Each field
carries its type, the same checking function its flag uses (``positive_int``, ``fraction``...), so
a value from the command line, a YAML file or a Python call is checked by one rule::

    cfg = NodeConfig.from_dict({"epochs": 5, "model": "gat"})    # Python
    cfg = NodeConfig.from_sources(vars(args), parser)            # a script: YAML < flags
    train_node_classification(cfg, comm)                         # every recipe: (cfg, comm, log, ctx)

Inside a recipe the configuration reads like the mapping it replaced (``cfg["lr"]``) and like an
object (``cfg.lr``). ``to_dict()`` is the flat ``config.json`` a run folder keeps (the keys are
the flags without ``--``), read back by resume checks and by the fine-tuning scripts.
"""
import argparse
import dataclasses
import os
from typing import ClassVar

from .errors import UserError
from .validate import nonneg_int, output_dir, positive_int, run_folder, suggest


def option(default=None, type=None, many=False, help=None):
    """A configuration field: ``default``, the checking ``type`` (an argparse type; None: any
    text, or a bool for a bool default), ``many`` for a list of such values."""
    meta = {"type": type, "many": many, "help": help}
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: type_copy(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def type_copy(value):
    return list(value) if isinstance(value, list) else dict(value)


def _convert(field, value):
    """``value`` for ``field`` converted by its type; raises ``argparse.ArgumentTypeError`` (or
    ``TypeError``/``ValueError``) with the reason."""
    kind, many = field.metadata.get("type"), field.metadata.get("many")
    if isinstance(field.default, bool):
        if not isinstance(value, bool):
            raise argparse.ArgumentTypeError(f"must be true or false, got {value!r}")
        return value
    if many:
        if not isinstance(value, (list, tuple)):
            raise argparse.ArgumentTypeError(f"must be a list (e.g. [1, 2]), got {value!r}")
        return [kind(v) if kind else v for v in value]
    if isinstance(value, (list, dict)) and not (kind and getattr(kind, "takes_lists", False)):
        raise argparse.ArgumentTypeError(f"must be a single value, got {value!r}")
    return kind(value) if kind else value


def _check(field, value, source):
    """``value`` for ``field`` converted by its type; a UserError names the key and the problem."""
    flag = "--" + field.name.replace("_", "-")
    try:
        return _convert(field, value)
    except argparse.ArgumentTypeError as exc:
        raise UserError(f"{source}: {field.name}: {exc}; give a value as {flag} takes it") from None
    except (TypeError, ValueError):
        raise UserError(f"{source}: {field.name}: {value!r} is not a valid value; give a value as {flag} "
                        "takes it") from None


@dataclasses.dataclass
class RecipeConfig:
    """The base of every recipe's configuration (see the module docstring)."""
    SCRIPT: ClassVar[str] = ""                 # the script that runs the recipe: messages, cards
    STATE_KEYS: ClassVar[tuple] = ("epoch",)   # what a resumable run folder's state.json holds
    CHECKPOINT_FILES: ClassVar[tuple] = ()     # and the files beside it
    RESUME_MODEL: ClassVar[bool] = True        # a resumed run folder must be of the same ``model``

    # ---- building ------------------------------------------------------------------------------
    @classmethod
    def options(cls):
        """``{name: dataclasses.Field}`` of the configuration's keys."""
        return {f.name: f for f in dataclasses.fields(cls) if f.init}

    YAML_EXTRA: ClassVar[dict] = {}            # keys a YAML file may hold besides the fields

    @classmethod
    def from_dict(cls, data=None, source="the config", flags=(), origin="the config"):
        """A configuration from the mapping ``data`` (unset or None keys keep their defaults),
        each value checked by its field's type; ``flags`` are the keys the command line set, the
        rest came from ``origin`` (a ``--config`` file, or the defaults) or the defaults."""
        if isinstance(data, cls):
            return data
        data = dict(data or {})
        fields = cls.options()
        unknown = sorted(set(data) - set(fields))
        if unknown:
            hint = suggest(unknown[0], sorted(fields))
            raise UserError(f"unknown config key(s): {', '.join(unknown)}{hint}; valid keys: "
                            f"{', '.join(sorted(fields))}")
        values = {k: _check(fields[k], v, source) for k, v in data.items() if v is not None}
        cfg = cls(**values)
        object.__setattr__(cfg, "_flags", frozenset(flags))
        object.__setattr__(cfg, "_origin", origin)
        return cfg

    @classmethod
    def from_sources(cls, args, parser=None, extra=None):
        """A script's configuration: ``args`` (``vars()`` of its parsed flags, parsed with
        ``argument_default=SUPPRESS`` so that only the flags given are there) over the YAML file
        of ``args['config']`` (checked against ``parser``'s flags and ``extra``) over the defaults."""
        from .config import load_yaml_config
        args = dict(args)
        path = args.pop("config", None)
        data = cls.adapt_yaml(load_yaml_config(path, parser, cls.yaml_extra(parser, extra)),
                              f"config file {path}") if path else {}
        data.update(args)
        return cls.from_dict(data, source=f"config file {path}" if path else "the command line", flags=set(args),
                             origin=f"--config {path}" if path else "the defaults")

    @classmethod
    def yaml_extra(cls, parser, extra=None):
        """``{key: check}`` for the keys a ``--config`` file may hold besides ``parser``'s flags:
        the fields without a flag (checked by their type) and ``YAML_EXTRA``."""
        from .config import parser_schema
        flags = set(parser_schema(parser)) if parser is not None else set()

        def checker(field):
            return lambda value: _convert(field, value)
        out = {name: checker(f) for name, f in cls.options().items() if name not in flags}
        return {**out, **cls.YAML_EXTRA, **(extra or {})}

    @classmethod
    def describe_defaults(cls, parser):
        """``parser`` with each flag's help ending in its key's default (the one place defaults are
        written is the configuration class; the flags are parsed without defaults)."""
        fields = cls.options()
        for action in parser._actions:
            f = fields.get(action.dest)
            if f is None or not action.option_strings or action.help == argparse.SUPPRESS \
                    or "default" in (action.help or "") or isinstance(f.default, bool):
                continue
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            if default is not None and default != []:
                shown = " ".join(map(str, default)) if isinstance(default, list) else default
                action.help = f"{action.help} (default {shown})" if action.help else f"default {shown}"
        return parser

    @classmethod
    def adapt_yaml(cls, data, source):
        """The checked YAML mapping, its extra keys turned into fields (a recipe may override)."""
        return data

    def replace(self, **changes):
        """A copy with ``changes`` (checked like any value)."""
        return type(self).from_dict({**self.to_dict(), **changes}, flags=self.flags, origin=self.origin)

    # ---- reading -------------------------------------------------------------------------------
    @property
    def origin(self):
        """Where the values the command line did not set came from (named in notes)."""
        return getattr(self, "_origin", "the config")

    @property
    def flags(self):
        """The keys the command line set (what ``settle_compression`` needs to know)."""
        return getattr(self, "_flags", frozenset())

    def to_dict(self):
        """The flat ``{key: value}`` a run folder keeps as ``config.json``."""
        return {name: getattr(self, name) for name in self.options()}

    def __getitem__(self, key):
        if key not in self.options():
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key):
        return key in self.options()

    def get(self, key, default=None):
        return getattr(self, key) if key in self.options() else default

    def keys(self):
        return self.options().keys()

    # ---- checking and saving -------------------------------------------------------------------
    def check(self, comm):
        """Cross-checks that no single value can make (recipes extend it); raises UserError."""

    def checked(self, comm, log=print):
        """The configuration a run uses, checked once before any work: the recipe's cross-checks,
        the run folder to resume from, the elastic launch, and the compression settled against
        the worker count (``settle_compression``; its notes are logged by rank 0)."""
        self.check(comm)
        if "resume" in self:
            self.check_resume()
        if self.get("elastic"):
            from .hosts import require_elastic_launch
            require_elastic_launch(self.SCRIPT)
        if "compressor" not in self:
            return self
        from .config import settle_compression
        settled, notes = settle_compression(self.to_dict(), self.flags, comm.size, elastic=bool(self.get("elastic")),
                                            source=self.origin)
        for note in notes if comm.rank == 0 else ():
            log(f"note: {note}")
        return type(self).from_dict(settled, flags=self.flags, origin=self.origin) if notes else self

    def check_resume(self):
        """The folder ``resume`` names (none, auto: ``out`` when it holds a checkpoint, or a run
        folder) with its state keys, checkpoint files and model checked; None for a fresh start."""
        from .checkpoints import check_resume
        model = self.get("model") if self.RESUME_MODEL else None
        return check_resume(self.resume, self.out, self.STATE_KEYS, self.CHECKPOINT_FILES, model=model)

    def save(self, comm, **extra):
        """Rank 0 writes ``config.json`` (this configuration, the worker count and ``extra``) into
        ``out`` at the start of the run."""
        if comm.rank == 0 and self.get("out"):
            from .fileio import write_json
            os.makedirs(self.out, exist_ok=True)
            write_json(os.path.join(self.out, "config.json"), {**self.to_dict(), "workers": comm.size, **extra})


@dataclasses.dataclass
class RunOptions:
    """Where a run writes, how it starts, and its seed."""
    seed: int = option(0, nonneg_int)
    out: str = option(None, output_dir, help="run folder: logs, checkpoints, config.json")
    resume: str = option("none", run_folder, help="none, auto (continue OUT) or a run folder")
    stop_after_epochs: int = option(None, positive_int, help="stop (resumably) after this many epochs")


@dataclasses.dataclass
class PublishOptions:
    """Publishing the trained model into a zoo store (``model_zoo.publish``)."""
    publish: str = option(None, help="zoo store folder to publish into")
    publish_name: str = option(None, help="registered zoo name to publish under (default: model)")
    publish_url: str = option(None, help="base URL the store is served from")
    publish_tag: str = option(None, help="a tag: publish as NAME:TAG beside a shipped NAME")
    publish_replace: bool = option(False, help="replace a shipped NAME on this machine")
    card: str = option(None, help="where to write the model card (default: OUT/NAME.json)")

