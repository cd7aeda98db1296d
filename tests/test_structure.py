"""One idea per module, no import circles: every import between two modules of the package, at
module level or inside a function, forms a graph without cycles, and no module is over 400 lines.

An import inside a function only postpones a circle to the first call; the two modules still
cannot be understood, tested or moved one without the other, so such imports count here too
(tests/test_package.py checks the narrower case of circles that break ``import`` itself)."""
import ast
import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(REPO, "gluon_suite")
MAX_LINES = 400


def package_modules(root, prefix):
    """``{module name: file}`` for every ``.py`` file below ``root``, the folder of the package
    named ``prefix``; a package's name stands for its ``__init__.py``."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for fn in sorted(files):
            if fn.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, fn), root)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                out[".".join([prefix, *rel])] = os.path.join(folder, fn)
    return out


def _import_targets(node, package, modules):
    """The dotted names an ``import``/``from ... import`` statement ``node`` loads, resolved
    against ``package`` (the package the importing module lives in). ``from X import a, b``
    names the submodules X.a, X.b where they exist, and X itself when any name is not a
    submodule (then it is an attribute of X, which X's file defines or re-exports)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        parts = package.split(".")
        base = parts[:len(parts) - node.level + 1]
        mod = ".".join(base + ([node.module] if node.module else []))
    else:
        mod = node.module or ""
    subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in modules]
    return subs if len(subs) == len(node.names) else [mod, *subs]


def import_edges(root, prefix):
    """``(module, imported module, line)`` for every import of one module of the package by
    another, from every import statement in the module's file wherever it stands (module body,
    ``if``/``try`` blocks, functions, methods, class bodies). A dotted name that is not a module
    (``pkg.mod.name``) counts as its deepest enclosing module; names outside the package are left
    out. A module that imports itself yields an edge to itself."""
    modules = package_modules(root, prefix)
    for name, path in modules.items():
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=path)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _import_targets(node, package, modules):
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target:
                    yield name, target, node.lineno


def import_graph(root, prefix):
    """``{module: set of modules of the package it imports}`` over every module of the package,
    built from ``import_edges``; a self-import stays as an edge to itself, so that the cycle
    finder reports it."""
    graph = {name: set() for name in package_modules(root, prefix)}
    for name, target, _ in import_edges(root, prefix):
        graph[name].add(target)
    return graph


def find_cycles(graph):
    """The import cycles of ``graph`` (``{node: successors}``): each strongly connected component
    of more than one node, and each node with an edge to itself, as a sorted list; the list of
    them sorted. Tarjan's algorithm, iterative so that a deep graph cannot overflow the stack."""
    index, low, on_stack, stack, cycles = {}, {}, set(), [], []
    for start in sorted(graph):
        if start in index:
            continue
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(graph.get(start, ()))))]
        while work:
            v, successors = work[-1]
            for w in successors:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[v])
                if low[v] == index[v]:
                    part = []
                    while not part or part[-1] != v:
                        part.append(stack.pop())
                        on_stack.discard(part[-1])
                    if len(part) > 1 or v in graph.get(v, ()):
                        cycles.append(sorted(part))
    return sorted(cycles)


def _edges_within(edges, cycle):
    """``a -> b (line n)`` for each import between two members of ``cycle``: the places to cut."""
    members, lines = set(cycle), {}
    for a, b, line in edges:
        if a in members and b in members:
            lines.setdefault((a, b), []).append(line)
    return [f"{a} -> {b} (line {', '.join(map(str, sorted(ns)))})" for (a, b), ns in sorted(lines.items())]


def test_the_cycle_finder_on_a_hand_made_graph():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set(),
             "f": {"f"}, "g": {"h"}, "h": {"g", "i"}, "i": set(), "j": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c"], ["f"], ["g", "h"]]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert find_cycles({}) == []
    # a long chain closed at its end is one cycle (and needs no deep recursion)
    chain = {i: {i + 1} for i in range(5000)}
    chain[5000] = {0}
    assert find_cycles(chain) == [list(range(5001))]


def test_the_import_graph_counts_imports_inside_functions_and_resolves_relative_ones(tmp_path):
    pkg = tmp_path / "toy"
    (pkg / "sub").mkdir(parents=True)
    files = {"__init__.py": "from .a import A\n",
             "a.py": "from .sub import b\nA = 1\n",
             "sub/__init__.py": "from .b import B\n",
             "sub/b.py": "try:\n    from ..c import C\nexcept ImportError:\n    C = None\nB = 0\n",
             "c.py": "import toy.a\nC = 2\n",
             "d.py": "def late():\n    from . import e\n",
             "e.py": "from .d import late\nimport os\n",
             "f.py": "class F:\n    def m(self):\n        from toy.sub.b import B\n        from .sub import B\n",
             "g.py": "def g():\n    from toy import g\n"}
    for rel, text in files.items():
        (pkg / rel).write_text(text)
    graph = import_graph(str(pkg), "toy")
    assert graph["toy"] == {"toy.a"}
    assert graph["toy.a"] == {"toy.sub.b"}                 # `from . import x`: the submodule x
    assert graph["toy.sub"] == {"toy.sub.b"}
    assert graph["toy.sub.b"] == {"toy.c"}                 # `from ..c import C`: the module c
    assert graph["toy.c"] == {"toy.a"}
    assert graph["toy.d"] == {"toy.e"}                     # inside a function still counts
    assert graph["toy.e"] == {"toy.d"}                     # outside modules (os) are left out
    assert graph["toy.f"] == {"toy.sub.b", "toy.sub"}      # a method's imports; a package is its __init__
    assert graph["toy.g"] == {"toy.g"}                     # importing oneself
    assert find_cycles(graph) == [["toy.a", "toy.c", "toy.sub.b"], ["toy.d", "toy.e"], ["toy.g"]]


def test_no_import_cycles_in_the_package():
    graph, edges = import_graph(PKG, "gluon_suite"), list(import_edges(PKG, "gluon_suite"))
    assert len(graph) > 100 and sum(map(len, graph.values())) > 200
    cycles = find_cycles(graph)
    assert not cycles, f"{len(cycles)} import cycle(s) (imports inside functions count too):\n" + "\n".join(
        f"  {' <-> '.join(c)}\n    " + "\n    ".join(_edges_within(edges, c)) for c in cycles)


def oversize_files(root, limit):
    """``(lines, path relative to root's parent)`` of every ``.py`` file below ``root`` longer than
    ``limit`` lines, longest first."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for fn in (f for f in files if f.endswith(".py")):
            path = os.path.join(folder, fn)
            with open(path, encoding="utf-8") as f:
                n = sum(1 for _ in f)
            if n > limit:
                found.append((n, os.path.relpath(path, os.path.dirname(root))))
    return sorted(found, key=lambda t: (-t[0], t[1]))


def test_the_line_counter_finds_long_files(tmp_path):
    (tmp_path / "pkg" / "deep").mkdir(parents=True)
    (tmp_path / "pkg" / "short.py").write_text("x = 1\n" * 400)
    (tmp_path / "pkg" / "deep" / "long.py").write_text("x = 1\n" * 401)
    (tmp_path / "pkg" / "notes.txt").write_text("x\n" * 1000)
    assert oversize_files(str(tmp_path / "pkg"), 400) == [(401, os.path.join("pkg", "deep", "long.py"))]


def test_no_module_is_over_400_lines():
    found = oversize_files(PKG, MAX_LINES)
    assert not found, f"modules over {MAX_LINES} lines (one idea per module: split them):\n" + "\n".join(
        f"  {path}: {n} lines" for n, path in found)
