"""Bad input to compile/fit/evaluate: clear errors, and the model handle left as it was."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import callbacks, layers, ops


def _model(seed=0):
    model = ember.Sequential([ember.Input((4,)), layers.Dense(8, activation="relu", name="hidden"),
                              layers.Dense(3, name="logits")])
    model.build(seed=seed)
    return model


def _snapshot(model):
    return {k: {n: ops.to_numpy(v).copy() for n, v in layer.items()} for k, layer in model.state["params"].items()}


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        for n in a[k]:
            np.testing.assert_array_equal(a[k][n], b[k][n])


def _data(n=16):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 4)).astype(np.float32), rng.integers(0, 3, size=n)


def test_fit_before_compile(backend):
    model = _model()
    before = _snapshot(model)
    x, y = _data()
    with pytest.raises(ValueError, match="compile"):
        model.fit(x, y, verbose=0)
    with pytest.raises(ValueError, match="compile"):
        model.evaluate(x, y, verbose=0)
    with pytest.raises(ValueError, match="compile"):
        model.train_on_batch(x, y)
    _assert_same(before, _snapshot(model))


def test_fit_before_compile_leaves_an_unbuilt_model_unbuilt():
    model = ember.Sequential([layers.Dense(2)])
    with pytest.raises(ValueError, match="compile"):
        model.fit(np.zeros((4, 3)), np.zeros((4, 2)), verbose=0)
    assert model.state is None


def test_x_and_y_of_different_lengths(backend):
    model = _model()
    model.compile("sgd", "sparse_categorical_crossentropy")
    before = _snapshot(model)
    x, y = _data()
    with pytest.raises(ValueError, match=r"cardinality.*x sizes: 16.*y sizes: 12"):
        model.fit(x, y[:12], verbose=0)
    with pytest.raises(ValueError, match="sample_weight sizes: 5"):
        model.fit(x, y, sample_weight=np.ones(5), verbose=0)
    _assert_same(before, _snapshot(model))
    assert model._training.opt_state is None


def test_labels_of_the_wrong_shape_for_the_loss(backend):
    model = _model()
    model.compile("adam", ember.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = _data()
    model.fit(x, y, epochs=1, verbose=0)  # a first fit succeeds: optimizer state exists
    before, opt_before = _snapshot(model), model._training.opt_state
    with pytest.raises(ValueError, match=r"sparse_categorical_crossentropy.*shape"):
        model.fit(x, np.zeros((16, 3), dtype=np.int64), verbose=0)
    _assert_same(before, _snapshot(model))
    assert model._training.opt_state is opt_before


def test_one_hot_labels_of_the_wrong_width(backend):
    model = _model()
    model.compile("adam", ember.losses.CategoricalCrossentropy(from_logits=True))
    before = _snapshot(model)
    x, _ = _data()
    with pytest.raises(ValueError, match="categorical_crossentropy"):
        model.fit(x, np.eye(5, dtype=np.float32)[np.zeros(16, dtype=int)], verbose=0)
    _assert_same(before, _snapshot(model))


def test_labels_of_the_wrong_dtype_for_the_loss(backend):
    model = _model()
    model.compile("adam", ember.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = _snapshot(model)
    x, _ = _data()
    with pytest.raises(ValueError, match="integer class indices"):
        model.fit(x, np.full(16, 0.5, dtype=np.float32), verbose=0)
    with pytest.raises(ValueError, match=r"class indices must be in \[0, 3\)"):
        model.fit(x, np.full(16, 7, dtype=np.int64), verbose=0)
    with pytest.raises(ValueError, match=r"class indices must be in \[0, 3\)"):
        model.evaluate(x, np.full(16, -1, dtype=np.int64), verbose=0)
    _assert_same(before, _snapshot(model))


@pytest.mark.parametrize("argument,value,valid", [
    ("optimizer", "adamm", "adam"),
    ("loss", "mean_squarred_error", "mean_squared_error"),
    ("metrics", ["acuracy"], "accuracy"),
])
def test_unknown_names_list_the_valid_ones(argument, value, valid):
    model = _model()
    kwargs = {"optimizer": "sgd", "loss": "mse"}
    kwargs[argument] = value
    with pytest.raises(ValueError) as info:
        model.compile(**kwargs)
    assert repr(value if isinstance(value, str) else value[0]) in str(info.value)
    assert valid in str(info.value)
    assert not model.compiled


def test_losses_and_metrics_that_do_not_match_the_outputs():
    model = _model()
    with pytest.raises(ValueError, match="unknown output"):
        model.compile("sgd", loss={"nope": "mse"})
    with pytest.raises(ValueError, match="2 entries"):
        model.compile("sgd", loss=["mse", "mae"])


def test_bad_fit_arguments():
    model = _model()
    model.compile("sgd", "sparse_categorical_crossentropy")
    x, y = _data()
    for kwargs, message in [({"epochs": -1}, "epochs"), ({"batch_size": 0}, "batch_size"),
                            ({"verbose": 3}, "verbose"), ({"validation_split": 1.5}, "validation_split"),
                            ({"shuffle": "yes"}, "shuffle"), ({"steps_per_epoch": 0}, "steps_per_epoch"),
                            ({"validation_freq": 0}, "validation_freq"), ({"class_weight": {-1: 1.0}}, "class_weight")]:
        with pytest.raises(ValueError, match=message):
            model.fit(x, y, **kwargs)
    with pytest.raises(ValueError, match="only supported for array data"):
        model.fit(iter([(x, y)]), validation_split=0.5, verbose=0)
    with pytest.raises(ValueError, match="must not be given"):
        model.fit(iter([(x, y)]), y, verbose=0)
    with pytest.raises(TypeError, match="x must be arrays"):
        model.fit(object(), verbose=0)
    with pytest.raises(ValueError, match="batch dimension"):
        model.fit(3, y, verbose=0)


def test_no_loss_to_compute():
    model = _model()
    model.compile("sgd")
    x, y = _data()
    with pytest.raises(ValueError, match="No loss to compute"):
        model.fit(x, y, verbose=0)


def test_nan_loss_terminate_on_nan_stops_says_where_and_restores(backend, capsys):
    x, y = _data(16)
    x[9] = np.nan  # batch 2 (0-based) of size 4: the third step
    model = _model()
    model.compile("sgd", ember.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0,
                        callbacks=[callbacks.TerminateOnNaN()])
    out = capsys.readouterr().out
    assert "invalid loss (nan) at epoch 1, batch 2 (training step 3)" in out
    assert history.epoch == [0]
    # The weights are those after the two good steps: the same as training on those batches alone.
    reference = _model()
    reference.compile("sgd", ember.losses.SparseCategoricalCrossentropy(from_logits=True))
    reference.fit(x[:8], y[:8], batch_size=4, epochs=1, shuffle=False, verbose=0)
    _assert_same(_snapshot(reference), _snapshot(model))
    assert int(ops.to_numpy(model._training.opt_state["iterations"])) == 2


def test_steps_per_execution_other_than_one_is_refused_with_the_alternative():
    ember.set_backend("numpy")
    model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    with pytest.raises(NotImplementedError, match=r"steps_per_execution=4 is not supported.*use 1"):
        model.compile(optimizer="sgd", loss="mse", steps_per_execution=4)
    with pytest.raises(ValueError, match="before compile|compile"):  # the failed compile left nothing behind
        model.fit(np.zeros((4, 2), "float32"), np.zeros((4, 1), "float32"), verbose=0)
