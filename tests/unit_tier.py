"""The quick tier of the suite (``make test-unit``, ``pytest -p tests.unit_tier``): every test that
starts no process and no training run.

A test leaves the tier when it is marked ``horovod`` or ``long``, or when its code reaches a call
that starts a process (``subprocess``, ``os.system``, the ``horovod`` fixture, ``run_horovod``, a
script's ``main`` or ``run_cli``) or a training run (a recipe's entry point, ``fit``,
``train_loop``). "Its code" is the test function, the module-level helpers it calls (and theirs)
and the fixtures it requests, read from the source, so a new test is placed without a list to keep.
The rest are expected to take seconds; ``--timeout`` in the Makefile's target fails one that hangs.
"""
import ast
import inspect
import textwrap

import pytest

SLOW_CALLS = {
    # processes
    "subprocess", "Popen", "system", "run_horovod", "horovod", "elastic", "run_cli", "main", "interrupt",
    # training runs (the recipes' entry points and the shared loop)
    "pretrain_bert", "train_classification", "train_digits", "finetune_classification", "finetune_squad",
    "train_node_classification", "train_graph_classification", "train_node", "train_graph", "fit",
    "train_loop", "train_elastic",
}

def _called_names(node):
    """Names of the functions ``node`` calls or refers to (``f(...)``, ``mod.f(...)``, ``subprocess``)."""
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            names.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            names.add(sub.attr)
    return names


def _module_functions(module, cache={}):  # noqa: B006  (one parse per module)
    key = module.__name__
    if key not in cache:
        try:
            tree = ast.parse(inspect.getsource(module))
        except (OSError, TypeError, SyntaxError):
            tree = ast.Module(body=[], type_ignores=[])
        cache[key] = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return cache[key]


def _reaches(func, module, names, cache={}):  # noqa: B006  (one reading per function and name set)
    """Whether ``func`` (a function of ``module``) or a module-level function it refers to, at any
    depth, names one of ``names``."""
    key = (func, module.__name__, frozenset(names))
    if key not in cache:
        cache[key] = _read_reaches(func, module, names)
    return cache[key]


def _read_reaches(func, module, names):
    functions = _module_functions(module)
    try:
        todo = [ast.parse(textwrap.dedent(inspect.getsource(func)))]
    except (OSError, TypeError, SyntaxError):
        return False
    seen = set()
    while todo:
        found = _called_names(todo.pop())
        if found & names:
            return True
        for name in found - seen:
            seen.add(name)
            if name in functions:
                todo.append(functions[name])
    return False


def reaches(item, names):
    """Whether the collected test ``item``'s code (the test function, the module-level helpers it
    calls and the suite's fixtures it requests) names one of ``names``."""
    func = getattr(item, "function", None)
    if func is None:
        return False
    if _reaches(func, item.module, names):
        return True
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        for fixturedef in (info.name2fixturedefs.get(name, ()) if info else ()):
            if getattr(fixturedef, "_autouse", getattr(fixturedef, "autouse", False)):
                continue  # autouse fixtures watch every test (a guard names subprocess) and start nothing
            fixture = getattr(fixturedef, "func", None)
            module = inspect.getmodule(fixture) if fixture else None
            if module is not None and module.__name__.startswith("tests") and _reaches(fixture, module, names):
                return True
    return False


def is_quick(item):
    """Whether the collected test ``item`` belongs to the quick tier (see the module docstring)."""
    if item.get_closest_marker("horovod") or item.get_closest_marker("long"):
        return False
    return not reaches(item, SLOW_CALLS)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    keep, drop = [], []
    for item in items:
        (keep if is_quick(item) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
