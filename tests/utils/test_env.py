"""gluon_suite.utils.env: every environment variable the suite reads is declared once and read
through ``env()``, which parses it or refuses it with one line naming the variable, its value and
the values it takes; ``run_cli`` checks them all before a command starts and warns about a
``GLUON_SUITE_*`` name the suite does not read. The source tree is scanned so that no module reads
a ``GLUON_SUITE_*`` variable around the accessor, and no such name is used without a declaration."""
import io
import os
import re

import pytest

from gluon_suite.utils import UserError, run_cli
from gluon_suite.utils.env import VARIABLES, check_environment, env, unknown_names

from ..conftest import REPO

# (name, value, parsed); the folder and library cases are filled in per test (they need real paths)
VALID = [
    ("GLUON_SUITE_OFFLINE", None, False), ("GLUON_SUITE_OFFLINE", "1", True), ("GLUON_SUITE_OFFLINE", "Yes", True),
    ("GLUON_SUITE_OFFLINE", "off", False), ("GLUON_SUITE_OFFLINE", "", False),
    ("GLUON_SUITE_QUIET", "true", True), ("GLUON_SUITE_QUIET", "0", False),
    ("GLUON_SUITE_VERBOSE", "1", True), ("GLUON_SUITE_VERBOSE", None, False), ("GLUON_SUITE_VERBOSE", "no", False),
    ("GLUON_SUITE_EMULATE_FLOAT16", "1", True), ("GLUON_SUITE_EMULATE_FLOAT16", None, False),
    ("GLUON_SUITE_EMULATE_FLOAT16", "0", False),
    ("GLUON_SUITE_RETRIES", None, 3), ("GLUON_SUITE_RETRIES", "0", 0), ("GLUON_SUITE_RETRIES", " 7 ", 7),
    ("GLUON_SUITE_BACKOFF", None, 0.5), ("GLUON_SUITE_BACKOFF", "0", 0.0), ("GLUON_SUITE_BACKOFF", "2.5", 2.5),
    ("GLUON_SUITE_CONNECT_TIMEOUT", None, 10.0), ("GLUON_SUITE_CONNECT_TIMEOUT", "0.1", 0.1),
    ("GLUON_SUITE_READ_TIMEOUT", None, 60.0), ("GLUON_SUITE_READ_TIMEOUT", "300", 300.0),
    ("GLUON_SUITE_PROGRESS_EVERY", None, 100.0), ("GLUON_SUITE_PROGRESS_EVERY", "25", 25.0),
    ("GLUON_SUITE_PROGRESS_EVERY", "1", 1.0), ("GLUON_SUITE_PROGRESS_EVERY", "", 100.0),
    ("GLUON_SUITE_MALLOC", None, True), ("GLUON_SUITE_MALLOC", "on", True), ("GLUON_SUITE_MALLOC", "OFF", False),
    ("GLUON_SUITE_MALLOC", "0", False), ("GLUON_SUITE_MALLOC", "", True),
    ("GLUON_SUITE_REPO", None, None), ("GLUON_SUITE_REPO", "", None),
    ("GLUON_SUITE_REPO", "https://host/zoo/", "https://host/zoo/"), ("GLUON_SUITE_REPO", "file:///srv", "file:///srv"),
    ("GLUON_SUITE_GRAPH_KERNELS", None, None), ("GLUON_SUITE_GRAPH_KERNELS", "", None),
    ("GLUON_SUITE_GRAPH_KERNELS", "off", "off"), ("GLUON_SUITE_GRAPH_KERNELS", "None", "off"),
    ("GLUON_SUITE_COMM_KERNELS", None, None), ("GLUON_SUITE_COMM_KERNELS", "off", "off"),
    ("OMP_NUM_THREADS", None, None), ("OMP_NUM_THREADS", "4", 4), ("OMP_NUM_THREADS", "4,2", 4),
    ("MXNET_HOME", "/srv/mxnet", "/srv/mxnet"), ("HOROVOD_ELASTIC", None, None),
]

# (name, value, words the one-line message must hold besides the name and the value)
INVALID = [
    ("GLUON_SUITE_OFFLINE", "maybe", ["is not a yes/no value", "set it to 1 or 0"]),
    ("GLUON_SUITE_QUIET", "sometimes", ["is not a yes/no value"]),
    ("GLUON_SUITE_VERBOSE", "2", ["is not a yes/no value"]),
    ("GLUON_SUITE_EMULATE_FLOAT16", "fp16", ["is not a yes/no value"]),
    ("GLUON_SUITE_RETRIES", "many", ["must be a whole number >= 0", "fix or unset it"]),
    ("GLUON_SUITE_RETRIES", "1.5", ["must be a whole number >= 0"]),
    ("GLUON_SUITE_RETRIES", "-1", ["must be a whole number >= 0"]),
    ("GLUON_SUITE_BACKOFF", "-1", ["must be a number >= 0"]),
    ("GLUON_SUITE_BACKOFF", "nan", ["must be a number >= 0"]),
    ("GLUON_SUITE_CONNECT_TIMEOUT", "0", ["must be a number > 0"]),
    ("GLUON_SUITE_READ_TIMEOUT", "inf", ["must be a number > 0"]),
    ("GLUON_SUITE_PROGRESS_EVERY", "abc", ["must be a number >= 1 and <= 100"]),
    ("GLUON_SUITE_PROGRESS_EVERY", "0", ["must be a number >= 1 and <= 100"]),
    ("GLUON_SUITE_PROGRESS_EVERY", "150", ["must be a number >= 1 and <= 100"]),
    ("GLUON_SUITE_MALLOC", "of", ["is not on or off", "GLUON_SUITE_MALLOC=on", "GLUON_SUITE_MALLOC=off"]),
    ("GLUON_SUITE_MALLOC", "jemalloc", ["is not on or off"]),
    ("GLUON_SUITE_REPO", "host:8000/zoo", ["is not a URL", "http://"]),
    ("GLUON_SUITE_GRAPH_KERNELS", "/no/such/libkernels.so", ["names no file", "make kernels", "off"]),
    ("GLUON_SUITE_COMM_KERNELS", "/no/such/libcomm.so", ["names no file", "make kernels", "off"]),
    ("OMP_NUM_THREADS", "0", ["must be a whole number >= 1"]),
    ("OMP_NUM_THREADS", "four", ["must be a whole number >= 1"]),
]


@pytest.mark.parametrize("name,value,parsed", VALID)
def test_valid_values_parse(name, value, parsed):
    environ = {} if value is None else {name: value}
    assert env(name, environ) == parsed


@pytest.mark.parametrize("name,value,words", INVALID)
def test_invalid_values_are_one_line_naming_the_variable_the_value_and_the_fix(name, value, words):
    with pytest.raises(UserError) as err:
        env(name, {name: value})
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"environment variable {name}={value!r} ")
    for w in words:
        assert w in msg, msg


def test_home_is_the_default_or_a_creatable_folder(tmp_path):
    assert env("GLUON_SUITE_HOME", {}) == os.path.expanduser(os.path.join("~", ".gluon_suite"))
    assert env("GLUON_SUITE_HOME", {"GLUON_SUITE_HOME": str(tmp_path / "new" / "home")}) == str(tmp_path / "new" / "home")
    (tmp_path / "a_file").write_text("x")
    cases = {"": "is empty; set it to a folder or unset it",
             str(tmp_path / "a_file"): "is a file, not a folder",
             str(tmp_path / "a_file" / "home"): "cannot be created"}
    for value, words in cases.items():
        with pytest.raises(UserError) as err:
            env("GLUON_SUITE_HOME", {"GLUON_SUITE_HOME": value})
        msg = str(err.value)
        assert msg.startswith("environment variable GLUON_SUITE_HOME") and words in msg and "\n" not in msg


def test_graph_kernels_takes_an_existing_file_and_refuses_a_missing_one(tmp_path):
    lib = tmp_path / "libgs_graph_kernels.so"
    lib.write_bytes(b"\x7fELF")
    assert env("GLUON_SUITE_GRAPH_KERNELS", {"GLUON_SUITE_GRAPH_KERNELS": str(lib)}) == str(lib)
    with pytest.raises(UserError, match="names no file"):
        env("GLUON_SUITE_GRAPH_KERNELS", {"GLUON_SUITE_GRAPH_KERNELS": str(tmp_path / "missing.so")})
    with pytest.raises(UserError, match="names no file"):      # a folder is not a library file
        env("GLUON_SUITE_GRAPH_KERNELS", {"GLUON_SUITE_GRAPH_KERNELS": str(tmp_path)})


def test_every_variable_is_covered_by_the_cases_above():
    covered = {c[0] for c in VALID + INVALID} | {"GLUON_SUITE_HOME"}
    ours = {n for n, v in VARIABLES.items() if v.ours or v.kind != "text"}
    assert ours <= covered, sorted(ours - covered)


def test_a_name_that_is_not_declared_is_a_programming_error():
    with pytest.raises(KeyError, match="did you mean 'GLUON_SUITE_OFFLINE'"):
        env("GLUON_SUITE_OFLINE", {})


def test_every_declaration_is_complete():
    for name, var in VARIABLES.items():
        assert var.name == name and var.help and "\n" not in var.help
        assert var.kind in ("flag", "switch", "int", "float", "folder", "url", "threads", "library", "text")
        assert var.ours == name.startswith("GLUON_SUITE_"), name


def test_unknown_suite_names_warn_once_each_with_the_closest_name():
    environ = {"GLUON_SUITE_OFLINE": "1", "GLUON_SUITE_QUIET": "1", "GLUON_SUITE_ZZZ": "x", "OTHER": "1"}
    assert unknown_names(environ) == ["GLUON_SUITE_OFLINE", "GLUON_SUITE_ZZZ"]
    out = io.StringIO()
    assert check_environment(environ, stream=out) == ["GLUON_SUITE_OFLINE", "GLUON_SUITE_ZZZ"]
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("warning: environment variable GLUON_SUITE_OFLINE is not one the suite reads")
    assert "did you mean 'GLUON_SUITE_OFFLINE'" in lines[0] and "rename or unset it" in lines[0]
    # a worker other than rank 0 stays silent: a job prints each warning once
    quiet = io.StringIO()
    check_environment(dict(environ, HOROVOD_RANK="1"), stream=quiet)
    assert quiet.getvalue() == ""


def test_check_environment_refuses_the_first_bad_value():
    with pytest.raises(UserError, match="GLUON_SUITE_PROGRESS_EVERY='abc'"):
        check_environment({"GLUON_SUITE_PROGRESS_EVERY": "abc"}, stream=io.StringIO())
    assert check_environment({}, stream=io.StringIO()) == []


def _run_cli(monkeypatch, capsys, **environ):
    for name in [n for n in os.environ if n.startswith("GLUON_SUITE_")]:
        monkeypatch.delenv(name)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    ran = []
    with pytest.raises(SystemExit) as stop:
        run_cli(lambda argv: ran.append(argv) or 0, ["--not-sys-argv"])
    return stop.value.code, ran, capsys.readouterr().err


@pytest.mark.parametrize("name,value", [("GLUON_SUITE_MALLOC", "of"), ("GLUON_SUITE_PROGRESS_EVERY", "abc"),
                                        ("GLUON_SUITE_GRAPH_KERNELS", "/no/such/lib.so")])
def test_an_entry_point_stops_with_one_line_before_it_starts(monkeypatch, capsys, name, value):
    code, ran, err = _run_cli(monkeypatch, capsys, **{name: value})
    assert code == 2 and ran == []
    assert err.count("\n") == 1 and err.startswith(f"error: environment variable {name}={value!r}")


def test_an_entry_point_warns_about_a_misspelt_name_and_runs(monkeypatch, capsys):
    code, ran, err = _run_cli(monkeypatch, capsys, GLUON_SUITE_OFLINE="1")
    assert code == 0 and ran == [["--not-sys-argv"]]
    assert err.count("\n") == 1 and "GLUON_SUITE_OFLINE" in err and "GLUON_SUITE_OFFLINE" in err


# ---- nothing reads a GLUON_SUITE_* variable around the accessor -------------------------------------
ACCESSOR = os.path.join("gluon_suite", "utils", "env.py")
SCANNED = ("gluon_suite", "scripts")
NAME = re.compile(r"GLUON_SUITE_[A-Z0-9][A-Z0-9_]*")
CONSTANT = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*[\"'](GLUON_SUITE_[A-Z0-9_]+)[\"']\s*(?:#.*)?$", re.M)
READS = (r"environ\.get\(\s*{key}", r"getenv\(\s*{key}", r"environ\.pop\(\s*{key}",
         r"environ\[\s*{key}\s*\](?!\s*=[^=])", r"{key}\s+(?:not\s+)?in\s+(?:os\.)?environ\b")
# Call sites of the graph package allowed to read around the accessor for a while, as (file,
# variable): none now. An entry here must still bypass env() (the test below fails on a stale one).
PENDING_GRAPH_SITES = set()


def python_files(roots=SCANNED, base=REPO):
    for root in roots:
        for folder, dirs, files in os.walk(os.path.join(base, root)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for fn in sorted(files):
                if fn.endswith(".py"):
                    path = os.path.join(folder, fn)
                    yield os.path.relpath(path, base), open(path, encoding="utf-8").read()


def bypassing_reads(text):
    """``[(variable, line number)]`` for each read of a GLUON_SUITE_* variable in ``text`` that does
    not go through ``env()``: by its literal name or a module constant that holds it."""
    keys = {re.escape(f'"{n}"'): n for n in set(NAME.findall(text))}
    keys.update({re.escape(f"'{n}'"): n for n in set(NAME.findall(text))})
    keys.update({r"\b" + re.escape(c) + r"\b": n for c, n in CONSTANT.findall(text)})
    found = []
    for key, name in keys.items():
        for pattern in READS:
            for m in re.finditer(pattern.format(key=key), text):
                found.append((name, text.count("\n", 0, m.start()) + 1))
    return sorted(set(found))


def test_the_scanner_finds_each_way_of_reading_around_the_accessor():
    text = ('import os\nA = os.environ.get("GLUON_SUITE_X", "")\nB = os.getenv(\'GLUON_SUITE_Y\')\n'
            'C = os.environ["GLUON_SUITE_Z"]\nif "GLUON_SUITE_W" in os.environ: pass\n'
            'KEY = "GLUON_SUITE_V"\nD = os.environ.get(KEY)\nos.environ["GLUON_SUITE_OK"] = "1"\n'
            'E = env("GLUON_SUITE_FINE")\nF = os.environ.pop("GLUON_SUITE_U", None)\n')
    assert bypassing_reads(text) == [("GLUON_SUITE_U", 10), ("GLUON_SUITE_V", 7), ("GLUON_SUITE_W", 5),
                                     ("GLUON_SUITE_X", 2), ("GLUON_SUITE_Y", 3), ("GLUON_SUITE_Z", 4)]


def test_no_module_reads_a_suite_variable_around_the_accessor():
    found = {(path, name, line) for path, text in python_files() if path != ACCESSOR
             for name, line in bypassing_reads(text)}
    pending = {(p, n) for p, n, _ in found} & PENDING_GRAPH_SITES
    bypass = sorted(f"{p}:{line} reads {n}" for p, n, line in found if (p, n) not in PENDING_GRAPH_SITES)
    assert not bypass, "read these through gluon_suite.utils.env.env(): " + "; ".join(bypass)
    stale = PENDING_GRAPH_SITES - pending
    assert not stale, f"PENDING_GRAPH_SITES lists sites that no longer bypass env(): {sorted(stale)}"


def test_every_suite_name_in_the_source_is_declared_and_every_declared_one_is_read():
    used = {}
    for path, text in python_files():
        for name in NAME.findall(text):
            used.setdefault(name, path)
    undeclared = sorted(f"{n} ({p})" for n, p in used.items() if n not in VARIABLES)
    assert not undeclared, "declare these in gluon_suite.utils.env.VARIABLES: " + ", ".join(undeclared)
    read = {m for _, text in python_files() for m in re.findall(r"\benv\(\s*[\"'](\w+)[\"']", text)}
    read |= {n for _, n in PENDING_GRAPH_SITES}
    unread = sorted(n for n in VARIABLES if n.startswith("GLUON_SUITE_") and n not in read)
    assert not unread, f"declared but never read through env(): {unread}"


def test_the_documentation_lists_every_variable():
    text = open(os.path.join(REPO, "docs", "getting_started.md"), encoding="utf-8").read()
    section = text.split("\n## Environment variables\n", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| `")]
    listed = {n for ln in rows for n in re.findall(r"`([A-Z][A-Z0-9_]+)[`=]", ln.split("|")[1])}
    assert listed == set(VARIABLES), (sorted(set(VARIABLES) - listed), sorted(listed - set(VARIABLES)))
