"""Saving and loading graphs, as DGL's ``dgl.save_graphs(filename, g_list, labels=None)`` and
``dgl.load_graphs(filename, idx_list=None)``, in this package's own file format (not DGL's
binary one, and never pickle).

The file is three parts, one after the other:

1. the line ``GLUON-SUITE-GRAPHS`` (the format's magic, ASCII, ending in a newline);
2. a header: one line of UTF-8 JSON, ending in a newline;
3. a payload: the bytes of an MXNet NDArray file (what ``mx.nd.save`` writes for a dict of
   arrays), which ``mx.nd.load_frombuffer`` reads back.

The header is an object with ``"format": "gluon_suite.graph"``, ``"version": 1``, ``"payload":
{"bytes": <payload length>, "sha256": <hex digest of the payload>}``, ``"graphs"``: one object per
graph, and ``"labels"``: ``{label name: array key}``. A graph's object has ``"kind"`` (``"graph"``,
``"bipartite"`` or ``"block"``), ``"idtype"`` (``"int32"`` or ``"int64"``), ``"num_src_nodes"``,
``"num_dst_nodes"`` (equal for a graph), ``"ntypes"`` (source and destination node type),
``"etype"``, ``"src"`` and ``"dst"`` (the keys of its edge-end arrays, of its id type) and
``"ndata"`` and ``"edata"`` (``{feature name: array key}``; a bipartite graph or block has
``"srcdata"`` and ``"dstdata"`` instead of ``"ndata"``). Array keys are ``g<i>.src``, ``g<i>.dst``,
``g<i>.n<j>`` (``.s<j>``, ``.d<j>`` for the two sides), ``g<i>.e<j>`` and ``l<j>``: feature names are
only in the header, so any string may name a feature.

A heterograph with several relations has ``"kind": "hetero"``, ``"idtype"``, ``"ntypes"`` (in order),
``"num_nodes"`` (``{node type: count}``), ``"ndata"`` (``{node type: {feature name: array key}}``) and
``"relations"``: one object per canonical edge type, in order, with ``"canonical"`` (the source type,
edge type and destination type), ``"src"``, ``"dst"`` and ``"edata"``. Its array keys are
``g<i>.t<k>.n<j>`` for node type k's features and ``g<i>.r<k>.src``/``.dst``/``.e<j>`` for relation k's.

Reading checks, before MXNet parses anything, the magic, the header's JSON, format and version,
the payload's length (a shorter file is truncated) and its checksum (a corrupt one), then that
every array the header names is in the payload with the right rows and id type; anything else is
refused with a one-line ``GraphError`` (``DGLError``) naming the file and what is wrong. Writing
goes to a temporary file beside the target that replaces it only once complete (``os.replace``),
so a crash never leaves a half-written file under the name.

Graphs are loaded onto the CPU (``mx.cpu()``), as DGL does, with their id type; features and
labels keep their dtypes. Batch information and feature initializers are not saved; ``formats``
is accepted and ignored (sparse formats are built on demand).
"""
import contextlib
import hashlib
import json
import os
import tempfile

import mxnet as mx
import numpy as np

from .base import GraphError
from .block import Block
from .digraph import Graph
from .hetero_graph import HeteroGraph
from .heterograph import BipartiteGraph
from ..utils.readers import data_reader

__all__ = ["save_graphs", "load_graphs"]

MAGIC = b"GLUON-SUITE-GRAPHS\n"
FORMAT, VERSION = "gluon_suite.graph", 1
_MX_MAGIC = (0x112).to_bytes(8, "little")          # how an MXNet NDArray file starts
_HEADER_LIMIT = 1 << 30


def _host(x):
    """``x`` as a dense NDArray on the CPU (what the payload stores)."""
    if not isinstance(x, mx.nd.NDArray):
        x = mx.nd.array(np.asarray(x), dtype=np.asarray(x).dtype)
    if x.stype != "default":
        x = x.tostype("default")
    return x.as_in_context(mx.cpu())


def _describe(i, g, arrays):
    """The header entry of graph ``i``; its arrays go into ``arrays``."""
    kind = "block" if g.is_block else ("bipartite" if g._two_sides else "graph")
    idt = np.dtype(g.idtype).name
    entry = {"kind": kind, "idtype": idt, "num_src_nodes": int(g._nsrc), "num_dst_nodes": int(g._ndst),
             "ntypes": list(g._ntypes), "etype": g._etype, "src": f"g{i}.src", "dst": f"g{i}.dst"}
    arrays[entry["src"]] = mx.nd.array(g._src, dtype=idt)
    arrays[entry["dst"]] = mx.nd.array(g._dst, dtype=idt)
    frames = [("edata", "e", g.edata)]
    frames += [("srcdata", "s", g.srcdata), ("dstdata", "d", g.dstdata)] if g._two_sides else [("ndata", "n", g.ndata)]
    for name, tag, frame in frames:
        entry[name] = {}
        for j, (k, v) in enumerate(frame.items()):
            if not isinstance(k, str):
                raise GraphError(f"save_graphs: graph {i} has a feature named {k!r}; feature names must be strings")
            entry[name][k] = f"g{i}.{tag}{j}"
            arrays[entry[name][k]] = _host(v)
    return entry


def _features(i, where, frame, key, arrays):
    out = {}
    for j, (k, v) in enumerate(frame.items()):
        if not isinstance(k, str):
            raise GraphError(f"save_graphs: graph {i} has a feature named {k!r} on {where}; feature names must be "
                             "strings")
        out[k] = f"{key}{j}"
        arrays[out[k]] = _host(v)
    return out


def _describe_hetero(i, g, arrays):
    """The header entry of heterograph ``i`` (several relations)."""
    idt = np.dtype(g.idtype).name
    entry = {"kind": "hetero", "idtype": idt, "ntypes": list(g.ntypes),
             "num_nodes": {t: int(g.num_nodes(t)) for t in g.ntypes},
             "ndata": {t: _features(i, f"node type {t!r}", g._node_frames[t], f"g{i}.t{k}.n", arrays)
                       for k, t in enumerate(g.ntypes)}, "relations": []}
    for k, c in enumerate(g.canonical_etypes):
        rel = g[c]
        rec = {"canonical": list(c), "src": f"g{i}.r{k}.src", "dst": f"g{i}.r{k}.dst",
               "edata": _features(i, f"relation {c!r}", rel.edata, f"g{i}.r{k}.e", arrays)}
        arrays[rec["src"]] = mx.nd.array(rel._src, dtype=idt)
        arrays[rec["dst"]] = mx.nd.array(rel._dst, dtype=idt)
        entry["relations"].append(rec)
    return entry


def save_graphs(filename, g_list, labels=None, formats=None):
    """DGL's ``save_graphs``: write the graph ``g_list`` (or a list of graphs, heterographs,
    bipartite graphs and blocks) with their structure, id types and features, and ``labels`` (``{name: array}``),
    to ``filename`` in the format above. The file is replaced atomically."""
    kinds = (Graph, HeteroGraph)
    graphs = [g_list] if isinstance(g_list, kinds) else list(g_list) if isinstance(g_list, (list, tuple)) else None
    if graphs is None or not all(isinstance(g, kinds) for g in graphs):
        raise GraphError("save_graphs takes a graph, a heterograph or a list of them as g_list")
    if labels is not None and (not isinstance(labels, dict) or not all(isinstance(k, str) for k in labels)):
        raise GraphError("save_graphs: labels must be a dict {name (str): array}")
    arrays = {}
    header = {"format": FORMAT, "version": VERSION, "labels": {},
              "graphs": [(_describe_hetero if isinstance(g, HeteroGraph) else _describe)(i, g, arrays)
                         for i, g in enumerate(graphs)]}
    for j, (k, v) in enumerate((labels or {}).items()):
        header["labels"][k] = f"l{j}"
        arrays[f"l{j}"] = _host(v)
    path = os.fspath(filename)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise GraphError(f"save_graphs: cannot write {path}: the folder {folder} does not exist; create it first")
    fd, tmp = tempfile.mkstemp(prefix=".graphs-", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        mx.nd.save(tmp, arrays)
        with open(tmp, "rb") as f:
            payload = f.read()
        header["payload"] = {"bytes": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}
        with open(tmp, "wb") as f:
            f.write(MAGIC)
            f.write(json.dumps(header, sort_keys=True).encode("utf-8") + b"\n")
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)                   # mkstemp's file is private; give it the usual mode
        os.replace(tmp, path)
    except OSError as e:
        raise GraphError(f"save_graphs: cannot write {path}: {e.strerror or e}") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _read(path):
    """The header and the payload's arrays, after every check on the bytes."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(MAGIC))
            if head != MAGIC:
                if head[:8] == _MX_MAGIC:
                    raise GraphError(f"{path} is an MXNet NDArray file without the graph header that save_graphs "
                                     "writes; load it with mx.nd.load, or save graphs with dgl.save_graphs")
                raise GraphError(f"{path} is not a graph file written by save_graphs (it does not start with "
                                 f"{MAGIC.strip().decode()})")
            line = f.readline(_HEADER_LIMIT)
            payload = f.read()
    except FileNotFoundError:
        raise GraphError(f"load_graphs: {path} does not exist; check the path") from None
    except OSError as e:
        raise GraphError(f"load_graphs: cannot read {path}: {e.strerror or e}") from None
    if not line.endswith(b"\n"):
        raise GraphError(f"{path} is truncated or corrupt: its header line never ends")
    try:
        header = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise GraphError(f"{path} is corrupt: its header is not valid JSON") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise GraphError(f"{path} is not a graph file written by save_graphs (its header has no "
                         f"format {FORMAT!r})")
    if header.get("version") != VERSION:
        raise GraphError(f"{path} has format version {header.get('version')!r}; this package reads version "
                         f"{VERSION}: write it again with this package's save_graphs")
    info = header.get("payload")
    if not isinstance(info, dict) or not isinstance(info.get("bytes"), int) or not isinstance(info.get("sha256"), str):
        raise GraphError(f"{path} is corrupt: its header does not describe the payload")
    if len(payload) != info["bytes"]:
        what = "truncated" if len(payload) < info["bytes"] else "corrupt"
        raise GraphError(f"{path} is {what}: its arrays take {len(payload)} bytes, the header says {info['bytes']}; "
                         "copy or save it again")
    if hashlib.sha256(payload).hexdigest() != info["sha256"]:
        raise GraphError(f"{path} is corrupt: its arrays do not match the header's checksum; copy or save it again")
    try:
        arrays = mx.nd.load_frombuffer(payload)
    except mx.base.MXNetError:
        raise GraphError(f"{path} is corrupt: MXNet cannot read its arrays") from None
    if not isinstance(arrays, dict):
        raise GraphError(f"{path} is corrupt: its arrays have no names")
    return header, arrays


def _array(path, arrays, key, what):
    if not isinstance(key, str) or key not in arrays:
        raise GraphError(f"{path} is corrupt: {what} names an array ({key!r}) the file does not hold")
    return arrays[key]


def _ends(path, arrays, rec, idt, what):
    ends = []
    for side in ("src", "dst"):
        a = _array(path, arrays, rec.get(side), f"{what}'s {side}")
        if a.ndim != 1 or np.dtype(a.dtype).name != idt:
            raise GraphError(f"{path} is corrupt: {what}'s {side} is not a 1-D {idt} array")
        ends.append(a.asnumpy())
    return tuple(ends)


@contextlib.contextmanager
def _entry_errors(path, i):
    """Graph ``i``'s entry read inside: any error is one line naming the file and the graph."""
    try:
        yield
    except GraphError as e:
        raise GraphError(f"{path} is corrupt: graph {i}: {e}") from None
    except (KeyError, TypeError, ValueError) as e:
        raise GraphError(f"{path} is corrupt: graph {i}'s header entry is malformed "
                         f"({type(e).__name__}: {e})") from None


def _build_hetero(path, i, entry, arrays, idt):
    with _entry_errors(path, i):
        ntypes, counts = list(entry["ntypes"]), {t: int(n) for t, n in dict(entry["num_nodes"]).items()}
        rels = [(tuple(r["canonical"]), r) for r in entry["relations"]]
        edges = {c: _ends(path, arrays, r, idt, f"graph {i}'s relation {c!r}") for c, r in rels}
        g = HeteroGraph(edges, counts, ntypes, idtype=idt)
        for t, feats in dict(entry["ndata"]).items():
            for k, key in dict(feats).items():
                g.nodes[t].data[k] = _array(path, arrays, key, f"graph {i}'s ndata[{t!r}][{k!r}]")
        for c, r in rels:
            for k, key in dict(r["edata"]).items():
                g.edges[c].data[k] = _array(path, arrays, key, f"graph {i}'s relation {c!r} edata[{k!r}]")
    return g


def _build(path, i, entry, arrays):
    """Graph ``i`` from its header entry."""
    if not isinstance(entry, dict) or entry.get("kind") not in ("graph", "bipartite", "block", "hetero"):
        raise GraphError(f"{path} is corrupt: graph {i} has no kind graph, bipartite, block or hetero")
    idt = entry.get("idtype")
    if idt not in ("int32", "int64"):
        raise GraphError(f"{path} is corrupt: graph {i} has id type {idt!r}, not int32 or int64")
    if entry["kind"] == "hetero":
        return _build_hetero(path, i, entry, arrays, idt)
    ends = _ends(path, arrays, entry, idt, f"graph {i}")
    with _entry_errors(path, i):
        ns, nd = int(entry["num_src_nodes"]), int(entry["num_dst_nodes"])
        ntypes, etype, kind = tuple(entry["ntypes"]), str(entry["etype"]), entry["kind"]
        if kind == "graph":
            g = Graph(ends, num_nodes=ns, idtype=idt)
            g._ntypes, g._etype = ntypes, etype
        elif kind == "block":
            g = Block(ends, ns, nd, idtype=idt)
        else:
            g = BipartiteGraph(ends, ns, nd, ntypes, etype, idt)
        frames = [("edata", g.edata)]
        frames += [("srcdata", g.srcdata), ("dstdata", g.dstdata)] if g._two_sides else [("ndata", g.ndata)]
        for name, frame in frames:
            for k, key in dict(entry.get(name) or {}).items():
                frame[k] = _array(path, arrays, key, f"graph {i}'s {name}[{k!r}]").as_in_context(mx.cpu())
    return g


@data_reader("graph file written by save_graphs", path="filename", fix="copy or save it again",
             checks=("the magic line", "a JSON header of the format and version", "the payload's length and sha256",
                     "every array named, with its rows and id type", "idx_list in range"))
def load_graphs(filename, idx_list=None):
    """DGL's ``load_graphs``: ``(graphs, labels)`` from a file ``save_graphs`` wrote; the graphs
    at ``idx_list`` (positions in the saved list, in that order) or all of them, and the labels
    dict (empty when none were saved). A file that is not one, truncated or corrupt is a
    ``GraphError`` naming the file and the problem."""
    path = os.fspath(filename)
    header, arrays = _read(path)
    entries = header.get("graphs")
    if not isinstance(entries, list) or not isinstance(header.get("labels"), dict):
        raise GraphError(f"{path} is corrupt: its header has no list of graphs or labels")
    if idx_list is None:
        picks = list(range(len(entries)))
    else:
        picks = [int(i) for i in (idx_list if isinstance(idx_list, (list, tuple, np.ndarray)) else [idx_list])]
        bad = [i for i in picks if not 0 <= i < len(entries)]
        if bad:
            raise GraphError(f"load_graphs: {path} holds {len(entries)} graphs (positions 0..{len(entries) - 1}); "
                             f"idx_list asks for {bad[0]}")
    graphs = [_build(path, i, entries[i], arrays) for i in picks]
    labels = {k: _array(path, arrays, key, f"label {k!r}").as_in_context(mx.cpu())
              for k, key in header["labels"].items()}
    return graphs, labels
