"""Which of GluonCV's models are image classifiers, found by building them: the table behind
``gluoncv_table.py`` (written by ``python -m gluon_suite.cv.models.gluoncv_probe --write``) and the
long-tier test that checks the table against the installed GluonCV.

A name is a classifier when GluonCV builds it without weights for a class count of our choosing and
maps a batch of one RGB image to one row of that many scores. Families that are something else by
their purpose are not built at all (they would download backbones or need video or detection
inputs): detectors, segmenters, pose estimators, action recognisers, trackers, depth estimators and
the INT8 models (those are GluonCV's quantised symbol files, nothing to train). For each classifier
the probe records the smallest square input it takes among ``SIZES``, the attribute of its output
layer (what fine-tuning replaces) and how the constructor treats GluonCV's ``last_gamma`` and
``use_se`` (``options_of``: read from the zero-initialised BatchNorm gammas and the extra SE blocks).
"""
import argparse
import fnmatch
import os
import pprint
import sys

# GluonCV names that are not image classifiers, by family (shell patterns)
NOT_CLASSIFIERS = {
    "detection": ("ssd_*", "faster_rcnn_*", "mask_rcnn_*", "doublehead_rcnn_*", "custom_faster_rcnn*",
                  "custom_mask_rcnn*", "yolo3_*", "center_net_*"),
    "segmentation": ("fcn_*", "psp_*", "deeplab_*", "icnet_*", "fastscnn_*", "danet_*", "hrnet_*_s"),
    "pose": ("simple_pose_*", "mobile_pose_*", "alpha_pose_*"),
    "action recognition": ("*_ucf101", "*_hmdb51", "*_kinetics400", "*_kinetics700", "*_sthsthv2", "*_custom",
                           "c3d_*", "p3d_*", "r2plus1d_*", "i3d_*", "slowfast_*"),
    "tracking and depth": ("siamrpn_*", "monodepth2_*"),
    "quantised (INT8 symbol files)": ("*_int8",),
}
SIZES = (32, 64, 128, 224, 299)   # the input sides tried, smallest first
PROBE_CLASSES = 7                 # a class count no GluonCV default has
TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gluoncv_table.py")


def family_of(name):
    """The non-classifier family ``name`` belongs to by its spelling, or None."""
    for family, patterns in NOT_CLASSIFIERS.items():
        if any(fnmatch.fnmatch(name, p) for p in patterns):
            return family
    return None


def candidates():
    """GluonCV's model names outside the non-classifier families, in GluonCV's order."""
    from gluoncv.model_zoo import get_model_list
    return [n for n in get_model_list() if family_of(n) is None]


def with_new_head(net, classes):
    """``net`` with a fresh Dense output layer of ``classes`` as ``fc``: GluonCV's pruned ResNets
    (``resnet50_v1d_0.86`` ...) fix the shapes of every layer, their 1000-class ``fc`` included."""
    from mxnet.gluon import nn
    with net.name_scope():
        net.fc = nn.Dense(classes)
    return net


def build(name, classes, new_head=False, classes_as="classes", **kwargs):
    """GluonCV's ``name`` without weights for ``classes``; ``new_head``: built as GluonCV fixes it,
    then given a new output layer (``with_new_head``); ``classes_as``: the keyword the constructor
    reads the class count from (HRNet's ``num_classes``)."""
    from gluoncv.model_zoo import get_model
    if new_head:
        net = get_model(name, pretrained=False, **kwargs)
        return with_new_head(net, classes) if classes != 1000 else net
    return get_model(name, pretrained=False, **{classes_as: classes}, **kwargs)


def _build(name, **kwargs):
    return build(name, PROBE_CLASSES, **kwargs)


def _scores(net, size):
    """The network's output for one ``size`` x ``size`` image, or None when it does not take it."""
    import mxnet as mx
    try:
        net.initialize(mx.init.Xavier(), force_reinit=True)
        out = net(mx.nd.random.uniform(shape=(1, 3, size, size)))
        (out[0] if isinstance(out, (tuple, list)) else out).wait_to_read()
    except Exception:   # noqa: BLE001 - too small an input fails in shape inference, in many ways
        return None
    return out


def zero_gammas(net):
    """How many BatchNorm gammas the network initialises to zeros (GluonCV's ``last_gamma``)."""
    import mxnet as mx
    found = 0
    for pname, p in net.collect_params().items():
        init = p.init
        if pname.endswith("gamma") and (isinstance(init, mx.init.Zero) or str(init).lower() in ("zeros", "zero")):
            found += 1
    return found


def head_of(net, classes):
    """The child attribute whose parameters make the ``classes`` outputs (the output layer)."""
    for attr, child in net._children.items():
        shapes = [p.shape for p in child.collect_params().values()]
        if shapes and shapes[-1] and shapes[-1][0] == classes:
            return attr
    return None


def options_of(name, plain, extra=None):
    """``{"last_gamma": how, "use_se": taken}``: ``how`` is ``"option"`` when ``last_gamma=True``
    zero-initialises more BatchNorm gammas than the default, ``"always"`` when the default already
    does (GluonCV's ResNeXt: its switch turns it off), ``"ignored"`` when the keyword is taken
    without an effect (basic blocks have no last BatchNorm to zero), ``"no"`` when it is refused;
    ``taken``: whether ``use_se=True`` is accepted and adds parameters (most names fix it)."""
    zeros = zero_gammas(plain)
    how = "always" if zeros else "no"
    try:
        with_flag = zero_gammas(_build(name, last_gamma=True, **(extra or {})))
        how = "option" if with_flag > zeros else how if zeros else "ignored"
    except Exception:   # noqa: BLE001 - GluonCV refuses unknown keywords in several ways
        pass
    taken = False
    try:
        taken = len(_build(name, use_se=True, **(extra or {})).collect_params()) > len(plain.collect_params())
    except Exception:   # noqa: BLE001
        pass
    return {"last_gamma": how, "use_se": taken}


def probe(name, sizes=SIZES):
    """``{"input": side, "head": attribute, "last_gamma": how, "use_se": taken}`` for a classifier
    (``options_of``), with ``"kwargs"`` where it is built with keywords of its own to return one
    row of scores (NASNet's ``use_aux=False``) or for a class count of its own (``new_head``:
    the pruned ResNets; ``classes_as``: HRNet), or ``{"not": reason}``."""
    family = family_of(name)
    if family:
        return {"not": family}
    try:
        plain = _build(name)
    except Exception as exc:   # noqa: BLE001 - GluonCV raises what it raises; the reason is recorded
        return {"not": f"does not build for {PROBE_CLASSES} classes: {type(exc).__name__}: {exc}"[:200]}
    extra = {}
    for size in sizes:
        out = _scores(_build(name), size)
        if isinstance(out, (tuple, list)):   # NASNet: (scores, auxiliary scores) unless use_aux=False
            extra = {"use_aux": False}
            out = _scores(_build(name, **extra), size)
        if out is None and hasattr(plain, "fc") and _scores(build(name, 1000), size) is not None:
            extra = {"new_head": True}      # built for 1000 classes only: a new output layer
            out = _scores(_build(name, **extra), size)
        if getattr(out, "shape", None) == (1, 1000):   # HRNet reads num_classes (and ignores classes)
            extra = {"classes_as": "num_classes"}
            out = _scores(_build(name, **extra), size)
        if out is None:
            continue
        if getattr(out, "shape", None) != (1, PROBE_CLASSES):
            return {"not": f"maps an image to {getattr(out, 'shape', type(out).__name__)}, not class scores"}
        plain = _build(name, **extra)
        row = {"input": size, "head": head_of(plain, PROBE_CLASSES), **options_of(name, plain, extra)}
        return {**row, "kwargs": extra} if extra else row
    return {"not": f"takes none of the inputs {sizes}"}


def write_table(rows, path=TABLE):
    """Write the generated module ``gluoncv_table.py`` holding ``rows`` (name -> probe result)."""
    text = ('"""GluonCV\'s image classifiers: name -> smallest square input, output layer, options taken.\n\n'
            "Generated by ``python -m gluon_suite.cv.models.gluoncv_probe --write`` from the installed GluonCV\n"
            '(the long-tier test checks it still matches); do not edit by hand."""\n'
            f"CLASSIFIERS = {pprint.pformat(rows, width=110, sort_dicts=False)}\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("--write", action="store_true", help=f"rewrite {os.path.basename(TABLE)}")
    parser.add_argument("--only", metavar="PATTERN", help="probe the names matching this shell pattern and keep the "
                        "table's other rows")
    args = parser.parse_args(argv)
    rows, refused = {}, {}
    if args.only:
        from .gluoncv_table import CLASSIFIERS
        rows = {n: r for n, r in CLASSIFIERS.items() if not fnmatch.fnmatch(n, args.only)}
    for name in candidates():
        if args.only and not fnmatch.fnmatch(name, args.only):
            continue
        got = probe(name)
        if "not" in got:
            refused[name] = got["not"]
        else:
            rows[name] = got
        print(f"{name}: {got}", flush=True)
    print(f"{len(rows)} classifiers; not classifiers among the candidates: {len(refused)}")
    if args.write:
        order = list(candidates())
        write_table(dict(sorted(rows.items(), key=lambda kv: order.index(kv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
