"""``gluon-suite zoo``: list the registered models and the checkpoint records of both zoo layers,
download, verify, publish, remove, tabulate and purge checkpoints."""
from ..utils.errors import UserError
from ..utils.validate import existing_dir, existing_file, output_dir


def _cmd_zoo_list(args):
    from ..model_zoo import list_models
    from ..model_zoo.registry import resolve
    names = list_models(args.pattern, pretrained=True if args.pretrained else None)
    if args.pattern and not names:
        from ..utils.validate import suggest
        hint = suggest(args.pattern, list_models())
        which = "with published weights " if args.pretrained else ""
        raise UserError(f"no registered model {which}matches {args.pattern!r}{hint}; use a shell pattern "
                        "such as 'resnest*', or `gluon-suite zoo list` for all names")
    for n in names:
        e = resolve(n)
        print(f"{n:<28} {e.task:<16} {e.description}")
    _print_layers(args.pattern)
    return 0


def _print_layers(pattern=None):
    """The checkpoint records of both zoo layers (shipped, local) and which one each name uses."""
    import fnmatch
    from ..model_zoo.registry import split_tag
    from ..model_zoo.store import layered_records
    rows = [r for r in layered_records() if not r[2].get("companion")
            and (not pattern or fnmatch.fnmatch(r[0], pattern) or fnmatch.fnmatch(split_tag(r[0])[0].name, pattern))]
    if not rows:
        return
    print("\ncheckpoints (layer: shipped = the suite's catalogue, local = published on this machine):")
    for model, layer, rec, status in rows:
        note = {"shadowed": "shadowed by the local --replace record",
                "ignored": "not used: the shipped one is (published without --replace)"}.get(status, status)
        if layer == "local" and rec.get("replaces"):
            note += f", replaces shipped {rec['replaces'][:8]}"
        print(f"  {model:<28} {layer:<8} {rec.get('sha256', rec.get('sha1', ''))[:8]:<9} {note}")
    if any(r[1] == "local" for r in rows):
        print("`gluon-suite zoo remove NAME` deletes a local record (a shadowed shipped checkpoint is used again)")


def _cmd_zoo_remove(args):
    from ..model_zoo.store import remove_record, shipped_records
    rec = remove_record(args.name)
    shipped = shipped_records().get(args.name)
    after = f"the shipped checkpoint ({shipped['sha256'][:8]}) is used again" if shipped \
        else "no checkpoint of this name is left on this machine"
    print(f"removed the local record of '{args.name}' ({rec['sha256'][:8]}); {after}")
    return 0


def _cmd_zoo_download(args):
    from ..model_zoo.registry import split_tag
    from ..model_zoo.store import checkpoint_path, fetch, gluoncv_record
    entry, key = split_tag(args.name)
    path = fetch(gluoncv_record(entry.name), args.root) if entry.weights == "gluoncv" and key is None \
        else checkpoint_path(key or entry.name, args.root)
    print(path)
    return 0


def _cmd_zoo_verify(args):
    from ..model_zoo.store import cache_root, verify_cache
    results = verify_cache(args.root)
    bad = [f for f, ok in results if not ok]
    for f, ok in results:
        print(f"{'ok' if ok else 'CORRUPT'}  {f}")
    print(f"{len(results)} checkpoint(s) in {cache_root(args.root)}, {len(bad)} corrupt"
          + (" (run `gluon-suite zoo download NAME` to fetch them again)" if bad else ""))
    return 1 if bad else 0


def _cmd_zoo_publish(args):
    from ..model_zoo.publish import publish
    rec = publish(args.checkpoint, args.name, args.card, args.store, url=args.url, catalogue=args.catalogue,
                  tag=args.tag, replace=args.replace)
    print(f"published {rec['file_name']} (sha256 {rec['sha256']}, {rec['size']} bytes) into {args.store}")
    return 0


def _cmd_zoo_table(args):
    from ..model_zoo.table import render_markdown, render_text, write_into, zoo_rows
    rows = zoo_rows()
    if args.write:
        write_into(args.write, rows)
        print(f"wrote the table of {len(rows)} checkpoint(s) into {args.write}")
    else:
        print(render_markdown(rows) if args.markdown else render_text(rows), end="")
    return 0


def _cmd_zoo_purge(args):
    from ..model_zoo.store import cache_root, purge
    n = purge(args.root)
    print(f"removed {n} file(s) from {cache_root(args.root)}")
    return 0


def add_parser(sub):
    """Add the ``zoo`` command and its subcommands to the subparsers ``sub`` of ``gluon-suite``."""
    pz = sub.add_parser("zoo", help="list, download, verify, publish, remove, tabulate or purge model checkpoints")
    zsub = pz.add_subparsers(dest="zoo_command", metavar="ZOO_COMMAND")
    zsub.required = True
    root_help = "checkpoint cache (default: $GLUON_SUITE_HOME/models)"
    zl = zsub.add_parser("list", help="registered models, and the checkpoint records of each layer")
    zl.add_argument("pattern", nargs="?", help="shell-style filter, e.g. 'resnest*'")
    zl.add_argument("--pretrained", action="store_true", help="only models with published weights")
    zl.set_defaults(func=_cmd_zoo_list)
    zd = zsub.add_parser("download", help="fetch and verify a model's checkpoint into the cache")
    zd.add_argument("name")
    zd.add_argument("--root", type=output_dir, help=root_help)
    zd.set_defaults(func=_cmd_zoo_download)
    zv = zsub.add_parser("verify", help="re-hash every cached checkpoint")
    zv.add_argument("--root", type=existing_dir, help=root_help)
    zv.set_defaults(func=_cmd_zoo_verify)
    zp = zsub.add_parser("publish", help="put a trained checkpoint into a zoo store")
    zp.add_argument("checkpoint", type=existing_file, help="a .params file written by net.save_parameters")
    zp.add_argument("--name", required=True, help="registered model name")
    zp.add_argument("--card", required=True, type=existing_file, help="the model card, e.g. model_zoo/NAME.json")
    zp.add_argument("--store", required=True, type=output_dir, help="the store folder to publish into")
    zp.add_argument("--url", help="base URL the store is served from (default: file:// of --store)")
    zp.add_argument("--catalogue", action="store_true",
                    help="maintainers: also record it in the suite's own catalogue (with --store model_zoo/store "
                    "--url repo:model_zoo/store for a checkpoint shipped in the source tree)")
    zp.add_argument("--tag", help="publish as NAME.TAG, a checkpoint name of its own (loaded with "
                    "get_model('NAME.TAG', pretrained=True)); the way to publish beside a shipped checkpoint")
    zp.add_argument("--replace", action="store_true",
                    help="make this checkpoint win over the shipped one of the same name on this machine "
                    "(`zoo remove NAME` undoes it)")
    zp.set_defaults(func=_cmd_zoo_publish)
    zx = zsub.add_parser("remove", help="delete a record published on this machine (restores a shipped one it shadowed)")
    zx.add_argument("name", help="the record's name (NAME or NAME.TAG), as `zoo list` shows it")
    zx.set_defaults(func=_cmd_zoo_remove)
    zt = zsub.add_parser("table", help="one row per published checkpoint: metric, hash, size, command, log")
    zt.add_argument("--markdown", action="store_true", help="print the Markdown table of docs/model_zoo.md")
    zt.add_argument("--write", metavar="FILE", help="replace the table between FILE's zoo-table markers")
    zt.set_defaults(func=_cmd_zoo_table)
    zr = zsub.add_parser("purge", help="delete the checkpoint cache")
    zr.add_argument("--root", type=existing_dir, help=root_help)
    zr.set_defaults(func=_cmd_zoo_purge)
