"""``ember.config``, ``ember.backend`` and ``ember.tree``: Keras's global settings act where Keras's do,
and the tree utilities give keras.tree's results (Keras 3 itself is the reference)."""

from __future__ import annotations

import logging
import math
import os

import numpy as np
import pytest

import ember
from ember import backend as K
from ember import config, layers, tree
from tests.helpers import needs, optional_import
from tests.tolerances import FLOAT32

os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is imported (the reference)
keras = optional_import("keras")  # None on a core-only install: the comparisons with Keras skip


@pytest.fixture(autouse=True)
def _restore_settings():
    """Every test leaves the process-wide settings as it found them."""
    saved = (config.epsilon(), config.image_data_format(), config.max_epochs(), config.max_steps_per_epoch(),
             config.is_interactive_logging_enabled(), config.is_flash_attention_enabled())
    yield
    config.set_epsilon(saved[0])
    config.set_image_data_format(saved[1])
    config.set_max_epochs(saved[2])
    config.set_max_steps_per_epoch(saved[3])
    (config.enable_interactive_logging if saved[4] else config.disable_interactive_logging)()
    ember.global_settings.set_flash_attention(saved[5])


# --- settings that act ------------------------------------------------------------------------------
def test_set_epsilon_changes_the_clipping_of_losses(backend):
    y_true, y_pred = np.array([[1.0]], "float32"), np.array([[0.0]], "float32")
    loss = ember.losses.BinaryCrossentropy()
    # p = 0 is clipped to epsilon: the loss is -log(epsilon) (float32 log: FLOAT32).
    np.testing.assert_allclose(float(loss(y_true, y_pred)), -math.log(1e-7), **FLOAT32)
    config.set_epsilon(1e-3)
    np.testing.assert_allclose(float(loss(y_true, y_pred)), -math.log(1e-3), **FLOAT32)


def test_set_image_data_format_is_the_default_of_layers_made_after(backend):
    config.set_image_data_format("channels_first")
    conv = layers.Conv2D(2, 3)
    assert conv.data_format == "channels_first"
    assert layers.Conv2D(2, 3, data_format="channels_last").data_format == "channels_last"
    out = conv(np.zeros((1, 3, 8, 8), "float32"))
    assert tuple(ember.ops.shape(out)) == (1, 2, 6, 6)


def _count_steps(**fit_kwargs):
    steps = []
    callback = ember.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: steps.append(batch))
    model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    model.compile("sgd", "mse")
    history = model.fit(np.ones((40, 2), "float32"), np.ones((40, 1), "float32"), batch_size=4, verbose=0,
                        callbacks=[callback], **fit_kwargs)
    return len(history.history["loss"]), len(steps)


def test_max_epochs_and_max_steps_per_epoch_cap_every_fit(backend):
    assert _count_steps(epochs=3) == (3, 30)
    config.set_max_epochs(2)
    config.set_max_steps_per_epoch(4)
    assert _count_steps(epochs=3) == (2, 8)
    config.set_max_epochs(None)
    config.set_max_steps_per_epoch(None)
    assert _count_steps(epochs=1) == (1, 10)


def test_disabled_interactive_logging_sends_progress_to_the_logger(backend, caplog, capsys):
    config.disable_interactive_logging()
    model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    model.compile("sgd", "mse")
    with caplog.at_level(logging.INFO, logger="ember"):
        model.fit(np.ones((8, 2), "float32"), np.ones((8, 1), "float32"), epochs=1, batch_size=4, verbose=1)
    assert "loss" in caplog.text
    assert "loss" not in capsys.readouterr().out
    assert ember.utils.is_interactive_logging_enabled() is False


@pytest.mark.parametrize("call, value", [
    (config.set_epsilon, 0.0), (config.set_epsilon, "1e-7"), (config.set_image_data_format, "nhwc"),
    (config.set_max_epochs, 0), (config.set_max_steps_per_epoch, 1.5),
])
def test_bad_settings_are_refused_and_change_nothing(call, value):
    before = (config.epsilon(), config.image_data_format(), config.max_epochs(), config.max_steps_per_epoch())
    with pytest.raises(ValueError, match="expected"):
        call(value)
    assert (config.epsilon(), config.image_data_format(), config.max_epochs(), config.max_steps_per_epoch()) == before


def test_backend_names(backend):
    assert config.backend() == K.backend() == backend
    layers.clear_session()
    layers.Dense(1)
    assert K.get_uid("dense") == 2  # after one Dense, as in Keras
    assert layers.Dense(1).name == "dense_2"
    assert K.is_keras_tensor(ember.Input((2,))) and not K.is_keras_tensor(np.zeros(2))
    assert K.is_float_dtype("bfloat16") and K.is_int_dtype("uint8") and not K.is_int_dtype("float32")


def test_top_level_names_are_the_classes_users_subclass():
    assert ember.Layer is layers.Layer and ember.Loss is ember.losses.Loss and ember.Metric is ember.metrics.Metric
    assert ember.Optimizer is ember.optimizers.Optimizer and ember.KerasTensor is type(ember.Input((1,)))
    assert ember.version() == ember.__version__


# --- ember.tree against keras.tree ---------------------------------------------------------------------
STRUCTURES = [
    [1, (2, 3), {"b": 4, "a": [5, None]}],
    {"x": (1.0, [2.0]), "y": None},
    (1,),
    7,
]


@needs("keras")
@pytest.mark.parametrize("structure", STRUCTURES)
def test_tree_matches_keras_tree(structure):
    assert tree.flatten(structure) == keras.tree.flatten(structure)
    assert tree.flatten_with_path(structure) == keras.tree.flatten_with_path(structure)
    assert tree.is_nested(structure) == keras.tree.is_nested(structure)
    assert tree.lists_to_tuples(structure) == keras.tree.lists_to_tuples(structure)

    def double(v):
        return None if v is None else v * 2

    assert tree.map_structure(double, structure) == keras.tree.map_structure(double, structure)
    flat = list(range(len(tree.flatten(structure))))
    assert tree.pack_sequence_as(structure, flat) == keras.tree.pack_sequence_as(structure, flat)
    seen, keras_seen = [], []
    assert tree.traverse(seen.append, structure) == keras.tree.traverse(keras_seen.append, structure)
    assert seen == keras_seen
    seen, keras_seen = [], []
    tree.traverse(seen.append, structure, top_down=False)
    keras.tree.traverse(keras_seen.append, structure, top_down=False)
    assert seen == keras_seen


@needs("keras")
def test_tree_structure_checks_and_shapes_match_keras():
    tree.assert_same_structure([1, (2,)], [3, (4,)])
    for library in (tree, keras.tree):  # optree names the node type it expected, in both
        with pytest.raises(ValueError, match="tuple"):
            library.assert_same_structure([1, (2,)], [3, 4])
    with pytest.raises(ValueError, match="same paths"):
        tree.assert_same_paths({"a": 1}, {"b": 1})
    shapes = {"a": (None, 3), "b": [(2,), (4, 5)]}
    assert tree.map_shape_structure(len, shapes) == keras.tree.map_shape_structure(len, shapes)
    assert tree.map_structure_up_to([0, 0], len, [[1, 2], (3,)]) == keras.tree.map_structure_up_to(
        [0, 0], len, [[1, 2], (3,)])
    assert tree.traverse(lambda v: tree.MAP_TO_NONE if v == 2 else None, [1, 2]) == [1, None]
    with pytest.raises(ValueError, match="leaves"):
        tree.pack_sequence_as([0, 0], [1])
