"""The Trainer and the training API's semantics: multi-input/output, frozen layers,
regularization and constraints, purity of train_step, evaluate/predict/on_batch forms."""

from __future__ import annotations

import numpy as np

import ember
from ember import layers, ops
from tests.tolerances import FLOAT32, FLOAT32_PAIR


def _np(tree):
    return {k: {n: ops.to_numpy(v).copy() for n, v in layer.items()} for k, layer in tree.items()}


def _sce():
    return ember.losses.SparseCategoricalCrossentropy(from_logits=True)


def _log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


# ------------------------------------------------------------------------ multi-input/output
def _two_headed():
    a = ember.Input((4,), name="a")
    b = ember.Input((3,), name="b")
    h = layers.Dense(8, activation="relu", name="trunk")(layers.Concatenate(name="cat")([a, b]))
    cls = layers.Dense(3, name="cls")(h)
    reg = layers.Dense(1, name="reg")(h)
    model = ember.Model([a, b], [cls, reg], name="two_headed")
    model.build(seed=1)
    return model


def _two_headed_data(n=24):
    rng = np.random.default_rng(1)
    xa = rng.normal(size=(n, 4)).astype(np.float32)
    xb = rng.normal(size=(n, 3)).astype(np.float32)
    return xa, xb, rng.integers(0, 3, size=n), rng.normal(size=(n, 1)).astype(np.float32)


def test_multi_input_multi_output_losses_weights_metrics_and_logs(backend):
    model = _two_headed()
    model.compile(optimizer="sgd", loss={"cls": _sce(), "reg": "mse"}, loss_weights={"cls": 1.0, "reg": 0.5},
                  metrics={"cls": ["accuracy"], "reg": ["mae"]})
    xa, xb, yc, yr = _two_headed_data()
    history = model.fit({"a": xa, "b": xb}, {"cls": yc, "reg": yr}, batch_size=8, epochs=2, verbose=0)
    assert set(history.history) == {"loss", "cls_loss", "reg_loss", "cls_accuracy", "reg_mae"}
    assert model.metrics_names == ["loss", "cls_loss", "reg_loss", "cls_accuracy", "reg_mae"]
    result = model.evaluate([xa, xb], [yc, yr], batch_size=24, verbose=0, return_dict=True)
    # Independent reference from the predictions, in NumPy float64.
    cls, reg = model.predict([xa, xb], verbose=0)
    cls, reg = cls.astype(np.float64), reg.astype(np.float64)
    cls_loss = -_log_softmax(cls)[np.arange(len(yc)), yc].mean()
    reg_loss = np.mean((reg - yr) ** 2)
    np.testing.assert_allclose(result["cls_loss"], cls_loss, **FLOAT32)
    np.testing.assert_allclose(result["reg_loss"], reg_loss, **FLOAT32)
    np.testing.assert_allclose(result["loss"], cls_loss + 0.5 * reg_loss, **FLOAT32)
    np.testing.assert_allclose(result["cls_accuracy"], np.mean(cls.argmax(-1) == yc), **FLOAT32)
    np.testing.assert_allclose(result["reg_mae"], np.mean(np.abs(reg - yr)), **FLOAT32)
    values = model.evaluate([xa, xb], [yc, yr], batch_size=24, verbose=0)
    assert values == [result[name] for name in model.metrics_names]


def test_multi_output_list_losses_and_flat_metrics_apply_to_every_output():
    model = _two_headed()
    model.compile(optimizer="sgd", loss=[ember.losses.CategoricalCrossentropy(from_logits=True), "mse"],
                  metrics=["mae"])
    xa, xb, yc, yr = _two_headed_data()
    history = model.fit([xa, xb], [np.eye(3, dtype=np.float32)[yc], yr], epochs=1, verbose=0)
    assert set(history.history) == {"loss", "cls_loss", "reg_loss", "cls_mae", "reg_mae"}


def test_output_without_a_loss_gets_no_loss():
    model = _two_headed()
    model.compile(optimizer="sgd", loss={"reg": "mse"})
    xa, xb, _, yr = _two_headed_data()
    history = model.fit([xa, xb], {"reg": yr}, epochs=1, verbose=0)
    assert set(history.history) == {"loss", "reg_loss"}
    # exact: the total of one loss (weight 1) is that loss, averaged over the same batches
    np.testing.assert_array_equal(history.history["loss"], history.history["reg_loss"])


# --------------------------------------------------------------------- frozen / penalties
def test_frozen_layers_get_no_update(backend):
    model = ember.Sequential([ember.Input((4,)), layers.Dense(8, activation="relu", name="frozen", trainable=False),
                              layers.Dense(2, name="head")])
    model.build(seed=0)
    before = _np(model.state["params"])
    model.compile("adam", "mse")
    x = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
    model.fit(x, np.ones((16, 2), np.float32), epochs=3, verbose=0)
    after = _np(model.state["params"])
    for name in ("kernel", "bias"):
        np.testing.assert_array_equal(after["frozen"][name], before["frozen"][name])
    assert not np.allclose(after["head"]["kernel"], before["head"]["kernel"])
    assert "frozen" not in model._training.opt_state["momentum"]  # no optimizer slots for frozen params


def test_frozen_nested_model(backend):
    inner = ember.Sequential([ember.Input((4,)), layers.Dense(4, name="inner_dense")], name="inner", trainable=False)
    x_in = ember.Input((4,), name="x")
    model = ember.Model(x_in, layers.Dense(1, name="top")(inner(x_in)))
    model.build(seed=0)
    before = _np(model.state["params"]["inner"])
    model.compile("sgd", "mse")
    model.fit(np.ones((8, 4), np.float32), np.zeros((8, 1), np.float32), epochs=2, verbose=0)
    after = _np(model.state["params"]["inner"])
    np.testing.assert_array_equal(after["inner_dense"]["kernel"], before["inner_dense"]["kernel"])


def test_a_frozen_model_trains_nothing(backend):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(2, name="d")], trainable=False)
    model.build(seed=0)
    before = _np(model.state["params"])
    model.compile("adam", "mse")
    history = model.fit(np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32), epochs=2, verbose=0)
    assert history.history["loss"][0] == history.history["loss"][1] > 0
    np.testing.assert_array_equal(_np(model.state["params"])["d"]["kernel"], before["d"]["kernel"])


def test_regularization_and_activity_losses_are_added(backend):
    l2 = 0.01
    model = ember.Sequential([ember.Input((3,)),
                              layers.Dense(2, name="d", kernel_regularizer=ember.regularizers.L2(l2)),
                              layers.ActivityRegularization(l1=0.1, name="act")])
    model.build(seed=0)
    kernel = ops.to_numpy(model.state["params"]["d"]["kernel"]).astype(np.float64)
    bias = ops.to_numpy(model.state["params"]["d"]["bias"]).astype(np.float64)
    x = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    y = np.zeros((8, 2), np.float32)
    trainer = ember.Trainer(model, optimizer="sgd", loss="mse")
    _, logs = trainer.train_step(trainer.init_state(), (x, y))
    out = x.astype(np.float64) @ kernel + bias
    expected = np.mean(out ** 2) + l2 * np.sum(kernel ** 2) + 0.1 * np.sum(np.abs(out))
    np.testing.assert_allclose(float(ops.to_numpy(logs["loss"])), expected, **FLOAT32)


def test_constraints_are_applied_after_each_step(backend):
    model = ember.Sequential([ember.Input((3,)),
                              layers.Dense(4, name="d", kernel_constraint=ember.constraints.NonNeg())])
    model.build(seed=0)
    model.compile(ember.optimizers.SGD(1.0), "mse")
    x = np.random.default_rng(0).normal(size=(16, 3)).astype(np.float32)
    model.fit(x, -10 * np.ones((16, 4), np.float32), epochs=2, verbose=0)
    kernel = ops.to_numpy(model.state["params"]["d"]["kernel"])
    assert (kernel >= 0).all() and (kernel == 0).any()


# ------------------------------------------------------------------------------- the Trainer
def test_train_step_is_pure(backend):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(2, name="d")])
    model.build(seed=0)
    trainer = ember.Trainer(model, optimizer="adam", loss="mse", metrics=["mae"])
    state = trainer.init_state(seed=0)
    params_before = _np(state["model"]["params"])
    slots_before = _np(state["optimizer"]["momentum"])
    batch = (np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32))
    new, logs = trainer.train_step(state, batch)
    _, logs_again = trainer.train_step(state, batch)  # the same input state gives the same result
    np.testing.assert_array_equal(ops.to_numpy(logs["loss"]), ops.to_numpy(logs_again["loss"]))
    for k, layer in _np(state["model"]["params"]).items():
        for n, value in layer.items():
            np.testing.assert_array_equal(value, params_before[k][n])
    for k, layer in _np(state["optimizer"]["momentum"]).items():
        for n, value in layer.items():
            np.testing.assert_array_equal(value, slots_before[k][n])
    assert int(ops.to_numpy(state["optimizer"]["iterations"])) == 0
    assert int(ops.to_numpy(new["optimizer"]["iterations"])) == 1
    assert not np.allclose(ops.to_numpy(new["model"]["params"]["d"]["kernel"]), params_before["d"]["kernel"])
    assert sorted(logs) == ["loss", "mae"]
    assert not getattr(new["model"]["params"]["d"]["kernel"], "requires_grad", False)


def test_trainer_test_and_predict_steps(backend):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(2, name="d")])
    model.build(seed=0)
    trainer = ember.Trainer(model, optimizer="sgd", loss="mse")
    state = trainer.init_state()
    x = np.ones((4, 3), np.float32)
    y_pred = ops.to_numpy(trainer.predict_step(state, x))
    state, logs = trainer.test_step(state, (x, np.zeros((4, 2), np.float32)))
    np.testing.assert_allclose(float(ops.to_numpy(logs["loss"])), np.mean(y_pred.astype(np.float64) ** 2), **FLOAT32)


def test_evaluate_and_predict_forms():
    model = ember.Sequential([ember.Input((3,)), layers.Dense(2, name="d")])
    model.compile("sgd", "mse")
    x = np.random.default_rng(0).normal(size=(10, 3)).astype(np.float32)
    y = np.zeros((10, 2), np.float32)
    loss = model.evaluate(x, y, batch_size=4, verbose=0)
    assert isinstance(loss, float)
    predicted = model.predict(x, batch_size=4, verbose=0)
    assert isinstance(predicted, np.ndarray) and predicted.shape == (10, 2)
    np.testing.assert_allclose(loss, np.mean(predicted.astype(np.float64) ** 2), **FLOAT32)
    model.compile("sgd", "mse", metrics=["mae"])
    assert len(model.evaluate(x, y, verbose=0)) == 2


def test_predict_without_compile_builds_from_data():
    model = ember.Sequential([layers.Dense(2, name="d")])
    assert model.predict(np.ones((5, 3), np.float32), verbose=0).shape == (5, 2)
    assert model.state is not None


def test_train_on_batch_and_test_on_batch(backend):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(1, name="d")])
    model.build(seed=0)
    model.compile(ember.optimizers.SGD(0.1), "mse", metrics=["mae"])
    x = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    y = np.ones((8, 1), np.float32)
    first = model.train_on_batch(x, y, return_dict=True)
    second = model.train_on_batch(x, y, return_dict=True)
    assert second["loss"] < first["loss"]
    model.reset_metrics()
    third = model.train_on_batch(x, y)
    assert isinstance(third, list) and len(third) == 2
    assert int(ops.to_numpy(model._training.opt_state["iterations"])) == 3
    loss, mae = model.test_on_batch(x, y)
    predicted = ops.to_numpy(model.predict_on_batch(x)).astype(np.float64)
    np.testing.assert_allclose(loss, np.mean((predicted - 1) ** 2), **FLOAT32)
    np.testing.assert_allclose(mae, np.mean(np.abs(predicted - 1)), **FLOAT32)


def test_optimizer_state_carries_over_between_fits():
    model = ember.Sequential([ember.Input((3,)), layers.Dense(1, name="d")])
    model.compile("adam", "mse")
    x, y = np.ones((8, 3), np.float32), np.ones((8, 1), np.float32)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    assert int(ops.to_numpy(model._training.opt_state["iterations"])) == 4
    assert model.optimizer is model._training.trainer.optimizer
    model.compile("adam", "mse")  # recompiling starts a fresh optimizer
    assert model._training.opt_state is None


def test_sample_weight_and_class_weight(backend):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(3, name="d")])
    model.build(seed=0)
    model.compile("sgd", _sce(), weighted_metrics=["accuracy"])
    x = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2])
    weights = np.array([2.0, 1.0, 0.0, 2.0, 1.0, 0.0], np.float32)
    by_sample = model.evaluate(x, y, sample_weight=weights, verbose=0, return_dict=True)
    logits = ops.to_numpy(model.predict_on_batch(x)).astype(np.float64)
    per_sample = -_log_softmax(logits)[np.arange(6), y]
    np.testing.assert_allclose(by_sample["loss"], np.sum(per_sample * weights) / 6, **FLOAT32)
    np.testing.assert_allclose(by_sample["accuracy"],
                               np.sum((logits.argmax(-1) == y) * weights) / weights.sum(), **FLOAT32)
    trainer = model._training.trainer
    state = trainer.init_state()
    a, _ = trainer.train_step(state, (x, y, weights))
    model2 = model  # class_weight {0: 2, 1: 1, 2: 0} gives the same per-sample weights
    model2.fit(x, y, class_weight={0: 2.0, 1: 1.0, 2: 0.0}, batch_size=6, epochs=1, shuffle=False, verbose=0)
    # fit's step against the trainer's: two implementations of one SGD step
    np.testing.assert_allclose(ops.to_numpy(model2.state["params"]["d"]["kernel"]),
                               ops.to_numpy(a["model"]["params"]["d"]["kernel"]), **FLOAT32_PAIR)
