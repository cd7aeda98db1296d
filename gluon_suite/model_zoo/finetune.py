"""Start a network from pretrained weights in GluonCV's store format, with a new classifier.

GluonCV keeps its published weights as ``{root}/{name}-{sha1[:8]}.params`` (``root`` defaults to
``$MXNET_HOME/models``, else ``~/.mxnet/models``) and checks each file's SHA-1 against its own table
(``gluoncv.model_zoo.model_store``); ``pretrained='<hex>'`` names a file by a hash of one's own
instead, ``{name}-{hex}.params``, whose SHA-1 must start with ``<hex>``. Its fine-tuning recipe
loads those weights and gives the network a new output layer for the task's classes.

``start_from_pretrained`` does the same on a network the caller built with its own class count and
initialised: it finds the file (a local store folder, ``$MXNET_HOME/models``, or through the
suite's checkpoint store, which downloads GluonCV's file and verifies it), checks its SHA-1, checks
that it holds exactly the network's parameters apart from the classifier with the same shapes,
and copies them in; the classifier (GluonCV's ``fc`` or ``output`` layer) keeps the caller's fresh
initialisation. Every refusal is one ``ZooError`` line that names the file and the fix: nothing is
loaded from a file whose hash or layout does not match.
"""
import hashlib
import os
import re

from ..utils.env import env
from .records import ZooError

HEADS = ("fc", "output")   # GluonCV's names for the classifier of its classification networks
TAG = re.compile(r"^[0-9a-f]{8,40}$")


def sha1_of(path):
    """Hex SHA-1 of a file, streamed (GluonCV's store hash)."""
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def gluoncv_sha1(name):
    """GluonCV's published SHA-1 for ``name``'s weights, or None when GluonCV publishes none."""
    from gluoncv.model_zoo import model_store
    return model_store._model_sha1.get(name)


def with_gluoncv_weights():
    """The registered models whose weights GluonCV publishes under their name."""
    from .registry import list_models, resolve
    return [n for n in list_models() if resolve(n).weights == "gluoncv" and gluoncv_sha1(n)]


def _some(names, shown=4):
    """A few of ``names`` for a message, GluonCV's CIFAR networks first (small images, as the
    recipe's own data sets) and numbers in their order (resnet20 before resnet110), with how many
    more there are."""
    def key(n):
        return (not n.startswith("cifar_"), [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", n)])
    names = sorted(names, key=key)
    more = f" and {len(names) - shown} more: gluon-suite zoo list" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def gluoncv_file_name(name, tag=None):
    """The file name GluonCV's store gives ``name``'s weights: ``{name}-{sha1[:8]}.params`` from its
    table, or ``{name}-{tag}.params`` for weights of one's own named by ``tag`` (a SHA-1 prefix)."""
    if tag is None:
        sha = gluoncv_sha1(name)
        if sha is None:
            raise ZooError(f"--use-pretrained: GluonCV publishes no weights for '{name}'; pick a model with "
                           f"GluonCV weights ({_some(with_gluoncv_weights())}), or name a file of your own "
                           f"with --pretrained-tag (the first hex digits of its sha1: {name}-HEX.params)")
        return f"{name}-{sha[:8]}.params"
    return f"{name}-{tag}.params"


def default_root():
    """GluonCV's local store when ``$MXNET_HOME`` is set (``$MXNET_HOME/models``, as GluonCV reads
    it), else None: the suite's checkpoint store fetches the file."""
    home = env("MXNET_HOME")
    return os.path.join(home, "models") if home else None


def find_weights(name, root=None, tag=None):
    """``(path, how)``: the verified GluonCV-format weights of ``name``. With ``root`` (or
    ``$MXNET_HOME``) the file must already be in that folder; otherwise the suite's store downloads
    GluonCV's file (or takes it from the cache, or the mirror in ``$GLUON_SUITE_REPO`` /
    ``$MXNET_GLUON_REPO``) and verifies it. ``how`` says what the SHA-1 was checked against."""
    if tag is not None and not TAG.match(str(tag)):
        raise ZooError(f"--pretrained-tag {tag!r} is not a sha1 prefix; give 8 to 40 lower-case hex digits, the "
                       "start of the file's sha1 (sha1sum FILE | cut -c1-8)")
    file_name = gluoncv_file_name(name, tag)
    from_env = not root and default_root() is not None
    root = root or default_root()
    if root is None:
        if tag is not None:
            raise ZooError(f"--pretrained-tag {tag} names a file of your own: give the folder that holds "
                           f"{file_name} with --pretrained-root (nothing tagged is downloaded)")
        from .store import fetch, gluoncv_record
        return fetch(gluoncv_record(name), None), "sha1 matches GluonCV's table"
    root = os.path.expanduser(root)
    path = os.path.join(root, file_name)
    if not os.path.isfile(path):
        if not os.path.isdir(root) and not from_env:
            raise ZooError(f"--pretrained-root {root} is not a folder; give the folder that holds {file_name} "
                           "(GluonCV's store layout, e.g. ~/.mxnet/models)")
        others = sorted(f for f in (os.listdir(root) if os.path.isdir(root) else ())
                        if f.startswith(f"{name}-") and f.endswith(".params"))
        seen = f" (it holds {', '.join(others[:3])}: another release or your own file; name a file of your own " \
               "with --pretrained-tag HEX)" if others else ""
        fix = (f"copy {file_name} there from a GluonCV cache (~/.mxnet/models) or GluonCV's repository"
               if tag is None else f"name your file {file_name} (its sha1 starts with {tag})")
        if from_env:
            fix += " (the folder is $MXNET_HOME/models; unset MXNET_HOME to have the zoo download it)"
        raise ZooError(f"--use-pretrained: {path} does not exist{seen}; {fix}")
    got = sha1_of(path)
    if tag is None:
        want = gluoncv_sha1(name)
        if got != want:
            raise ZooError(f"--use-pretrained: {path} has sha1 {got[:12]}..., GluonCV's table says {want[:12]}... "
                           f"for '{name}': the file is damaged or not GluonCV's release; copy GluonCV's file "
                           f"again, or for weights of your own rename it {name}-{got[:8]}.params and pass "
                           f"--pretrained-tag {got[:8]}")
        return path, "sha1 matches GluonCV's table"
    if not got.startswith(tag):
        raise ZooError(f"--use-pretrained: {path} has sha1 {got[:12]}..., which does not start with "
                       f"--pretrained-tag {tag}; the file changed since it was named: rename it "
                       f"{name}-{got[:8]}.params and pass --pretrained-tag {got[:8]}")
    return path, f"sha1 starts with the tag {tag}"


def classifier_of(net, name="the model"):
    """``(attribute, block)`` of the network's output layer: GluonCV's ``fc`` or ``output`` Dense."""
    from mxnet.gluon import nn
    for attr in HEADS:
        block = getattr(net, attr, None)
        if isinstance(block, nn.Dense):
            return attr, block
    raise ZooError(f"--use-pretrained: {name} has no classifier named {' or '.join(HEADS)} (GluonCV's "
                   "layout), so no new head can be given to it; pick a GluonCV classification model")


def load_features(net, path, head, name="the model"):
    """Copy every parameter of ``net`` except those under ``head.`` from the NDArray file ``path``
    (structural names, as ``save_parameters`` writes them). The file must hold exactly those with
    the same shapes (its own classifier is ignored); returns the names loaded."""
    import mxnet as mx
    try:
        arrays = mx.nd.load(path)
    except mx.base.MXNetError:
        raise ZooError(f"--use-pretrained: {path} is truncated or not an MXNet parameter file; copy the "
                       "file again") from None
    arrays = {k.split(":", 1)[-1]: v for k, v in (arrays.items() if isinstance(arrays, dict) else ())}
    prefix = head + "."
    params = {k: p for k, p in net._collect_params_with_prefix().items() if not k.startswith(prefix)}
    file_keys = {k for k in arrays if not k.startswith(prefix)}
    missing, foreign = sorted(set(params) - file_keys), sorted(file_keys - set(params))
    if missing or foreign:
        example = (missing or foreign)[0]
        raise ZooError(f"--use-pretrained: {path} does not hold the parameters of {name} ({len(missing)} "
                       f"missing, {len(foreign)} foreign, e.g. '{example}'); give the weights of this "
                       "architecture")
    for key, p in params.items():
        have, want = tuple(arrays[key].shape), tuple(p.shape)
        if have != want:
            extra = " (the data's channel count differs from the weights': ImageNet weights take 3-channel " \
                    "images)" if len(want) == 4 and have[0] == want[0] and have[1] != want[1] else ""
            raise ZooError(f"--use-pretrained: '{key}' is {have} in {path} but {want} in {name}{extra}; "
                           "train on data the weights fit, or without --use-pretrained")
    for key, p in params.items():
        p.set_data(arrays[key].astype(p.dtype, copy=False))
    return sorted(params)


def start_from_pretrained(net, name, classes, root=None, tag=None):
    """GluonCV's fine-tuning start on an initialised ``net`` (built as zoo model ``name`` with
    ``classes`` outputs): every parameter but the classifier's from the verified GluonCV-format file
    (see ``find_weights``); the classifier keeps its fresh initialisation. Returns a dict: ``path``,
    ``how`` (what the SHA-1 matched), ``head`` (the classifier's attribute), ``loaded`` (names)."""
    head, block = classifier_of(net, f"'{name}'")
    if block._units != classes:
        raise ZooError(f"--use-pretrained: the network's {head} layer has {block._units} outputs, not the "
                       f"data's {classes} classes; build it with classes={classes}")
    path, how = find_weights(name, root, tag)
    loaded = load_features(net, path, head, f"'{name}'")
    return {"path": path, "how": how, "head": head, "loaded": loaded}
