"""``ember.applications`` against Keras 3's ``keras.applications`` (torch backend) as the oracle.

For each family Keras builds the model (``weights=None``, a small input, 10 classes, logits),
its batch-normalisation statistics and layer scales are set to random values (else they are
0/1/1e-6 and a wrong mapping could hide), Keras saves the weights, Ember builds its model with
``weights=<that file>`` on each backend, and both predict the same images. Parameter counts equal
Keras's for every constructor (the big ones only count: ResNet152, EfficientNetB7... are never
run). Bad arguments fail with errors that say what to do.

Cost: one Keras model and file per family (module-scoped), a one-image-pair forward per backend.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import ember
from ember import applications, ops
from ember.applications import convnext, densenet, imagenet_utils, resnet
from ember.saving import keras_format
from tests.tolerances import FLOAT32_PAIR

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")
keras_convnext = pytest.importorskip("keras.src.applications.convnext")  # Keras's builders, for small configurations
keras_densenet = pytest.importorskip("keras.src.applications.densenet")
keras_resnet = pytest.importorskip("keras.src.applications.resnet")
# Keras's torch backend converts its predictions with np.array(tensor), which NumPy 2 warns about (Keras's code)
pytestmark = pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword")

# Deep float32 networks: each output is a chain of up to L = 250 layers whose dot products have up to
# n = 4608 terms (a 3x3 convolution over 512 channels). Rounding errors are independent, so each side's
# relative error grows like sqrt(L * n) * u = sqrt(250 * 4608) * 6e-8 = 6.4e-5 (the worst case L * n * u
# would be vacuous); two float32 implementations -> 1.3e-4, with margin 1.5 -> 2e-4, relative to the
# largest logit (logits near zero cancel from terms of that size, hence the same atol scaled by it).
DEEP_RTOL = 2e-4

def _keras_resnet(preact):
    stack = keras_resnet.stack_residual_blocks_v2 if preact else keras_resnet.stack_residual_blocks_v1

    def stages(x):  # two stages of two blocks, 8 and 16 filters (ResNet50: four stages, 64..512 filters)
        x = stack(x, 8, 2, stride1=1 if not preact else 2, name="conv2")
        return stack(x, 16, 2, stride1=2 if not preact else 1, name="conv3")
    return lambda **kw: keras_resnet.ResNet(stages, preact, True, **kw)


def _ember_resnet(preact):
    stack = resnet.stack_v2 if preact else resnet.stack_v1

    def stages(x):
        x = stack(x, 8, 2, stride1=1 if not preact else 2, name="conv2")
        return stack(x, 16, 2, stride1=2 if not preact else 1, name="conv3")
    return lambda **kw: resnet.build_resnet("ResNet", stages, preact, True, kw["weights"], None, kw["input_shape"],
                                            None, kw["classes"], kw["classifier_activation"], "resnet")


def _keras(name):
    return lambda **kw: getattr(keras.applications, name)(**kw)


def _ember(name):
    return lambda **kw: getattr(applications, name)(**kw)


SMALL_DENSE_BLOCKS = (1, 2, 1, 1)  # DenseNet121: (6, 12, 24, 16)
SMALL_CONVNEXT = ((1, 1, 2, 1), (8, 16, 24, 32))  # ConvNeXtTiny: (3, 3, 9, 3), (96, 192, 384, 768)

# (id, Keras builder, Ember builder, input shape, input scale). The shared builders of the big families
# (ResNet V1/V2 blocks, DenseNet, ConvNeXt) run Keras's own code with fewer and narrower blocks; the others
# are the smallest member of their family. The input scale is the pixel range the family expects (255: it
# rescales inside). Xception and InceptionV3 have no smaller form: each runs on one backend (torch, NumPy).
ORACLE = [
    ("ResNetV1-blocks", _keras_resnet(False), _ember_resnet(False), (32, 32, 3), 1.0),
    ("ResNetV2-blocks", _keras_resnet(True), _ember_resnet(True), (32, 32, 3), 1.0),
    ("DenseNet-blocks", lambda **kw: keras_densenet.DenseNet(list(SMALL_DENSE_BLOCKS), **kw),
     lambda **kw: densenet.build_densenet("DenseNet", SMALL_DENSE_BLOCKS, True, kw["weights"], None,
                                          kw["input_shape"], None, kw["classes"], kw["classifier_activation"],
                                          "densenet"), (32, 32, 3), 1.0),
    ("ConvNeXt-blocks", lambda **kw: keras_convnext.ConvNeXt(*map(list, SMALL_CONVNEXT), **kw),
     lambda **kw: convnext.build_convnext("ConvNeXt", *SMALL_CONVNEXT, True, True, kw["weights"], None,
                                          kw["input_shape"], None, kw["classes"], kw["classifier_activation"],
                                          "convnext"), (32, 32, 3), 255.0),
    ("MobileNet", _keras("MobileNet"), _ember("MobileNet"), (32, 32, 3), 1.0),
    ("MobileNetV2", _keras("MobileNetV2"), _ember("MobileNetV2"), (32, 32, 3), 1.0),
    ("MobileNetV3Small", _keras("MobileNetV3Small"), _ember("MobileNetV3Small"), (32, 32, 3), 255.0),
    ("EfficientNetB0", _keras("EfficientNetB0"), _ember("EfficientNetB0"), (32, 32, 3), 255.0),
    ("EfficientNetV2B0", _keras("EfficientNetV2B0"), _ember("EfficientNetV2B0"), (32, 32, 3), 255.0),
]
XCEPTION = ("Xception", _keras("Xception"), _ember("Xception"), (71, 71, 3), 1.0)
INCEPTION_V3 = ("InceptionV3", _keras("InceptionV3"), _ember("InceptionV3"), (75, 75, 3), 1.0)
EXTRA = {"MobileNet": {"alpha": 0.25}, "MobileNetV2": {"alpha": 0.35}, "MobileNetV3Small": {"alpha": 0.75}}


def _randomise_statistics(model, rng):
    """Batch-norm moving statistics, EfficientNet's normalisation and ConvNeXt's layer scales away from
    their initial values (0, 1, 1e-6), where a wrong mapping could hide."""
    for layer in model._flatten_layers(include_self=False):
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.moving_mean.assign(rng.normal(0.0, 0.1, layer.moving_mean.shape).astype("float32"))
            layer.moving_variance.assign(rng.uniform(0.5, 1.5, layer.moving_variance.shape).astype("float32"))
        elif isinstance(layer, keras.layers.Normalization) and getattr(layer, "adapt_mean", None) is not None:
            layer.adapt_mean.assign(np.array([0.4, 0.5, 0.6], "float32"))
            layer.adapt_variance.assign(np.array([0.05, 0.06, 0.07], "float32"))
            layer.finalize_state()
    for variable in model.weights:
        if "layer_scale" in variable.path:
            variable.assign(rng.normal(0.0, 1.0, variable.shape).astype("float32"))


def _arguments(shape, extra=None):
    return {"weights": None, "input_shape": shape, "classes": 10, "classifier_activation": None, **(extra or {})}


@pytest.fixture(scope="module")
def keras_files(tmp_path_factory):
    """Per oracle case, made on first use: (weights file, images, Keras's outputs, Keras's parameter count)."""
    made = {}

    def make(case):
        name, keras_builder, _, shape, scale = case
        if name not in made:
            rng = np.random.default_rng(0)
            model = keras_builder(**_arguments(shape, EXTRA.get(name)))
            _randomise_statistics(model, rng)
            path = tmp_path_factory.mktemp(name) / "k.weights.h5"
            model.save_weights(path)
            images = (scale * rng.uniform(0.0, 1.0, (2, *shape))).astype("float32")
            made[name] = (path, images, np.asarray(model.predict(images, verbose=0)), model.count_params())
        return made[name]
    return make


def _check_oracle(case, keras_files):
    path, images, expected, count = keras_files(case)
    model = case[2](**{**_arguments(case[3], EXTRA.get(case[0])), "weights": str(path)})
    assert model.count_params() == count
    got = np.asarray(ops.to_numpy(model(images)))
    assert got.shape == expected.shape
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(got, expected, rtol=DEEP_RTOL, atol=DEEP_RTOL * scale)  # see DEEP_RTOL


@pytest.mark.parametrize("case", ORACLE, ids=[case[0] for case in ORACLE])
def test_keras_weights_give_keras_outputs(case, backend, keras_files):
    _check_oracle(case, keras_files)


def test_keras_xception_weights_give_keras_outputs(torch_backend, keras_files):
    _check_oracle(XCEPTION, keras_files)


def test_keras_inception_v3_weights_give_keras_outputs(keras_files):
    with ember.using_backend("numpy"):
        _check_oracle(INCEPTION_V3, keras_files)


# Keras 3.15's ``count_params()`` of each constructor with these arguments, weights=None, classes=10 and a
# 32x32x3 input (75x75x3 for Xception, InceptionV3 and InceptionResNetV2), recorded from Keras (building the
# big ones in Keras costs seconds each): the graphs Ember builds hold exactly Keras's weights. Ember builds
# them, never runs them.
KERAS_PARAMETER_COUNTS = [
    ("ResNet50", {}, 23608202),
    ("ResNet101", {}, 42678666),
    ("ResNet152", {}, 58391434),
    ("ResNet50V2", {}, 23585290),
    ("ResNet101V2", {}, 42647050),
    ("ResNet152V2", {}, 58352138),
    ("VGG16", {}, 33638218),
    ("VGG19", {}, 38947914),
    ("DenseNet121", {}, 7047754),
    ("DenseNet169", {}, 12659530),
    ("DenseNet201", {}, 18341194),
    ("MobileNet", {"alpha": 0.5, "depth_multiplier": 2}, 1651802),
    ("MobileNetV2", {"alpha": 1.3}, 3782698),
    ("MobileNetV3Large", {}, 4239242),
    ("MobileNetV3Small", {"minimalistic": True}, 1042098),
    ("EfficientNetB3", {}, 10798905),
    ("EfficientNetB7", {}, 64123297),
    ("EfficientNetV2B3", {}, 12945992),
    ("EfficientNetV2S", {}, 20344170),
    ("EfficientNetV2L", {}, 117759658),
    ("Xception", {}, 20881970),
    ("InceptionV3", {}, 21823274),
    ("InceptionResNetV2", {}, 54352106),
    ("ConvNeXtTiny", {}, 27827818),
    ("ConvNeXtSmall", {}, 49462378),
    ("ConvNeXtXLarge", {}, 348168458),
]


@pytest.mark.parametrize("name, extra, expected", KERAS_PARAMETER_COUNTS,
                         ids=[case[0] for case in KERAS_PARAMETER_COUNTS])
def test_parameter_counts_equal_keras(name, extra, expected):
    shape = (75, 75, 3) if name in ("Xception", "InceptionV3", "InceptionResNetV2") else (32, 32, 3)
    model = getattr(applications, name)(input_shape=shape, classes=10, **extra)
    assert model.state is None  # not built: weights=None draws them on first use
    assert model.count_params() == expected


def test_parameter_count_recorded_from_keras_still_holds():
    """The recorded counts come from this Keras: one cheap one is checked live."""
    name, extra, expected = KERAS_PARAMETER_COUNTS[14]
    assert getattr(keras.applications, name)(**_arguments((32, 32, 3), extra)).count_params() == expected


def test_keras_file_of_another_architecture_is_refused(tmp_path):
    model = keras.applications.MobileNet(**_arguments((32, 32, 3), {"alpha": 0.25}))
    model.save_weights(tmp_path / "m.weights.h5")
    model.save(tmp_path / "m.h5")
    other = {**_arguments((32, 32, 3), {"alpha": 0.5})}
    with pytest.raises(ValueError, match="do not match the model"):
        applications.MobileNet(**{**other, "weights": str(tmp_path / "m.weights.h5")})
    with pytest.raises(ValueError, match="do not match the model"):
        applications.MobileNet(**{**other, "weights": str(tmp_path / "m.h5")})
    with pytest.raises(ValueError, match="file has 55 layers with weights, the model 'mobilenetv2_1.00_32' has 105"):
        applications.MobileNetV2(**{**_arguments((32, 32, 3)), "weights": str(tmp_path / "m.h5")})


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_keras_model_files_load(tmp_path, suffix):
    """The weights of a whole model Keras saved load too: a ``.keras`` archive, or a legacy ``.h5`` file (the
    format of Keras's ImageNet files: layers matched by position). On the default backend: the loading is
    backend-independent host code, and every backend runs loaded weights in the oracle tests."""
    arguments = _arguments((32, 32, 3), {"alpha": 0.25})
    model = keras.applications.MobileNet(**arguments)
    _randomise_statistics(model, np.random.default_rng(1))
    model.save(tmp_path / f"m{suffix}")
    images = np.random.default_rng(1).uniform(-1.0, 1.0, (1, 32, 32, 3)).astype("float32")
    got = applications.MobileNet(**{**arguments, "weights": str(tmp_path / f"m{suffix}")})(images)
    np.testing.assert_allclose(np.asarray(ops.to_numpy(got)), model.predict(images, verbose=0), **FLOAT32_PAIR)


def test_keras_imagenet_statistics_add_keras_rescaling(tmp_path):
    """A file saved from Keras's ImageNet EfficientNet (std stored as variance) gets Keras's extra Rescaling."""
    model = applications.EfficientNetB0(**_arguments((32, 32, 3)))
    state = model.build(seed=0)
    normalization = next(key for key, value in state["buffers"].items() if "count" in value)
    state["buffers"][normalization]["variance"] = ops.convert_to_tensor(np.array([0.229, 0.224, 0.225], "float32"))
    model.state = state
    keras_format.save_keras_weights(model, tmp_path / "b0.weights.h5")
    loaded = applications.EfficientNetB0(**{**_arguments((32, 32, 3)), "weights": str(tmp_path / "b0.weights.h5")})
    rescaling = [layer for layer in loaded.layers if isinstance(layer, ember.layers.Rescaling)]
    assert len(rescaling) == 2 and len(loaded.layers) == len(model.layers) + 1
    assert rescaling[1].scale == pytest.approx([1 / np.sqrt(s) for s in (0.229, 0.224, 0.225)])  # same formula


def test_random_initialisation_builds_on_first_use(backend):
    model = applications.MobileNetV3Small(input_shape=(32, 32, 3), alpha=0.75, minimalistic=True, classes=3)
    probabilities = np.asarray(ops.to_numpy(model(np.zeros((2, 32, 32, 3), "float32"))))
    assert probabilities.shape == (2, 3)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, **FLOAT32_PAIR)


@pytest.mark.parametrize("pooling, shape", [(None, (None, 1, 1, 1280)), ("avg", (None, 1280)),
                                            ("max", (None, 1280))])
def test_pooling_without_top(pooling, shape):
    model = applications.MobileNetV2(include_top=False, input_shape=(32, 32, 3), pooling=pooling)
    assert model.output_shape == shape


def test_input_tensor_is_used():
    image = ember.Input((32, 32, 3), name="pixels")
    model = applications.DenseNet121(include_top=False, input_tensor=image, pooling="avg")
    assert model.inputs[0] is image and model.output_shape == (None, 1024)


def test_default_shapes_follow_keras():
    assert applications.ResNet50().input_shape == (None, 224, 224, 3)
    assert applications.Xception(include_top=False).input_shape == (None, None, None, 3)
    assert applications.MobileNetV2(input_shape=(96, 96, 3), include_top=False).name == "mobilenetv2_1.00_96"


def test_imagenet_weights_are_refused_with_the_way_to_get_a_file():
    with pytest.raises(ValueError, match=r"weights='imagenet'.*no network.*~/\.keras/models.*"
                                         r"save_weights\('resnet50\.weights\.h5'\)"):
        applications.ResNet50(weights="imagenet")


@pytest.mark.parametrize("arguments, message", [
    ({"weights": "no/such/file.weights.h5"}, "no such file"),
    ({"pooling": "mean", "include_top": False}, "pooling should be None, 'avg' or 'max'; received pooling='mean'"),
    ({"classes": 0}, "classes should be a positive integer"),
    ({"input_shape": (16, 16, 3)}, "at least 32x32"),
    ({"input_shape": (None, None, 3)}, "with include_top=True the input_shape must be static"),
    ({"input_shape": (32, 32)}, "three integers"),
])
def test_bad_arguments_are_refused(arguments, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        applications.ResNet50(**arguments)


def test_input_tensor_must_be_symbolic():
    with pytest.raises(TypeError, match="input_tensor should be a symbolic tensor"):
        applications.VGG16(include_top=False, input_tensor=np.zeros((1, 32, 32, 3)))


@pytest.mark.parametrize("mode", ["caffe", "tf", "torch"])
def test_preprocess_input_matches_keras(mode, backend):
    pixels = np.random.default_rng(2).uniform(0.0, 255.0, (2, 4, 4, 3)).astype("float32")
    expected = keras.applications.imagenet_utils.preprocess_input(pixels.copy(), mode=mode)
    host = imagenet_utils.preprocess_input(pixels, mode=mode)
    np.testing.assert_allclose(host, expected, **FLOAT32_PAIR)
    tensor = imagenet_utils.preprocess_input(ops.convert_to_tensor(pixels), mode=mode)
    np.testing.assert_allclose(np.asarray(ops.to_numpy(tensor)), expected, **FLOAT32_PAIR)
    channels_first = imagenet_utils.preprocess_input(pixels.transpose(0, 3, 1, 2), data_format="channels_first",
                                                     mode=mode)
    np.testing.assert_allclose(channels_first.transpose(0, 2, 3, 1), expected, **FLOAT32_PAIR)


@pytest.mark.parametrize("module", ["resnet", "resnet_v2", "vgg16", "vgg19", "mobilenet", "mobilenet_v2",
                                    "mobilenet_v3", "densenet", "efficientnet", "efficientnet_v2", "xception",
                                    "inception_v3", "inception_resnet_v2", "convnext"])
def test_family_preprocess_input_matches_keras(module):
    pixels = np.random.default_rng(3).uniform(0.0, 255.0, (1, 2, 2, 3)).astype("float32")
    expected = getattr(keras.applications, module).preprocess_input(pixels.copy())
    got = getattr(applications, module).preprocess_input(pixels.copy())
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected), **FLOAT32_PAIR)


def test_preprocess_input_refuses_unknown_mode():
    with pytest.raises(ValueError, match="mode should be one of"):
        imagenet_utils.preprocess_input(np.zeros((1, 2, 2, 3)), mode="keras")


def test_decode_predictions_reads_a_local_class_index(tmp_path):
    index = {str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}
    path = tmp_path / "imagenet_class_index.json"
    path.write_text(json.dumps(index))
    scores = np.zeros((2, 1000), "float32")
    scores[0, [5, 9]] = [0.7, 0.2]
    scores[1, 999] = 1.0
    decoded = applications.resnet.decode_predictions(scores, top=2, class_index=path)
    assert decoded[0] == [("n00000005", "class_5", pytest.approx(0.7)), ("n00000009", "class_9", pytest.approx(0.2))]
    assert decoded[1][0][:2] == ("n00000999", "class_999")


def test_decode_predictions_without_class_index_says_where_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # an empty cache
    with pytest.raises(FileNotFoundError, match=r"imagenet_class_index\.json.*no network calls.*class_index="):
        imagenet_utils.decode_predictions(np.zeros((1, 1000)))


def test_decode_predictions_refuses_wrong_shapes():
    with pytest.raises(ValueError, match=r"shape \(samples, 1000\).*\(1, 10\)"):
        imagenet_utils.decode_predictions(np.zeros((1, 10)), class_index={})
