"""A script's command-line flags, generated from its configuration dataclass.

Every field made with ``runconfig.option`` carries what its flag needs besides its default, type
and help: the flag's spelling and aliases (GluonCV's ``--num-epochs``, GluonNLP's ``--batch_size``),
its help group, for a true/false key a ``--no-...`` flag, ``nargs``/``const`` (GluonCV's bare
``--mixup``), a metavar, a hidden help, fixed choices, whether it is required, and a parsing type
of its own where the flag reads text that the key holds otherwise (a ``--phase`` per phase). So the
parser is built from the class, not declared beside it::

    parser = ClassificationConfig.build_parser(__doc__.split("\\n")[0], config="YAML file of defaults")

A configuration class may also say, as class attributes, which keys have no flag (``NO_FLAG``:
settable from a YAML file or Python only), which help groups its own script shows
(``FLAG_GROUPS``: ``{title: keys}``, in order) and a wording of its own for a shared key's help
(``FLAG_HELP``). Flags are parsed with ``argument_default=SUPPRESS`` (only the flags given reach the
configuration, which holds the defaults); each flag's help ends with its key's default.
"""
import argparse
import dataclasses

from .validate import ArgumentParser


def flag_name(field):
    """The main option string of ``field``'s flag (``--batch-size`` for ``batch_size``), whether
    or not the field has a flag (messages name it)."""
    flag = field.metadata.get("flag")
    return flag if isinstance(flag, str) else "--" + field.name.replace("_", "-")


def default_of(field):
    """``field``'s default value (a fresh copy for a list or mapping); None when it has none."""
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def field_flags(field, help_text=None):
    """``[(option strings, add_argument keywords)]`` of ``field``: none for a field without a flag,
    one for most, two for a true/false key with both spellings (``--wd-on-bn-bias``, ``--no-wd``).
    ``help_text`` replaces the field's help (a recipe's own wording)."""
    meta = field.metadata
    flag = meta.get("flag")
    if flag is False:
        return []
    text = meta.get("help") if help_text is None else help_text
    if meta.get("hidden"):
        text = argparse.SUPPRESS
    if isinstance(field.default, bool):
        out = []
        if isinstance(flag, str) or (flag is None and field.default is False):
            out.append(((flag_name(field), *meta.get("aliases", ())),
                        {"dest": field.name, "action": "store_true", "help": text}))
        if meta.get("negative"):
            out.append(((meta["negative"],), {"dest": field.name, "action": "store_false",
                                              "help": meta.get("negative_help")}))
        return out
    kwargs = {"dest": field.name, "help": text}
    choices = meta.get("choices")
    if choices is not None:
        kwargs["choices"] = list(choices)
    else:
        kwargs["type"] = meta.get("flag_type") or meta.get("type")
    if meta.get("action"):
        kwargs["action"] = meta["action"]
    elif meta.get("nargs") is not None:
        kwargs["nargs"] = meta["nargs"]
    elif meta.get("many"):
        kwargs["nargs"] = "+"
    for key in ("const", "metavar"):
        if meta.get(key) is not None:
            kwargs[key] = meta[key]
    if meta.get("required"):
        kwargs["required"] = True
    return [((flag_name(field), *meta.get("aliases", ())), kwargs)]


def ordered_fields(config_class):
    """The fields of ``config_class`` in the order its help lists them: the class's own first, then
    those of its bases, nearest first (a shared option group after the recipe's own keys)."""
    fields = {f.name: f for f in dataclasses.fields(config_class) if f.init}
    order = []
    for klass in config_class.__mro__:
        for name in klass.__dict__.get("__annotations__", {}):
            if name in fields and name not in order:
                order.append(name)
    return [fields[name] for name in order]


def add_flags(parser, config_class, defaults=False):
    """Add the flags of ``config_class``'s fields to ``parser``, in their help groups; with
    ``defaults`` each flag also gets its key's default (for a parser that is not parsed with
    ``argument_default=SUPPRESS``). Returns ``parser``."""
    no_flag = set(getattr(config_class, "NO_FLAG", ()))
    helps = getattr(config_class, "FLAG_HELP", {})
    chosen_groups = getattr(config_class, "FLAG_GROUPS", {})
    chosen = {name: title for title, names in chosen_groups.items() for name in names}
    fields = [f for f in ordered_fields(config_class) if f.name not in no_flag and f.metadata.get("flag") is not False]
    by_name = {f.name: f for f in fields}
    unknown = sorted(set(chosen) - set(by_name))
    if unknown:
        raise TypeError(f"{config_class.__name__}.FLAG_GROUPS names keys without a flag: {', '.join(unknown)}")
    groups = {title: parser.add_argument_group(title) for title in chosen_groups}
    # a group chosen by the class lists its keys in the class's order; the others follow the fields
    listed = [by_name[name] for names in chosen_groups.values() for name in names]
    for field in listed + [f for f in fields if f.name not in chosen]:
        title = chosen.get(field.name, field.metadata.get("group"))
        if title is None:
            target = parser
        else:
            if title not in groups:
                groups[title] = parser.add_argument_group(title)
            target = groups[title]
        for strings, kwargs in field_flags(field, helps.get(field.name)):
            if defaults:
                kwargs["default"] = default_of(field)
            target.add_argument(*strings, **kwargs)
    return parser


def describe_defaults(config_class, parser):
    """``parser`` with each flag's help ending in its key's default, "(default X)" (the one place
    defaults are written is the configuration class): not for a true/false key, a key without a
    default, a hidden flag or a help that names its default itself."""
    fields = {f.name: f for f in dataclasses.fields(config_class) if f.init}
    for action in parser._actions:
        f = fields.get(action.dest)
        if f is None or not action.option_strings or action.help == argparse.SUPPRESS \
                or "default" in (action.help or "") or isinstance(f.default, bool):
            continue
        default = default_of(f)
        if default is not None and default != []:
            shown = " ".join(map(str, default)) if isinstance(default, list) else default
            action.help = f"{action.help} (default {shown})" if action.help else f"default {shown}"
    return parser


def build_parser(config_class, description=None, config=None, defaults=False, parser_class=ArgumentParser):
    """The argparse parser of ``config_class``'s flags (``add_flags``) with their defaults named in
    the help (``describe_defaults``). ``config``: the help of a ``--config FILE`` flag (YAML
    defaults), None for a script without one. Without ``defaults`` the flags are parsed with
    ``argument_default=SUPPRESS``, so that only those given reach the configuration. Flags are never
    abbreviated (``allow_abbrev=False``): ``--mod`` is an unknown flag, not ``--model`` or ``--mode``."""
    # no abbreviations: a prefix of one flag must never be read as another (GluonCV's --mode as --model)
    parser = parser_class(description=description, allow_abbrev=False,
                          **({} if defaults else {"argument_default": argparse.SUPPRESS}))
    if config:
        parser.add_argument("--config", help=config)
    add_flags(parser, config_class, defaults=defaults)
    return describe_defaults(config_class, parser)
