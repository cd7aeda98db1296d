"""``gluon-suite launch``: start a (possibly elastic) Horovod job over Gloo, with the launcher's
checks and one-line errors (the launcher itself is ``gluon_suite.distributed.launch``)."""
from ..utils.validate import positive_int, retype


def _cmd_launch(args):
    from ..distributed.launch import launch
    return launch(args)


def add_parser(sub):
    """Add the ``launch`` command to the subparsers ``sub`` of ``gluon-suite``."""
    pl = sub.add_parser("launch", help="start a (possibly elastic) Horovod job, with checks and one-line errors",
                        description="Start a Horovod job over Gloo; elastic with --min-np/--max-np and a "
                        "host-discovery script. Example: gluon-suite launch --min-np 2 --max-np 3 "
                        "--host-discovery-script scripts/distributed/discover_hosts.sh --network-interface lo "
                        "-- python scripts/cv/train_classification.py --elastic")
    from ..distributed.launch import add_arguments
    add_arguments(pl)
    retype(pl, np=positive_int, min_np=positive_int, max_np=positive_int, elastic_timeout=positive_int)
    pl.set_defaults(func=_cmd_launch)
