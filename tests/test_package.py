"""The package installs, imports, and keeps its layering (each layer imports only the layers below it)."""
import ast
import importlib
import os
import pkgutil

import gluon_suite

PKG = os.path.dirname(gluon_suite.__file__)


def test_every_module_imports():
    names = [m.name for m in pkgutil.walk_packages([PKG], prefix="gluon_suite.")]
    assert "gluon_suite.cli" in names and "gluon_suite.distributed.comm" in names
    for name in names:
        importlib.import_module(name)


# bottom to top, as in docs/design.md: each layer may import only itself and the layers below it;
# the three domains share one level and never import each other
LAYERS = [["utils"], ["optim"], ["distributed"], ["whatif"], ["model_zoo"], ["cv", "nlp", "graph"]]


def _imports(path, package):
    """Absolute ``gluon_suite.*`` module names imported by the file at ``path`` (in ``package``)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                yield ".".join(base + ([node.module] if node.module else []))
            else:
                yield node.module or ""
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name


def test_layers_import_only_downwards():
    level = {name: i for i, names in enumerate(LAYERS) for name in names}
    top = {d for d in os.listdir(PKG) if os.path.isdir(os.path.join(PKG, d)) and not d.startswith("_")}
    assert top == set(level), f"packages {sorted(top ^ set(level))} are not placed in a layer"
    checked = 0
    for layer, rank in level.items():
        for root, _, files in os.walk(os.path.join(PKG, layer)):
            package = "gluon_suite." + os.path.relpath(root, PKG).replace(os.sep, ".")
            for fn in (f for f in files if f.endswith(".py")):
                for mod in _imports(os.path.join(root, fn), package):
                    parts = mod.split(".")
                    if parts[0] != "gluon_suite" or len(parts) < 2 or parts[1] not in level:
                        continue
                    checked += 1
                    other = parts[1]
                    assert other == layer or level[other] < rank, \
                        f"{package}/{fn} imports {mod}: layers may import only layers below them"
    assert checked > 50


def test_version_is_exposed():
    assert gluon_suite.__version__.count(".") == 2
