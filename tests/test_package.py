"""The package installs, imports, and keeps its layering (each layer imports only the layers below it)."""
import ast
import importlib
import os
import pkgutil
import re

import gluon_suite

PKG = os.path.dirname(gluon_suite.__file__)


def test_every_module_imports():
    names = [m.name for m in pkgutil.walk_packages([PKG], prefix="gluon_suite.")]
    assert "gluon_suite.cli" in names and "gluon_suite.distributed.comm" in names
    for name in names:
        importlib.import_module(name)


# bottom to top, as in docs/design.md: each layer may import only itself and the layers below it;
# the three domains share one level and never import each other; the command (cli) is the top
LAYERS = [["utils"], ["optim"], ["distributed"], ["whatif"], ["model_zoo"], ["cv", "nlp", "graph", "evidence"], ["cli"]]


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


# names and attributes that hold a DistributedTrainer in this code base (trainer, tr, self.trainer,
# ref_trainer, ...), beside any name bound to a DistributedTrainer(...) call in the module
TRAINER_NAME = re.compile(r"(^|_)(trainer|tr)$")


def _names_of_trainers(tree):
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            func = node.value.func
            called = getattr(func, "id", None) or getattr(func, "attr", None)
            if called == "DistributedTrainer":
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def private_trainer_uses(source):
    """``(line, expression)`` for every read or write of a private attribute (``_name``, not
    ``__dunder__``) of a trainer in ``source``, directly or through ``getattr``/``setattr``/
    ``hasattr``/``delattr`` with a literal name."""
    tree = ast.parse(source)
    bound = _names_of_trainers(tree)

    def is_trainer(expr):
        if isinstance(expr, ast.Name):
            return bool(TRAINER_NAME.search(expr.id)) or expr.id in bound
        return isinstance(expr, ast.Attribute) and bool(TRAINER_NAME.search(expr.attr))

    def private(name):
        return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr) and is_trainer(node.value):
            found.append((node.lineno, ast.unparse(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2
              and is_trainer(node.args[0]) and isinstance(node.args[1], ast.Constant)
              and isinstance(node.args[1].value, str) and private(node.args[1].value)):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_private_attribute_check_catches_reads_and_writes():
    snippet = (
        "def f(trainer, state, net):\n"
        "    u = trainer._updaters[0]\n"                 # read through the usual name
        "    state.trainer._step_count = 3\n"            # write through an attribute
        "    fast = DistributedTrainer(net.collect_params(), 'sgd')\n"
        "    fast._algo.reset()\n"                       # a name bound to a DistributedTrainer
        "    getattr(self._trainer, '_comm')\n"          # through getattr
        "    trainer.step(1); trainer.__class__; net._children; tr.state_dict()\n")
    # self._trainer is the owner's attribute, not the trainer's; dunders and public names pass
    assert sorted(line for line, _ in private_trainer_uses(snippet)) == [2, 3, 5, 6]


def test_no_module_but_the_trainer_touches_a_trainers_private_attributes():
    repo = os.path.dirname(PKG)
    checked, found = 0, []
    for top in ("gluon_suite", "scripts", "bench", "examples"):
        for folder, _, files in os.walk(os.path.join(repo, top)):
            for fn in (f for f in files if f.endswith(".py")):
                path = os.path.join(folder, fn)
                rel = os.path.relpath(path, repo)
                if rel == os.path.join("gluon_suite", "distributed", "trainer.py"):
                    continue
                checked += 1
                found += [f"{rel}:{line}: {expr}" for line, expr in
                          private_trainer_uses(open(path, encoding="utf-8").read())]
    assert checked > 100
    assert not found, "private attributes of a DistributedTrainer used outside trainer.py (use its public " \
                      "accessors or state_dict()):\n" + "\n".join(found)
