"""The package installs, imports, and keeps its layering (dist never imports the domains)."""
import ast
import importlib
import os
import pkgutil

import gluon_suite

PKG = os.path.dirname(gluon_suite.__file__)


def test_every_module_imports():
    names = [m.name for m in pkgutil.walk_packages([PKG], prefix="gluon_suite.")]
    assert "gluon_suite.cli" in names and "gluon_suite.dist.comm" in names
    for name in names:
        importlib.import_module(name)


def _imports(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            yield ("." * node.level) + (node.module or "")
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name


def test_layers_import_only_downwards():
    domains = {"cv", "nlp", "graph"}
    for layer in ["dist", "utils", "model_zoo", *domains]:
        folder = os.path.join(PKG, layer)
        if not os.path.isdir(folder):
            continue
        forbidden = (domains - {layer}) if layer in domains else domains
        for root, _, files in os.walk(folder):
            for fn in files:
                if not fn.endswith(".py"):
                    continue
                for mod in _imports(os.path.join(root, fn)):
                    parts = set(mod.replace("gluon_suite.", "").lstrip(".").split("."))
                    hit = parts & forbidden
                    assert not (mod.startswith(("gluon_suite.", "..")) and hit), \
                        f"{layer}/{fn} imports {mod}: layers may import only layers below them"


def test_version_is_exposed():
    assert gluon_suite.__version__.count(".") == 2
