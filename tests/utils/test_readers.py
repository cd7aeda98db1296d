"""gluon_suite.utils.readers: every reader of a user's data file is registered with the format it
reads and what it checks, and a file it cannot decode is one line naming the file, the format and
the cause. The source tree is scanned so that no function reads a file around a registered reader
(or an allowlisted exception with its reason), and every registered reader has a bad file below
that it must refuse in one line naming the file."""
import ast
import bz2
import errno
import gzip
import importlib
import io
import json
import os
import struct
import tarfile
import xml.etree.ElementTree as ET
import zlib

import numpy as np
import pytest

from gluon_suite.utils import UserError, run_cli
from gluon_suite.utils.readers import READERS, data_reader, unreadable

from ..conftest import REPO

# Functions that read a file but are not data readers, each with its reason; an entry must still read
# a file and not be covered otherwise (a test below fails on a stale one).
ALLOWLIST = {
    "gluon_suite.cv.dense_eval._run_config": "the run's own config.json beside a checkpoint; none when unreadable",
    "gluon_suite.distributed.runfolder.RunFolder.read_state": "the run folder's state.json the suite wrote",
    "gluon_suite.distributed.trainer_state.read_file": "trainer states the suite saved beside its checkpoints",
    "gluon_suite.evidence.protocols.load": "bench protocols: the suite's own evidence files",
    "gluon_suite.evidence.render.render_files": "the repository's docs, rendered from bench results",
    "gluon_suite.evidence.render.bare_figures": "the repository's docs, checked for figures left unrendered",
    "gluon_suite.evidence.runner.run": "figures a bench run has just written, kept with its result",
    "gluon_suite.evidence.store.file_sha256": "hashes a bench file; decodes nothing",
    "gluon_suite.evidence.store.read_result": "bench result files the suite wrote",
    "gluon_suite.graph.io.save_graphs": "a write: reads back the temporary file it has just written",
    "gluon_suite.graph.link_data.write_citation_hetero": "a write: reads the embedded sample it has just written",
    "gluon_suite.model_zoo.card_schema.load_card": "model cards: checked field by field by card_schema",
    "gluon_suite.model_zoo.download.file_hash": "zoo download code: hashes a downloaded file",
    "gluon_suite.model_zoo.download._is_valid": "zoo download code: the store's own stamp file",
    "gluon_suite.model_zoo.download._stream": "zoo download code: copies a file:// download",
    "gluon_suite.model_zoo.download.safe_extract": "zoo download code: a downloaded archive, checked member by member",
    "gluon_suite.model_zoo.finetune.sha1_of": "hashes a weights file; decodes nothing",
    "gluon_suite.model_zoo.finetune.load_features": "pretrained weights, checked against the model's parameters",
    "gluon_suite.model_zoo.records._read_records": "the zoo's own checkpoint records",
    "gluon_suite.model_zoo.store.fetch": "zoo download code: syncs the file it has just extracted",
    "gluon_suite.model_zoo.table.write_into": "a write: reads the Markdown file it rewrites",
    "gluon_suite.nlp.backbone.load_backbone": "a pretraining run's own config.json (a checkpoint folder)",
    "gluon_suite.nlp.lm_evaluate.evaluate_run": "a language-model run's own config.json (a checkpoint folder)",
    "gluon_suite.nlp.wikipedia._file_record": "hashes the data file for the run's record; decodes nothing",
    "gluon_suite.utils.checkpoints.read_json_file": "checkpoint records, checked by utils/checkpoints.py",
    "gluon_suite.utils.checkpoints.check_params_file": "parameter files, checked by utils/checkpoints.py",
    "gluon_suite.utils.config.load_yaml_config": "a YAML run config, not data: each key is checked by its flag's type",
    "gluon_suite.utils.fileio.atomic_path": "a write: the temporary file of an atomic write",
    "gluon_suite.utils.fileio.atomic_paths": "a write: the temporary files of an atomic write",
    "gluon_suite.utils.fileio.atomic_write": "a write",
    "gluon_suite.utils.logs.JsonLinesLogger.__init__": "a write: opens the metrics log to append to it",
    "gluon_suite.utils.logs.CsvSummary.__init__": "the run's own summary CSV, read before appending to it",
    "gluon_suite.utils.validate.utf8_file": "an argparse type: checks a flag's file before any reader runs",
    "gluon_suite.whatif.profiler.device_name": "the system's description of the CPU, for a device's name",
}
FIX = ("decorate it with gluon_suite.utils.readers.data_reader (the format it reads, what it checks, the argument "
       "naming the file) and add a bad file for it to CASES in tests/utils/test_readers.py, call it only from such "
       "a reader, or, for a file that is not user data, add it to ALLOWLIST there with a one-line reason")


# ---- the scan ------------------------------------------------------------------------------------
# A read is a call of a read primitive (``open`` in a read mode, ``gzip``/``bz2``/``lzma``/``tarfile``/
# ``zipfile`` opens, ``json``/``numpy``/``pickle``/``yaml``/``mx.nd`` loads, ``ElementTree`` parses,
# ``Image.open``, ``imread``/``imdecode``, RecordIO and image-folder readers, ``Path.read_text``); a
# read inside a nested function, lambda or class counts for the function or method around it.
OPEN_BASES = {"gzip", "bz2", "lzma", "tarfile", "zipfile", "Image", "io", "codecs"}
ALWAYS = {"imread", "imdecode", "iterparse", "read_text", "read_bytes", "MXRecordIO", "MXIndexedRecordIO",
          "ImageRecordDataset", "ImageFolderDataset", "GzipFile", "BZ2File", "LZMAFile", "ZipFile", "TarFile"}
BY_BASE = {"open": OPEN_BASES, "load": {"json", "np", "numpy", "pickle", "yaml", "nd", "ndarray"},
           "safe_load": {"yaml"}, "full_load": {"yaml"}, "parse": {"ET", "ElementTree", "etree"},
           "loadtxt": {"np", "numpy"}, "genfromtxt": {"np", "numpy"}, "fromfile": {"np", "numpy"},
           "memmap": {"np", "numpy"}, "read_csv": {"pd", "pandas"}}
MODULE_LEVEL = "<module level>"
SCANNED = ("gluon_suite", "scripts")


def read_primitive(call):
    """The read primitive ``call`` (an ``ast.Call``) is, by name, or None. ``open`` reads unless its
    mode is a constant without ``r`` or ``+`` (a mode only known when it runs counts as a read)."""
    f = call.func
    if isinstance(f, ast.Name):
        if f.id == "open":
            mode = call.args[1] if len(call.args) > 1 else next(
                (k.value for k in call.keywords if k.arg == "mode"), None)
            if isinstance(mode, ast.Constant) and not ({"r", "+"} & set(str(mode.value))):
                return None
            return "open"
        return f.id if f.id in ALWAYS else None
    if isinstance(f, ast.Attribute):
        base = f.value.attr if isinstance(f.value, ast.Attribute) else getattr(f.value, "id", None)
        if f.attr in ALWAYS or base in BY_BASE.get(f.attr, ()):
            return f"{base}.{f.attr}" if base else f.attr
    return None


def _first_read(nodes):
    for node in nodes:
        for n in ast.walk(node):
            if isinstance(n, ast.Call):
                what = read_primitive(n)
                if what:
                    return n.lineno, what
    return None


def _is_reader(fn):
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if getattr(target, "id", None) == "data_reader" or getattr(target, "attr", None) == "data_reader":
            return True
    return False


class Module:
    """One module's functions (``qualname``: ``f`` or ``Class.method``), the reads in each, the
    registered readers, and who refers to each function within the module."""

    def __init__(self, name, text):
        self.name, tree = name, ast.parse(text)
        self.functions, self.classes, loose = {}, {}, []
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = (node, None)
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = [getattr(b, "id", None) for b in node.bases]
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.functions[f"{node.name}.{item.name}"] = (item, node.name)
                    else:
                        loose.append(item)
            else:
                loose.append(node)
        self.reads = {q: r for q, (fn, _) in self.functions.items() if (r := _first_read([fn]))}
        if _first_read(loose):
            self.reads[MODULE_LEVEL] = _first_read(loose)
        self.readers = {q for q, (fn, _) in self.functions.items() if _is_reader(fn)}
        self.referrers = {q: set() for q in self.functions}
        for q, (fn, cls) in self.functions.items():
            for target in self._references(fn, cls):
                if target != q:
                    self.referrers[target].add(q)
        for node in loose:
            for target in self._references(node, None):
                self.referrers[target].add(MODULE_LEVEL)

    def _method(self, cls, attr):
        """``Class.attr`` of ``cls`` or of a base class defined in this module."""
        seen = set()
        while cls in self.classes and cls not in seen:
            seen.add(cls)
            if f"{cls}.{attr}" in self.functions:
                return f"{cls}.{attr}"
            cls = next((b for b in self.classes[cls] if b in self.classes), None)
        return None

    def _references(self, node, cls):
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in self.functions:
                yield n.id
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
                owner = cls if n.value.id in ("self", "cls") else n.value.id
                target = self._method(owner, n.attr)
                if target:
                    yield target


def imported_names(name, text, is_package, modules):
    """``(module, function name)`` for each name that module ``name`` imports from another module
    of ``modules`` (``from .x import f``, absolute or relative)."""
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source in modules and source != name:
                for alias in node.names:
                    yield source, alias.name


def unregistered_reads(sources, allowed=()):
    """``[(module, qualname, line, primitive)]`` for each function of ``sources`` (``{module name:
    (source text, is a package)}``) that reads a file but is neither a registered reader, nor
    reached only from registered readers of its module (called or referred to by a simple name or
    through ``self``/``cls``/its class, transitively, and imported by no other module), nor in
    ``allowed`` (``module.qualname`` names)."""
    modules = {name: Module(name, text) for name, (text, _) in sources.items()}
    outside = {(src, f) for name, (text, pkg) in sources.items()
               for src, f in imported_names(name, text, pkg, modules)}
    found = []
    for name, mod in modules.items():
        reached = set(mod.readers)
        grew = True
        while grew:
            grew = False
            for q, refs in mod.referrers.items():
                if q not in reached and refs and refs <= reached and (name, q) not in outside:
                    reached.add(q)
                    grew = True
        for q, (line, what) in sorted(mod.reads.items(), key=lambda kv: kv[1][0]):
            if q not in reached and f"{name}.{q}" not in allowed:
                found.append((name, q, line, what))
    return found


def package_sources(root, prefix):
    """``{module name: (source text, is a package)}`` of every ``.py`` file below ``root``."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for fn in sorted(f for f in files if f.endswith(".py")):
            parts = os.path.relpath(os.path.join(folder, fn), root)[:-3].split(os.sep)
            is_package = parts[-1] == "__init__"
            name = ".".join([prefix, *(parts[:-1] if is_package else parts)])
            with open(os.path.join(folder, fn), encoding="utf-8") as f:
                out[name] = (f.read(), is_package)
    return out


def registered_in_source(sources):
    """``{module-qualified name: module}`` of the functions decorated with ``data_reader`` in
    ``sources``."""
    return {f"{name}.{q}": name for name, (text, _) in sources.items() for q in Module(name, text).readers}


@pytest.fixture(scope="module")
def sources():
    """The package's modules and the scripts' (entry points read data through the package too)."""
    return {name: src for root in SCANNED for name, src in package_sources(os.path.join(REPO, root), root).items()}


@pytest.fixture(scope="module")
def registered(sources):
    """Every reader decorated in the source, its module imported (which registers it)."""
    names = registered_in_source(sources)
    for module in set(names.values()):
        importlib.import_module(module)
    return names


# ---- the scan, on a toy package and on the package ---------------------------------------------------
TOY = '''
import gzip, json
import xml.etree.ElementTree as ET
from PIL import Image
from gluon_suite.utils.readers import data_reader

def helper(path):
    with open(path, encoding="utf-8") as f:
        return f.read()

@data_reader("toy file", checks=("utf-8 text",))
def reader(path):
    return helper(path) + _deeper(path) + shared(path)

def _deeper(path):
    return gzip.open(path).read()

def loose(path):
    return json.load(open(path))

def shared(path):
    return open(path, "rb").read()

def also_loose(path):
    return shared(path)

def writes(path):
    with open(path, "w") as f:
        f.write("x")

def exported(path):
    return open(path).read()

class Set:
    @data_reader("toy folder", checks=("xml",), path="root")
    def __init__(self, root):
        self.files = self._parse(root)

    def _parse(self, root):
        return ET.parse(root)

    def __getitem__(self, i):
        return Image.open(self.files[i])
'''


def toy_sources():
    user = "from .mod import exported\n\ndef f(path):\n    return exported(path)\n"
    return {"toy.mod": (TOY, False), "toy.user": (user, False)}


def test_the_scan_reports_each_function_that_reads_outside_a_registered_reader():
    found = [(m, q, what) for m, q, _, what in unregistered_reads(toy_sources())]
    assert found == [("toy.mod", "loose", "json.load"), ("toy.mod", "shared", "open"),
                     ("toy.mod", "exported", "open"), ("toy.mod", "Set.__getitem__", "Image.open")]
    # helper, _deeper and Set._parse are reached only from readers and writes only writes; shared is
    # reached from also_loose too and exported is imported by another module: each must be a reader
    allowed = {"toy.mod.loose", "toy.mod.shared", "toy.mod.exported", "toy.mod.Set.__getitem__"}
    assert unregistered_reads(toy_sources(), allowed) == []
    assert Module("toy.mod", TOY).readers == {"reader", "Set.__init__"}


def test_no_function_of_the_package_or_scripts_reads_a_file_outside_a_registered_reader(sources):
    found = unregistered_reads(sources, ALLOWLIST)
    where = [f"{m.replace('.', '/')}.py:{line} {q} ({what})" for m, q, line, what in found]
    assert not where, f"{len(where)} function(s) read a file outside a registered data reader: " + "; ".join(
        where) + f". For each, {FIX}"


def test_the_allowlist_is_not_stale(sources):
    reads = {f"{m}.{q}" for m, q, _, _ in unregistered_reads(sources)}
    stale = sorted(set(ALLOWLIST) - reads)
    assert not stale, f"ALLOWLIST names functions that no longer read a file outside a reader: {stale}"
    assert all(reason and "\n" not in reason for reason in ALLOWLIST.values())


def test_every_registered_reader_is_declared_completely(registered):
    assert set(registered) <= set(READERS), sorted(set(registered) - set(READERS))
    assert len(registered) >= 30
    for name, reader in READERS.items():
        assert reader.name == name and reader.format and "\n" not in reader.format, name
        assert isinstance(reader.checks, tuple) and reader.checks, name
        assert all(c and "\n" not in c for c in reader.checks), name


# ---- the wrapper ---------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _no_toy_readers_left():
    """The toy readers the tests here declare leave ``READERS`` when the test ends."""
    yield
    for name in [n for n in READERS if not n.startswith("gluon_suite.")]:
        del READERS[name]


def _raise(exc):
    raise exc


LOW_LEVEL = [
    (EOFError("Compressed file ended before the end-of-stream marker was reached"), "compressed data ends early"),
    (zlib.error("Error -3 while decompressing data: invalid block type"), "corrupt compressed data"),
    (gzip.BadGzipFile("Not a gzipped file (b'ab')"), "Not a gzipped file"),
    (OSError("Invalid data stream"), "Invalid data stream"),
    (tarfile.ReadError("truncated header"), "not a readable tar archive"),
    (ET.ParseError("no element found: line 3, column 0"), "invalid XML"),
    (struct.error("unpack requires a buffer of 24 bytes"), "binary record is malformed"),
    (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), "not utf-8 text: invalid start byte"),
    (json.JSONDecodeError("Expecting value", "{\n", 2), "invalid JSON at line 2 column 1"),
]


@pytest.mark.parametrize("exc,words", LOW_LEVEL, ids=[f"{type(e).__module__}.{type(e).__name__}" for e, _ in LOW_LEVEL])
def test_a_file_that_does_not_decode_is_one_line_naming_it(tmp_path, exc, words):
    @data_reader("toy dump", checks=("whole",), path="source", fix="download it again")
    def read(source, n=1):
        _raise(exc)
    with pytest.raises(UserError) as info:
        read(tmp_path / "x.xml.bz2")
    msg = str(info.value)
    assert msg.startswith(f"{tmp_path / 'x.xml.bz2'}: not a readable toy dump (") and words in msg, msg
    assert msg.endswith("; download it again") and "\n" not in msg


def test_an_image_or_mxnet_decoding_error_is_one_line(tmp_path):
    import mxnet as mx
    from PIL import Image
    bad = tmp_path / "photo.jpg"
    bad.write_text("not an image\n")
    for opener, words in ((lambda path: Image.open(path), "not an image that can be decoded"),
                          (lambda path: mx.image.imread(path), "Invalid image file")):
        with pytest.raises(UserError) as info:
            data_reader("photo", checks=("decodes",))(opener)(str(bad))
        assert str(info.value).startswith(f"{bad}: not a readable photo (") and words in str(info.value)
        assert "\n" not in str(info.value)


def test_other_errors_and_the_readers_own_pass_through_unchanged(tmp_path):
    own = UserError("x.csv:3: a NaN in column 2; fix the row")
    for exc in (own, FileNotFoundError(errno.ENOENT, "No such file or directory", "x"),
                PermissionError(errno.EACCES, "Permission denied"), OSError(errno.EIO, "Input/output error"),
                KeyError("bug"), ValueError("a message of the reader's own")):
        @data_reader("toy", checks=("whole",))
        def read(path):
            _raise(exc)
        with pytest.raises(type(exc)) as info:
            read("x.csv")
        assert info.value is exc
    assert unreadable(own, "x.csv", "toy") is None


def test_a_lazy_reader_is_guarded_while_it_is_read(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_bytes(b"one\ntwo\n\xff\xfe\n")

    @data_reader("text file", checks=("utf-8 text",))
    def lines(path):
        with open(path, "rb") as f:
            for raw in f:
                yield raw.decode("utf-8")
    read = lines(path)
    assert next(read) == "one\n"           # nothing is read before the first item is asked for
    with pytest.raises(UserError, match=rf"^{path}: not a readable text file \(not utf-8 text"):
        list(read)


def test_a_method_names_the_file_its_path_computes(tmp_path):
    class Pairs:
        files = [str(tmp_path / "a.png")]

        @data_reader("mask", checks=("decodes",), path=lambda self, i: self.files[i])
        def __getitem__(self, i):
            _raise(OSError("image file is truncated"))
    with pytest.raises(UserError, match=rf"^{tmp_path / 'a.png'}: not a readable mask \(image file is truncated\)"):
        Pairs()[0]


def test_a_declaration_without_the_named_argument_or_checks_is_refused():
    with pytest.raises(ValueError, match="no argument 'path'"):
        data_reader("toy", checks=("x",))(lambda folder: None)
    with pytest.raises(ValueError, match="tuple of checks"):
        data_reader("toy", checks="utf-8 text")


def test_an_entry_point_ends_with_the_line_and_exit_2(tmp_path, monkeypatch, capsys):
    from gluon_suite.nlp.text import read_corpus
    bad = tmp_path / "corpus.txt"
    bad.write_bytes(b"a sentence.\nanother one \xff.\n")
    for name in [n for n in os.environ if n.startswith("GLUON_SUITE_")]:
        monkeypatch.delenv(name)
    with pytest.raises(SystemExit) as stop:
        run_cli(lambda argv: read_corpus(str(bad)), ["--not-sys-argv"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert err.startswith(f"error: {bad}: not a readable pretraining text file (not utf-8 text")


# ---- one bad file per registered reader ------------------------------------------------------------
# CASES[reader](tmp_path) -> (call, path): the call reads the smallest file the reader must refuse, and
# its one-line UserError must name that path. A new reader comes with its case here.
CASES = {}
NOT_UTF8 = b"a line\n\xff\xfe not utf-8 \x80\n"


def case(name):
    def add(fn):
        CASES[f"gluon_suite.{name}"] = fn
        return fn
    return add


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


@case("cv.data.cifar.load_cifar")
def _cut_cifar_archive(tmp):
    from gluon_suite.cv.data import load_cifar
    from ..cv.test_data import write_cifar10
    folder, _ = write_cifar10(tmp / "src", n=2)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        tf.add(folder, arcname="cifar-10-batches-bin")
    arc = _write(tmp / "cifar-10-binary.tar.gz", buf.getvalue()[:len(buf.getvalue()) // 2])
    return lambda: load_cifar(str(arc), "train"), arc


@case("cv.data.mnist5k._read")
def _cut_mnist_gzip(tmp):
    from gluon_suite.cv.data.mnist5k import _read
    data = gzip.compress((",".join(["0"] * 784 + ["3"]) + "\n").encode() * 4)
    path = _write(tmp / "mnist_5k.csv.gz", data[:len(data) // 2])
    return lambda: _read(str(path)), path


@case("cv.data.detection.image_size")
def _text_named_jpg_header(tmp):
    from gluon_suite.cv.data.detection import image_size
    path = _write(tmp / "photo.jpg", "not an image\n")
    return lambda: image_size(str(path), "test record"), path


@case("cv.data.detection.read_image")
def _text_named_jpg(tmp):
    from gluon_suite.cv.data.detection import read_image
    path = _write(tmp / "photo.jpg", "not an image\n")
    return lambda: read_image(str(path)), path


@case("cv.data.detection.read_split_list")
def _split_list_not_utf8(tmp):
    from gluon_suite.cv.data.detection import read_split_list
    path = _write(tmp / "train.txt", NOT_UTF8)
    return lambda: read_split_list(str(path), "layout"), path


@case("cv.data.detection.VOCDetectionSet.__init__")
def _voc_cut_xml(tmp):
    from gluon_suite.cv.data import VOCDetectionSet, write_voc
    write_voc(str(tmp / "voc"), train=1, val=1, size=32)
    xml = tmp / "voc" / "Annotations" / "train_00000.xml"
    xml.write_text(xml.read_text()[:60])
    return lambda: VOCDetectionSet(str(tmp / "voc")), xml


@case("cv.data.detection.COCODetectionSet.__init__")
def _coco_malformed_json(tmp):
    from gluon_suite.cv.data import COCODetectionSet
    (tmp / "train").mkdir()
    path = _write(tmp / "annotations" / "instances_train.json", '{"images": [')
    return lambda: COCODetectionSet(str(path)), path


def _record_file(tmp):
    import mxnet as mx
    rec, idx = str(tmp / "train.rec"), str(tmp / "train.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i in range(2):
        w.write_idx(i, mx.recordio.pack_img(mx.recordio.IRHeader(0, float(i), i, 0), np.zeros((4, 4, 3), np.uint8),
                                            img_fmt=".png"))
    w.close()
    return tmp / "train.rec", tmp / "train.idx"


@case("cv.data.folders.record_dataset")
def _record_index_garbage(tmp):
    from gluon_suite.cv.data import record_dataset
    rec, idx = _record_file(tmp)
    idx.write_text("0\t0\nnot an index line\n")
    return lambda: record_dataset(str(rec)), idx


@case("cv.data.folders.record_labels")
def _record_garbage(tmp):
    from gluon_suite.cv.data import record_dataset
    from gluon_suite.cv.data.folders import record_labels
    rec, _ = _record_file(tmp)
    rec.write_bytes(b"\0" * rec.stat().st_size)
    return lambda: record_labels(record_dataset(str(rec))), rec


@case("cv.data.folders.folder_dataset")
def _image_folder_zero_bytes(tmp):
    from gluon_suite.cv.data import folder_dataset
    from ..cv.test_data import _png
    for c in ("cat", "dog"):
        (tmp / "images" / c).mkdir(parents=True)
        _png(tmp / "images" / c / "0.png", 10)
    path = _write(tmp / "images" / "dog" / "1.jpg", b"")
    return lambda: folder_dataset(str(tmp / "images")), path


def _segmentation_folders(tmp):
    from gluon_suite.cv.data import make_canvases
    from ..cv.test_segmentation_data import folders
    images, masks = folders(tmp, make_canvases("train", 1, size=32))
    return images, masks, sorted(masks.iterdir())[0]


@case("cv.data.segmentation.read_mask")
def _mask_text_named_png(tmp):
    from gluon_suite.cv.data.segmentation import read_mask
    path = _write(tmp / "mask.png", "not a PNG\n")
    return lambda: read_mask(str(path), 11), path


@case("cv.data.segmentation.check_pair")
def _mask_class_out_of_range(tmp):
    from gluon_suite.cv.data import FolderSegmentationSet
    images, masks, mask = _segmentation_folders(tmp)
    return lambda: FolderSegmentationSet(str(images), str(masks), num_classes=2), mask


@case("cv.data.segmentation._PairSet.__getitem__")
def _mask_damaged_after_the_scan(tmp):
    from gluon_suite.cv.data import FolderSegmentationSet
    images, masks, mask = _segmentation_folders(tmp)
    data = FolderSegmentationSet(str(images), str(masks), num_classes=11)
    mask.write_bytes(mask.read_bytes()[:40])
    return lambda: data[0], mask


@case("graph.data._lines")
def _graph_text_not_utf8(tmp):
    from gluon_suite.graph.data import load_tu
    _write(tmp / "T_A.txt", "1, 2\n")
    _write(tmp / "T_graph_indicator.txt", NOT_UTF8)
    _write(tmp / "T_graph_labels.txt", "0\n")
    return lambda: load_tu(str(tmp), "T"), tmp / "T_graph_indicator.txt"


@case("graph.data.load_linqs")
def _linqs_nan_attribute(tmp):
    from gluon_suite.graph.data import load_linqs
    content = _write(tmp / "cora.content", "p1 1 0 A\np2 nan 1 B\n")
    _write(tmp / "cora.cites", "p1 p2\n")
    return lambda: load_linqs(str(tmp)), content


@case("graph.data.load_tu")
def _tu_node_id_out_of_range(tmp):
    from gluon_suite.graph.data import load_tu
    edges = _write(tmp / "T_A.txt", "1, 2\n2, 5\n")
    _write(tmp / "T_graph_indicator.txt", "1\n1\n")
    _write(tmp / "T_graph_labels.txt", "0\n")
    return lambda: load_tu(str(tmp), "T"), edges


@case("graph.io.load_graphs")
def _graph_file_cut(tmp):
    from gluon_suite.graph import Graph, load_graphs, save_graphs
    path = tmp / "graphs.bin"
    save_graphs(str(path), [Graph(([0, 1], [1, 2]), num_nodes=3)])
    path.write_bytes(path.read_bytes()[:-20])
    return lambda: load_graphs(str(path)), path


@case("graph.link_data._rows")
def _hetero_tsv_not_utf8(tmp):
    from gluon_suite.graph.link_data import load_hetero_tsv
    nodes = _write(tmp / "nodes.tsv", b"paper\t0\tp0\t-\npaper\t1\tp\xff1\t-\n")
    _write(tmp / "edges.tsv", "paper\tcites\tpaper\t0\t1\n")
    return lambda: load_hetero_tsv(str(tmp)), nodes


@case("graph.link_data.load_hetero_tsv")
def _hetero_id_out_of_range(tmp):
    from gluon_suite.graph.link_data import load_hetero_tsv
    _write(tmp / "nodes.tsv", "paper\t0\tp0\t-\npaper\t1\tp1\t-\n")
    edges = _write(tmp / "edges.tsv", "paper\tcites\tpaper\t0\t7\n")
    return lambda: load_hetero_tsv(str(tmp)), edges


@case("graph.cooccurrence.lee_sentences")
def _corpus_not_utf8(tmp):
    from gluon_suite.graph.cooccurrence import lee_sentences
    path = _write(tmp / "lee.cor", NOT_UTF8)
    return lambda: lee_sentences(str(path)), path


@case("nlp.corpora._lines")
def _document_lines_not_utf8(tmp):
    from gluon_suite.nlp.corpora import _lines
    path = _write(tmp / "head500.txt", NOT_UTF8)
    return lambda: _lines(str(path)), path


@case("nlp.glue.read_glue")
def _sts_score_nan(tmp):
    from gluon_suite.nlp.glue import TASKS, read_glue
    head = ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1", "sentence2",
            "score"]
    row = ["0", "main", "f", "2012", "1", "s", "s", "A man plays.", "A man is playing.", "nan"]
    path = _write(tmp / "dev.tsv", "\t".join(head) + "\n" + "\t".join(row) + "\n")
    return lambda: read_glue(str(path), TASKS["STS-B"]), path


@case("nlp.squad.read_squad")
def _squad_malformed_json(tmp):
    from gluon_suite.nlp.squad import read_squad
    path = _write(tmp / "dev.json", '{"data": [\n')
    return lambda: read_squad(str(path)), path


@case("nlp.tasks.read_tsv")
def _tsv_not_utf8(tmp):
    from gluon_suite.nlp.tasks import read_tsv
    path = _write(tmp / "train.tsv", b"sentence\tlabel\n\xff\xfe\x00\x01\t1\n")
    return lambda: read_tsv(str(path)), path


@case("nlp.text.read_corpus")
def _pretraining_text_not_utf8(tmp):
    from gluon_suite.nlp.text import read_corpus
    path = _write(tmp / "corpus.txt", NOT_UTF8)
    return lambda: read_corpus(str(path)), path


@case("nlp.text.load_vocab")
def _bert_vocab_zero_bytes(tmp):
    from gluon_suite.nlp.text import load_vocab
    path = _write(tmp / "vocab.txt", b"")
    return lambda: load_vocab(str(path)), path


@case("nlp.wikipedia._read_pages")
def _dump_cut_short(tmp):
    from gluon_suite.nlp.wikipedia import iter_pages
    from ..nlp.test_wikipedia import SMALL, _dump, _page
    data = bz2.compress(_dump([_page(*p) for p in SMALL]).encode("utf-8"))
    path = _write(tmp / "dump.xml.bz2", data[:len(data) // 2])
    return lambda: iter_pages(str(path)), path


@case("nlp.wikipedia.text_file_corpus")
def _text_corpus_not_utf8(tmp):
    from gluon_suite.nlp.wikipedia import text_file_corpus
    path = _write(tmp / "text.txt", NOT_UTF8)
    return lambda: text_file_corpus(str(path)), path


@case("nlp.wikipedia.Vocabulary.load")
def _lm_vocab_malformed_json(tmp):
    from gluon_suite.nlp.wikipedia import Vocabulary
    path = _write(tmp / "vocab.json", '{"format": ')
    return lambda: Vocabulary.load(str(path)), path


@case("nlp.pretrain_shards.read_shards")
def _shard_cut(tmp):
    from gluon_suite.nlp.pretrain_shards import read_shards
    buf = io.BytesIO()
    np.savez(buf, input_ids=np.zeros((2, 8), np.int32))
    path = _write(tmp / "shards" / "shard-0000.npz", buf.getvalue()[:len(buf.getvalue()) // 2])
    return lambda: read_shards(str(tmp / "shards"), 8, 100), path


@case("nlp.gluonnlp_weights.read_vocab")
def _gluonnlp_vocab_malformed_json(tmp):
    from gluon_suite.nlp.gluonnlp_weights import read_vocab
    path = _write(tmp / "book_corpus_wiki_en_uncased-a6607397.vocab", '{"idx_to_token": [')
    return lambda: read_vocab(str(path)), path


@case("whatif.profiles.load_profile")
def _profile_nan_time(tmp):
    from gluon_suite.whatif.profiles import FORMAT, VERSION, load_profile
    path = _write(tmp / "profile.json", json.dumps({"format": FORMAT, "version": VERSION, "forward_s": float("nan"),
                                                   "backward_s": 0.1, "optimizer_s": 0.0,
                                                   "tensors": [{"bytes": 4, "ready_s": 0.0}]}))
    return lambda: load_profile(str(path)), path


def test_every_registered_reader_has_a_bad_file_case(registered):
    missing = sorted(set(READERS) - set(CASES))
    assert not missing, ("registered readers without a bad-file case in CASES: "
                         f"{missing}; add one (the smallest file the reader must refuse)")
    assert not set(CASES) - set(READERS), sorted(set(CASES) - set(READERS))


@pytest.mark.parametrize("reader", sorted(CASES))
def test_each_reader_refuses_its_bad_file_in_one_line_naming_it(registered, tmp_path, reader):
    call, name = CASES[reader](tmp_path)
    with pytest.raises(UserError) as info:
        result = call()
        list(result) if hasattr(result, "__next__") else result
    msg = str(info.value)
    assert "\n" not in msg, msg
    assert str(name) in msg, f"{reader}: {msg!r} does not name {name}"
