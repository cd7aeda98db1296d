"""``gluon-suite bench render``: the tables of measured numbers in README.md and docs/ are written from
the result files, never by hand.

A rendered table sits between two markers::

    <!-- bench:table NAME TABLE -->
    ... (written by `gluon-suite bench render`) ...
    <!-- bench:end -->

where NAME is a protocol and TABLE one of the tables its latest result holds (``criteria`` is in
every result). ``<!-- bench:claims -->`` ... ``<!-- bench:end -->`` holds the list of every protocol
with its claim and latest verdict. A table of settings rather than measurements, or of figures
quoted from another project with the source named, is marked ``<!-- bench:settings -->`` on the
line above it. ``--check`` rewrites nothing and fails when a
rendered block differs from what the results say."""
import glob
import os
import re

from ..utils.errors import UserError
from ..utils.fileio import atomic_write
from . import protocols, store

__all__ = ["render_text", "render_files", "doc_files", "table_markdown", "BEGIN", "END", "SETTINGS",
           "bare_figures"]

BEGIN = re.compile(r"^<!-- bench:(table (\S+) (\S+)|claims) -->\s*$")
END = "<!-- bench:end -->"
SETTINGS = "<!-- bench:settings -->"


def doc_files(root):
    """README.md and every docs/*.md of the checkout."""
    files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    return [f for f in files if os.path.isfile(f)]


def _cell(x):
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x).replace("|", "\\|").replace("\n", " ")


def table_markdown(table):
    cols = table["columns"]
    lines = ["| " + " | ".join(_cell(c) for c in cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in table["rows"]:
        if len(row) != len(cols):
            raise UserError(f"a rendered table row has {len(row)} cells for {len(cols)} columns")
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return lines


def _source_line(root, results_dir, name, path, result):
    rel = os.path.relpath(path, root)
    seeds = result.get("seeds") or []
    load = ((result.get("machine") or {}).get("load") or {}).get("mean")
    bits = [f"protocol `{name}` v{result['protocol']['version']}", f"commit {result['commit'][:7]}",
            f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''}"]
    if load is not None:
        bits.append(f"mean load {load:.1f}")
    if result.get("quick"):
        bits.append("QUICK RUN, not evidence")
    elif result.get("partial"):
        bits.append(f"partial: {len(seeds)} of the protocol's {len(result.get('protocol_seeds') or [])} seeds")
    return f"Rendered from `{rel}` ({', '.join(bits)}); `gluon-suite bench run {name}` reruns it."


def _table_block(root, results_dir, name, table):
    path, result = store.latest(results_dir, name)
    if result is None:
        raise UserError(f"no result for protocol {name!r} under {os.path.relpath(results_dir, root)}; "
                        f"run 'gluon-suite bench run {name}'")
    tables = result.get("tables") or {}
    if table not in tables:
        raise UserError(f"the latest result of {name} has no table {table!r}; it has {', '.join(sorted(tables))}")
    t = tables[table]
    lines = table_markdown(t)
    if t.get("caption"):
        lines += ["", t["caption"]]
    return lines + ["", _source_line(root, results_dir, name, path, result)]


def _claims_block(root, results_dir):
    rows = []
    for name in protocols.names(root):
        proto = protocols.load(root, name)
        path, result = store.latest(results_dir, name)
        retired = f"retired: {' '.join(proto.retired.split())}" if proto.retired else ""
        if result is None:
            rows.append([f"`{name}`", f"v{proto.version}", proto.data["claim"],
                         f"never run; {retired}" if retired else "not run yet", "-"])
            continue
        ran = f"v{result['protocol']['version']}"
        if result["protocol"]["sha256"] != proto.sha256:
            ran += f" (protocol now v{proto.version})"
        n, of = len(result.get("seeds") or []), len(result.get("protocol_seeds") or result.get("seeds") or [])
        tag = f" ({n} of {of} seeds)" if result.get("partial") else ""
        rows.append([f"`{name}`", ran, proto.data["claim"], result["verdict"] + tag + (f"; {retired}" if retired else ""),
                     f"`{os.path.relpath(path, root)}`"])
    return table_markdown({"columns": ["protocol", "version", "claim", "latest verdict", "result file"], "rows": rows})


def render_text(text, root, results_dir):
    """``text`` with every marked block rendered; also the list of (kind, name, table) rendered."""
    out, done, lines, i, fenced = [], [], text.split("\n"), 0, False
    while i < len(lines):
        if lines[i].lstrip().startswith("```"):
            fenced = not fenced
        m = None if fenced else BEGIN.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != END:
            if BEGIN.match(lines[j]):
                raise UserError(f"a bench marker at line {i + 1} has no '{END}' before the next one (line {j + 1})")
            j += 1
        if j == len(lines):
            raise UserError(f"the bench marker at line {i + 1} has no closing '{END}'")
        if m.group(1) == "claims":
            body = _claims_block(root, results_dir)
            done.append(("claims", None, None))
        else:
            body = _table_block(root, results_dir, m.group(2), m.group(3))
            done.append(("table", m.group(2), m.group(3)))
        out += [lines[i]] + body + [END]
        i = j + 1
    return "\n".join(out), done


def render_files(root, results_dir=None, check=False, files=None):
    """Render every doc file; with ``check``, write nothing and return the files whose rendered
    blocks differ. Returns (changed files, blocks rendered)."""
    results_dir = results_dir or os.path.join(root, "bench", "results")
    changed, blocks = [], 0
    for path in files or doc_files(root):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            new, done = render_text(text, root, results_dir)
        except UserError as exc:
            raise UserError(f"{os.path.relpath(path, root)}: {exc}") from None
        blocks += len(done)
        if new != text:
            changed.append(path)
            if not check:
                atomic_write(path, new)
    return changed, blocks


_FIGURE = re.compile(r"(?<![\w.`/-])(\d+\.\d+|\d+(\.\d+)?x|\d+(\.\d+)?\s?(%|ms|us|s))(?!\w)")
# the model zoo's table is rendered from the checkpoints' cards (`gluon-suite zoo table --write`)
_OTHER_RENDERED = ("<!-- zoo-table:begin", "<!-- zoo-table:end")


def bare_figures(path):
    """Table rows of ``path`` holding a measured-looking figure (a decimal, a ratio like 1.5x, a
    percentage or a time) outside rendered blocks (ours, and the model zoo's table rendered from its
    cards) and not under a settings marker: (line, text)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    found, inside, settings, prev, fenced = [], False, False, "", False
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("```"):
            fenced = not fenced
        if fenced:
            prev = ""
            continue
        if BEGIN.match(s) or s.startswith(_OTHER_RENDERED[0]):
            inside = True
        elif s == END or s.startswith(_OTHER_RENDERED[1]):
            inside = False
        elif s.startswith("|"):
            if not prev.startswith("|"):
                settings = lines[n - 2].strip() == SETTINGS if n >= 2 else False
            if not inside and not settings:
                cells = re.sub(r"`[^`]*`", "", s)
                if _FIGURE.search(cells):
                    found.append((n, s))
        prev = s
    return found
