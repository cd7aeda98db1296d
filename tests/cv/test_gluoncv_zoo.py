"""Every GluonCV image classifier by its GluonCV name: registered in the zoo, built for any class
count without downloading, trained by --model, with GluonCV's --last-gamma and --use-se meanings.

The fast tier builds a few small networks at 32x32; the long tier builds every one at its smallest
input and checks the table (gluoncv_table.py) against the installed GluonCV by probing each name."""
import mxnet as mx
import pytest

from ..conftest import load_script

# hand-written: names of each family the issue lists, and GluonCV names that are not classifiers
FAMILIES = ("resnet18_v1", "resnet152_v2", "resnet50_v1b", "resnet50_v1c", "resnet50_v1d", "resnet101_v1e",
            "resnet152_v1s", "resnext50_32x4d", "se_resnet50_v1", "se_resnext101_64x4d", "senet_154",
            "mobilenet1.0", "mobilenet0.25", "mobilenetv2_1.0", "mobilenetv3_large", "mobilenetv3_small",
            "vgg16", "vgg19_bn", "densenet121", "inceptionv3", "googlenet", "xception", "squeezenet1.0",
            "squeezenet1.1", "alexnet", "resnest50", "shufflenet_v2", "darknet53", "cifar_resnet110_v2",
            "cifar_wideresnet16_10", "cifar_resnext29_32x4d", "resnet50_v1d_0.86", "hrnet_w18_c", "dla34",
            "residualattentionnet56", "nasnet_4_1056")
NOT_CLASSIFIERS = ("ssd_512_resnet50_v1_voc", "yolo3_darknet53_coco", "faster_rcnn_resnet50_v1b_voc",
                   "center_net_resnet18_v1b_voc", "fcn_resnet50_voc", "deeplab_resnet101_coco", "hrnet_w48_s",
                   "simple_pose_resnet18_v1b", "i3d_resnet50_v1_kinetics400", "resnet50_v1b_custom",
                   "mobilenet1.0_int8", "siamrpn_alexnet_v2_otb15", "monodepth2_resnet18_kitti_stereo_640x192")
# the suite's own names from before, unchanged
OWN = ("resnest14_digits", "resnet14_digits", "resnest14_cifar", "resnest26_cifar", "resnet14_cifar",
       "resnet26_cifar", "digits_cnn", "cifar_resnet20_v1", "cifar_resnet56_v1", "resnest14", "resnet18_v1b")
FAST = ("resnet18_v1", "resnet18_v2", "resnet50_v1d", "mobilenet0.25", "mobilenetv2_0.25", "mobilenetv3_small",
        "cifar_resnet20_v2", "shufflenet_v2", "vgg11")


def test_gluoncv_classifiers_are_registered_and_the_others_are_not():
    from gluoncv.model_zoo import get_model_list
    from gluon_suite.cv.models.gluoncv_table import CLASSIFIERS
    from gluon_suite.model_zoo import list_models
    names = set(list_models())
    assert set(FAMILIES) <= set(CLASSIFIERS) <= names
    assert set(CLASSIFIERS) <= set(get_model_list())
    assert not set(NOT_CLASSIFIERS) & names and set(NOT_CLASSIFIERS) <= set(get_model_list())
    assert set(OWN) <= names


def test_the_table_covers_every_candidate_name_of_the_installed_gluoncv():
    """Every GluonCV name outside the detection, segmentation, pose, action, tracking, depth and
    INT8 families is in the table (a new GluonCV adds rows: rewrite it with the probe)."""
    from gluon_suite.cv.models.gluoncv_probe import candidates, family_of
    from gluon_suite.cv.models.gluoncv_table import CLASSIFIERS
    assert set(candidates()) == set(CLASSIFIERS)
    assert [family_of(n) for n in ("ssd_300_vgg16_atrous_voc", "psp_resnet101_ade", "alpha_pose_resnet101_v1b_coco",
                                   "slowfast_4x16_resnet50_kinetics400", "resnet50_v1_int8", "resnet50_v1d")] == \
        ["detection", "segmentation", "pose", "action recognition", "quantised (INT8 symbol files)", None]


def test_own_names_keep_their_entries():
    from gluon_suite.model_zoo import resolve
    assert resolve("cifar_resnet20_v1").weights == "gluoncv"
    assert resolve("cifar_resnet20_v1").description == "GluonCV's cifar_resnet20_v1 (CIFAR-10)"
    assert resolve("resnest50").description == "ResNeSt-50 (Split-Attention, radix 2), ImageNet top-1 81.04 at 224"
    assert resolve("resnest14_digits").weights is None and resolve("resnest14_digits").task == "classification"


def test_names_with_dots_resolve_and_take_tags():
    from gluon_suite.model_zoo.registry import ModelNotFound, split_tag
    assert split_tag("mobilenet1.0") == (split_tag("mobilenet1.0")[0], None)
    assert split_tag("mobilenet1.0")[0].name == "mobilenet1.0"
    entry, key = split_tag("mobilenet1.0.mine")
    assert entry.name == "mobilenet1.0" and key == "mobilenet1.0.mine"
    entry, key = split_tag("resnest14_digits.mine")
    assert entry.name == "resnest14_digits" and key == "resnest14_digits.mine"
    with pytest.raises(ModelNotFound, match="unknown model 'mobilenet1'"):
        split_tag("mobilenet1.x")


@pytest.mark.parametrize("name", FAST)
def test_small_classifiers_map_a_batch_to_class_scores(name):
    from gluon_suite.model_zoo import get_model
    net = get_model(name, classes=5)
    net.initialize(mx.init.Xavier())
    out = net(mx.nd.random.uniform(shape=(2, 3, 32, 32)))
    assert out.shape == (2, 5)


def test_the_script_takes_gluoncv_names():
    parser = load_script("scripts/cv/train_classification.py").build_parser()
    for name in ("resnet50_v1d", "mobilenet1.0", "resnet50_v1d_0.86", "inceptionv3"):
        assert vars(parser.parse_args(["--model", name])) == {"model": name}


def _zero_gammas(name, **flags):
    from gluon_suite.cv.models.gluoncv_probe import zero_gammas
    from gluon_suite.cv.recipe import ClassificationConfig
    from gluon_suite.cv.recipe_gluoncv import model_kwargs
    from gluon_suite.model_zoo import get_model
    cfg = ClassificationConfig.from_dict({"model": name, **flags})
    return zero_gammas(get_model(name, **model_kwargs(cfg, 4, 3)))


@pytest.mark.parametrize("name, blocks, default", [
    ("resnet18_v1", 8, 0),          # [2, 2, 2, 2] basic blocks, each ending in a BatchNorm
    ("resnet50_v1d", 16, 0),        # [3, 4, 6, 3] bottlenecks
    ("resnest14", 4, 0),            # [1, 1, 1, 1]
    ("resnext50_32x4d", 16, 16),    # GluonCV's ResNeXt zero-initialises them whatever the flag
])
def test_last_gamma_zero_initialises_the_last_bn_of_each_block(name, blocks, default):
    assert _zero_gammas(name) == default
    assert _zero_gammas(name, last_gamma=True) == blocks


@pytest.mark.parametrize("flags, needle", [
    ({"model": "vgg11", "last_gamma": True}, "--last-gamma: vgg11 has no residual blocks"),
    ({"model": "digits_cnn", "last_gamma": True}, "--last-gamma does not apply to digits_cnn"),
    ({"model": "resnext50_32x4d", "use_se": True}, "drop --use-se and use --model se_resnext50_32x4d instead"),
    ({"model": "mobilenet1.0", "use_se": True}, "pick an SE network by name"),
    ({"model": "resnest14_digits", "use_se": True}, "--use-se: resnest14_digits takes no SE switch"),
])
def test_flags_a_model_cannot_take_are_one_line(flags, needle):
    from gluon_suite.cv.recipe import ClassificationConfig
    from gluon_suite.cv.recipe_gluoncv import model_kwargs
    from gluon_suite.utils import UserError
    with pytest.raises(UserError) as ei:
        model_kwargs(ClassificationConfig.from_dict(flags), 4, 3)
    assert needle in str(ei.value) and "\n" not in str(ei.value)


def test_last_gamma_on_basic_v1b_blocks_is_a_note_as_in_gluoncv():
    """GluonCV's published resnet18_v1b command passes --last-gamma, which its basic blocks ignore."""
    from gluon_suite.cv.recipe import ClassificationConfig
    from gluon_suite.cv.recipe_gluoncv import model_kwargs
    notes = []
    got = model_kwargs(ClassificationConfig.from_dict({"model": "resnet18_v1b", "last_gamma": True}), 4, 3,
                       notes.append)
    assert got == {"classes": 4} and len(notes) == 1 and "changes nothing in resnet18_v1b" in notes[0]


@pytest.mark.long
@pytest.mark.parametrize("name", sorted(__import__("gluon_suite.cv.models.gluoncv_table",
                                                   fromlist=["CLASSIFIERS"]).CLASSIFIERS))
def test_every_classifier_builds_and_matches_its_row(name):
    """Probing the name again (built for 7 classes, smallest input found, head and options read)
    gives the table's row; the zoo's constructor maps a batch to 3 class scores at that input."""
    from gluon_suite.cv.models.gluoncv_probe import probe
    from gluon_suite.cv.models.gluoncv_table import CLASSIFIERS
    from gluon_suite.model_zoo import get_model
    row = CLASSIFIERS[name]
    assert probe(name) == row
    net = get_model(name, classes=3)
    net.initialize(mx.init.Xavier())
    side = row["input"]
    assert net(mx.nd.random.uniform(shape=(1, 3, side, side))).shape == (1, 3)


def test_fine_tuning_starts_a_convolutional_head_model_from_a_gluoncv_file(tmp_path, monkeypatch):
    """MobileNet v3's output layer is convolutional (not a Dense ``fc``/``output``): --use-pretrained
    still takes every other parameter from a GluonCV-format file of the user's (sha1-named) and gives
    the network a fresh 3-class head."""
    import hashlib
    import os

    import numpy as np
    from gluoncv.model_zoo import get_model as gcv_get_model
    from gluon_suite.cv import recipe
    from gluon_suite.cv.samples import write_image_folder
    from gluon_suite.distributed import LocalCommunicator
    name = "mobilenetv3_small"
    src = gcv_get_model(name, pretrained=False)          # GluonCV's 1000 classes
    src.initialize(mx.init.Uniform(0.5))
    src(mx.nd.zeros((1, 3, 32, 32)))
    root = tmp_path / "store"
    root.mkdir()
    src.save_parameters(str(root / "tmp.params"))
    sha = hashlib.sha1((root / "tmp.params").read_bytes()).hexdigest()
    path = root / f"{name}-{sha[:8]}.params"
    os.replace(root / "tmp.params", path)
    images = write_image_folder(str(tmp_path / "img"), train=4, val=2, scale=4)
    seen, real = {}, recipe.DistributedTrainer

    def trainer(params, *args, **kwargs):
        seen["start"] = {k: p.data().asnumpy().copy() for k, p in seen["net"]._collect_params_with_prefix().items()}
        return real(params, *args, **kwargs)
    real_get = recipe.get_model
    monkeypatch.setattr(recipe, "get_model", lambda *a, **k: seen.setdefault("net", real_get(*a, **k)))
    monkeypatch.setattr(recipe, "DistributedTrainer", trainer)
    recipe.train_classification({"model": name, "dataset": "folder", "data_dir": images, "image_size": 32,
                                 "epochs": 1, "batch_size": 4, "warmup_epochs": 0, "progress": False,
                                 "out": str(tmp_path / "o"), "use_pretrained": True, "pretrained_root": str(root),
                                 "pretrained_tag": sha[:8]}, LocalCommunicator(), log=lambda m: None)
    file = {k: v.asnumpy() for k, v in mx.nd.load(str(path)).items()}
    head = [k for k in file if k.startswith("output.")]
    assert head and set(seen["start"]) == set(file)
    for k in file:
        if k not in head:
            assert np.array_equal(seen["start"][k], file[k]), k
    scores = [k for k in head if file[k].shape[0] == 1000]   # the class-score convolution's weight and bias
    assert len(scores) == 2 and all(seen["start"][k].shape[0] == 3 for k in scores)
    assert not seen["start"][[k for k in scores if k.endswith("bias")][0]].any()   # fresh: a zero bias
