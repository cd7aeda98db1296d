"""The ``gluon-suite`` command: ``info`` about the installed stack, ``zoo`` to list, download,
verify, publish, remove and purge model checkpoints, ``launch`` to start a (possibly elastic) Horovod
job, ``samples`` to write small data sets in every documented format, ``whatif`` to predict how a
model scales on a network, and ``bench`` to rerun a published claim and render the docs' tables."""
from .. import __version__
from ..utils.cli_run import run_cli
from ..utils.validate import ArgumentParser
from . import bench as _bench, info as _info, launch as _launch, samples as _samples, whatif as _whatif, zoo as _zoo
from .info import HOROVOD_FIX, HorovodBroken, horovod_build
from .whatif import plot_file

__all__ = ["build_parser", "main", "entry", "horovod_build", "HorovodBroken", "HOROVOD_FIX", "plot_file"]

# the commands in the order `gluon-suite --help` lists them; each module adds its own parser
_COMMANDS = (_info, _zoo, _launch, _samples, _whatif, _bench)


def build_parser():
    """The argument parser of ``gluon-suite``: the top-level flags and one subcommand per command
    module of this package, each of which sets ``func`` to its handler."""
    p = ArgumentParser(prog="gluon-suite", description=" ".join(__doc__.split()).replace("``", "'"))
    p.add_argument("--version", action="version", version=f"gluon-suite {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for command in _COMMANDS:
        command.add_parser(sub)
    return p


def main(argv=None):
    """Entry point of ``gluon-suite``; returns the exit status."""
    args = build_parser().parse_args(argv)
    return args.func(args)


def entry():
    """Console-script entry: run ``main`` with one-line errors."""
    run_cli(main)
