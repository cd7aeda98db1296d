"""One typed configuration per recipe: defaults, then a ``--config`` YAML file, then the flags,
merged once where they enter; checked once at the recipe's start; saved with the run.

A recipe's configuration is a dataclass built from option groups (the run folder here; devices in
``utils.devices``; compression and elastic training in ``distributed.options``; publishing in
``model_zoo.publish``) and its own fields. Each field carries its type, the same checking function
its flag uses (``positive_int``, ``fraction``...), so a value from the command line, a YAML file or
a Python call is checked by one rule; and it carries what its flag needs (spelling, aliases, help
group...), so the script's parser is generated from the class (``utils.flags``)::

    parser = NodeConfig.build_parser("Train a node classifier")  # a script's flags
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
from .flags import flag_name
from .tensorboard import use as use_tensorboard
from .validate import choice_of, nonneg_int, output_dir, positive_int, run_folder, suggest


def option(default=None, type=None, many=False, help=None, *, flag=None, aliases=(), negative=None,
           negative_help=None, group=None, nargs=None, const=None, metavar=None, hidden=False, choices=None,
           required=False, action=None, flag_type=None):
    """A configuration field: ``default``, the checking ``type`` (an argparse type; None: any
    text, or a bool for a bool default, or one of ``choices``), ``many`` for a list of such
    values, and what its flag needs (``utils.flags``): ``flag`` (its spelling, default ``--key-name``;
    False: no flag, the key comes from a YAML file or Python only; for a true/false key with a True
    default, the flag is only the ``negative`` one unless ``flag`` is given), more option strings in
    ``aliases``, ``negative`` (a ``--no-...`` flag that sets False, with ``negative_help``), the help
    ``group``, argparse's ``nargs``/``const``/``metavar``/``choices``/``required``/``action``,
    ``hidden`` (a flag left out of ``--help``) and ``flag_type`` (the flag's own argparse type, where it
    reads text that the key holds in another form)."""
    meta = {"type": type, "many": many, "help": help, "flag": flag, "aliases": tuple(aliases), "negative": negative,
            "negative_help": negative_help, "group": group, "nargs": nargs, "const": const, "metavar": metavar,
            "hidden": hidden, "choices": tuple(choices) if choices is not None else None, "required": required,
            "action": action, "flag_type": flag_type}
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: type_copy(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def type_copy(value):
    """A copy of a list or mapping default (each configuration gets its own)."""
    return list(value) if isinstance(value, list) else dict(value)


def convert_value(field, value):
    """``value`` for ``field`` converted by its type; raises ``argparse.ArgumentTypeError`` (or
    ``TypeError``/``ValueError``) with the reason."""
    kind, many = field.metadata.get("type"), field.metadata.get("many")
    if kind is None and field.metadata.get("choices"):
        kind = choice_of(field.metadata["choices"], field.name.replace("_", " "))
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
    flag = flag_name(field)
    try:
        return convert_value(field, value)
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
    # every recipe's: the logged scalars as TensorBoard event files too (``utils.tensorboard``)
    tensorboard: str = option(None, output_dir, metavar="DIR", group="run",
                              help="also write the scalars the log holds (loss, metrics, lr, throughput, wire "
                                   "bytes) as TensorBoard event files into DIR (rank 0; needs mxboard)")

    # ---- building ------------------------------------------------------------------------------
    @classmethod
    def options(cls):
        """``{name: dataclasses.Field}`` of the configuration's keys."""
        return {f.name: f for f in dataclasses.fields(cls) if f.init}

    YAML_EXTRA: ClassVar[dict] = {}            # keys a YAML file may hold besides the fields
    NO_FLAG: ClassVar[tuple] = ()              # keys (of a shared group) without a flag in this script
    FLAG_GROUPS: ClassVar[dict] = {}           # {help group title: keys} of this script's --help
    FLAG_HELP: ClassVar[dict] = {}             # {key: help} where this script words a shared key's help

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
            return lambda value: convert_value(field, value)
        out = {name: checker(f) for name, f in cls.options().items() if name not in flags}
        return {**out, **cls.YAML_EXTRA, **(extra or {})}

    @classmethod
    def describe_defaults(cls, parser):
        """``parser`` with each flag's help ending in its key's default (``flags.describe_defaults``:
        the one place defaults are written is the configuration class)."""
        from .flags import describe_defaults
        return describe_defaults(cls, parser)

    @classmethod
    def build_parser(cls, description=None, config=None):
        """The script's parser, generated from this class's fields (``utils.flags``): every key with
        a flag, in its help group, parsed without defaults, the defaults named in the help;
        ``config`` is the help of a ``--config`` YAML flag (None: no such flag)."""
        from .flags import build_parser
        return build_parser(cls, description, config=config)

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
        the worker count (``settle_compression``; its notes are logged by rank 0); the run's
        TensorBoard folder is set (``utils.tensorboard.use``)."""
        self.check(comm)
        use_tensorboard(self.tensorboard)   # mxboard missing: one line now, not at the first record
        if "resume" in self:
            self.check_resume()
        if self.get("elastic"):
            from .hosts import require_elastic_launch
            require_elastic_launch(self.SCRIPT)
        settle = getattr(self, "settle_compression", None)   # distributed.options.CompressionOptions
        if settle is None:
            return self
        settled, notes = settle(comm.size)
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
    resume: str = option("none", run_folder, help="none, auto (continue OUT if it holds a checkpoint) or a run folder")
    stop_after_epochs: int = option(None, positive_int, hidden=True, help="stop (resumably) after this many epochs")
