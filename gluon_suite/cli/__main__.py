"""``python -m gluon_suite.cli``: the ``gluon-suite`` command without its console script."""
from . import entry

if __name__ == "__main__":
    entry()
