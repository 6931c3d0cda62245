"""The Keras object model over the pure core: ports of the Keras developer-guide patterns.

Each model is written as in the Keras guides (subclassing ``Layer``/``Model``, ``add_weight``,
``add_loss``, ``GradientTape`` over ``trainable_variables``, masking, freezing), run on every
backend, and checked against an independent reference: NumPy float64, or Keras 3 itself
(torch backend) given the same weights through ``get_weights``/``set_weights``.
"""

from __future__ import annotations

import os

import numpy as np
import optree
import pytest

import ember
from ember import layers, ops
from tests.helpers import needs, optional_import
from tests.tolerances import FLOAT32_PAIR

os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is imported (the reference)
keras = optional_import("keras")  # None on a core-only install: the comparisons with Keras skip

RTOL = 1e-5  # float32 results against float64 / Keras references on a few dozen terms
ATOL = 1e-6


def _np(x):
    return np.asarray(ops.to_numpy(x._native if hasattr(x, "_native") else x), dtype=np.float64)


# --- the guide's layers, written as Keras users write them ------------------------------------
class Linear(layers.Layer):
    """The guide's first example: weights declared in __init__."""

    def __init__(self, units=32, input_dim=32, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.w = self.add_weight(shape=(input_dim, units), initializer="random_normal", trainable=True, name="w")
        self.b = self.add_weight(shape=(units,), initializer="zeros", trainable=True, name="b")

    def call(self, inputs):
        return ops.matmul(inputs, self.w) + self.b


class CustomDense(layers.Layer):
    """Weights declared in build from the input shape."""

    def __init__(self, units=32, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="random_normal",
                                      name="kernel", regularizer=ember.regularizers.L2(0.01))
        self.bias = self.add_weight(shape=(self.units,), initializer="zeros", name="bias")

    def call(self, inputs):
        return ops.matmul(inputs, self.kernel) + self.bias


class MLPBlock(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.linear_1 = CustomDense(8)
        self.linear_2 = CustomDense(1)

    def call(self, inputs):
        return self.linear_2(ops.nn.relu(self.linear_1(inputs)))


class Counter(layers.Layer):
    """A non-trainable weight updated in call (the guide's ComputeSum)."""

    def build(self, input_shape):
        self.total = self.add_weight(shape=(input_shape[-1],), initializer="zeros", trainable=False, name="total")

    def call(self, inputs):
        self.total.assign_add(ops.sum(inputs, axis=0))
        return inputs


class Sampling(layers.Layer):
    def __init__(self, seed=0, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed

    def call(self, inputs):
        z_mean, z_log_var = inputs
        epsilon = ops.random.normal(ops.shape(z_mean), seed=self.seed)
        return z_mean + ops.exp(0.5 * z_log_var) * epsilon


class VAE(ember.Model):
    def __init__(self, original_dim=6, latent_dim=2, **kwargs):
        super().__init__(**kwargs)
        self.original_dim = original_dim
        self.proj = layers.Dense(8, activation="relu")
        self.dense_mean = layers.Dense(latent_dim)
        self.dense_log_var = layers.Dense(latent_dim)
        self.sampling = Sampling()
        self.decoder = [layers.Dense(8, activation="relu"), layers.Dense(original_dim, activation="sigmoid")]

    def call(self, inputs):
        x = self.proj(inputs)
        z_mean, z_log_var = self.dense_mean(x), self.dense_log_var(x)
        z = self.sampling((z_mean, z_log_var))
        for layer in self.decoder:
            z = layer(z)
        self.add_loss(-0.5 * ops.mean(z_log_var - ops.square(z_mean) - ops.exp(z_log_var) + 1))
        return z


class MaskReader(layers.Layer):
    """Returns the mask it receives (as float) so a test can read it."""

    supports_masking = True

    def call(self, inputs, mask=None):
        if mask is None:
            return ops.zeros(ops.shape(inputs)[:-1])
        return ops.cast(mask, "float32")


def _data(shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


# --- subclassed layers --------------------------------------------------------------------------
@needs("keras")
def test_linear_with_add_weight_matches_keras(backend):
    layer = Linear(4, 3, name="linear")
    x = _data((5, 3))
    y = layer(x)
    reference = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4)])
    reference.set_weights(layer.get_weights())
    np.testing.assert_allclose(_np(y), reference(x).detach().cpu().numpy(), rtol=RTOL, atol=ATOL)
    assert [w.path for w in layer.weights] == ["w", "b"]
    w, b = (np.asarray(v, np.float64) for v in layer.get_weights())
    np.testing.assert_allclose(_np(y), x.astype(np.float64) @ w + b, rtol=RTOL, atol=ATOL)


def test_subclass_is_frozen_after_init_and_refuses_arrays():
    layer = Linear(2, 2)
    with pytest.raises(AttributeError, match="immutable once constructed"):
        layer.units = 3

    class Bad(layers.Layer):
        def __init__(self):
            super().__init__()
            self.table = np.zeros(3)

        def call(self, inputs):
            return inputs

    with pytest.raises(TypeError, match="add_weight"):
        Bad()


def test_add_weight_outside_init_or_build_is_refused(backend):
    layer = Linear(2, 2)
    layer(_data((1, 2)))
    with pytest.raises(RuntimeError, match="__init__ or build"):
        layer.add_weight(shape=(2,))
    with pytest.raises(RuntimeError, match="weight_specs"):
        layers.Dense(2).add_weight(shape=(2,))


def test_automatic_config_round_trips():
    layer = CustomDense(7, name="cd", trainable=False)
    config = layer.get_config()
    assert config == {"name": "cd", "trainable": False, "dtype": None, "units": 7}
    clone = CustomDense.from_config(config)
    assert clone.units == 7 and clone.name == "cd" and clone.trainable is False


def test_output_shape_is_inferred_and_the_layer_works_in_a_functional_model(backend):
    inputs = ember.Input((None, 5))
    outputs = CustomDense(3, name="cd")(inputs)
    assert outputs.shape == (None, None, 3)
    model = ember.Model(inputs, outputs)
    x = _data((2, 4, 5))
    kernel, bias = (np.asarray(v, np.float64) for v in model.get_layer("cd").get_weights())
    np.testing.assert_allclose(_np(model(x)), x.astype(np.float64) @ kernel + bias, rtol=RTOL, atol=ATOL)


def test_nested_sublayers_have_structural_keys_and_reproducible_weights(backend):
    first = MLPBlock(name="block_a")
    second = MLPBlock(name="block_b")
    state_a = first.build((None, 4), seed=3)
    ember.layers.Dense(5)  # anything created in between must not matter
    state_b = second.build((None, 4), seed=3)
    assert list(state_a["params"]) == ["linear_1", "linear_2"] == list(state_b["params"])
    for a, b in zip(optree.tree_leaves(state_a), optree.tree_leaves(state_b)):
        np.testing.assert_array_equal(ops.to_numpy(a), ops.to_numpy(b))


@needs("keras")
def test_mlp_block_matches_keras_and_reports_weight_penalties(backend):
    block = MLPBlock()
    x = _data((3, 4))
    y = block(x)
    assert [w.path for w in block.weights] == ["linear_1/kernel", "linear_1/bias", "linear_2/kernel", "linear_2/bias"]
    reference = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
    reference.set_weights(block.get_weights())
    np.testing.assert_allclose(_np(y), reference(x).detach().cpu().numpy(), rtol=RTOL, atol=ATOL)
    kernels = [np.asarray(w, np.float64) for w in block.get_weights()[0::2]]
    expected = sum(0.01 * float(np.sum(k ** 2)) for k in kernels)
    assert sum(float(_np(v)) for v in block.losses) == pytest.approx(expected, rel=RTOL)


def test_non_trainable_weight_assigned_in_call(backend):
    counter = Counter()
    counter(np.ones((2, 3), "float32"))
    counter(np.ones((1, 3), "float32"))
    assert counter.non_trainable_weights[0].numpy().tolist() == [3.0, 3.0, 3.0]
    assert counter.trainable_weights == []


# --- variables, the weights API and custom loops -------------------------------------------------
def _sequential():
    return ember.Sequential([ember.Input((4,)), layers.Dense(3, activation="tanh", name="d1"),
                             layers.Dense(1, name="d2")], name="net")


def test_weights_exist_after_construction_and_set_weights_validates(backend):
    model = _sequential()
    assert [w.path for w in model.weights] == ["d1/kernel", "d1/bias", "d2/kernel", "d2/bias"]
    assert model.count_params() == 4 * 3 + 3 + 3 + 1
    before = model.get_weights()
    with pytest.raises(ValueError, match="expected 4 arrays"):
        model.set_weights(before[:3])
    with pytest.raises(ValueError, match="shape"):
        model.get_layer("d2").set_weights([np.zeros((2, 1), "float32"), np.zeros((1,), "float32")])
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    model.layers[1].set_weights([np.full((3, 1), 2.0, "float32"), np.ones((1,), "float32")])
    assert model.get_weights()[2].ravel().tolist() == [2.0, 2.0, 2.0]
    variable = model.weights[3]
    variable.assign(np.array([5.0], "float32"))
    variable.assign_add(np.array([1.0], "float32"))
    assert float(model.get_layer("d2").get_weights()[1][0]) == 6.0
    with pytest.raises(ValueError, match="assign expects shape"):
        variable.assign(np.zeros((2,), "float32"))


def test_custom_training_loop_with_gradient_tape_matches_float64(backend):
    model = _sequential()
    x, y = _data((8, 4), 1), _data((8, 1), 2)
    w1, b1, w2, b2 = (np.asarray(v, np.float64) for v in model.get_weights())
    optimizer = ember.optimizers.SGD(0.1)
    with ember.GradientTape() as tape:
        prediction = model(x)
        loss = ops.mean(ops.square(ops.subtract(prediction, ops.convert_to_tensor(y))))
    grads = tape.gradient(loss, model.trainable_variables)
    # float64 reference by hand: d/dparams of mean((tanh(x w1 + b1) w2 + b2 - y)^2)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    h = np.tanh(x64 @ w1 + b1)
    r = 2.0 * (h @ w2 + b2 - y64) / len(x64)
    dh = (r @ w2.T) * (1 - h ** 2)
    expected = [x64.T @ dh, dh.sum(0), h.T @ r, r.sum(0)]
    for grad, reference in zip(grads, expected):
        np.testing.assert_allclose(_np(grad), reference, rtol=1e-4, atol=1e-6)  # float32 backprop through tanh
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    for value, start, reference in zip(model.get_weights(), (w1, b1, w2, b2), expected):
        # value = start - 0.1 g: the gradient's bound above times 0.1 (1e-5 |g| + 1e-7) is within 1e-4 |value|
        # while |g| <= 10 |value| (the biases start at 0: value = -0.1 g there), plus one rounding u |value|
        np.testing.assert_allclose(np.asarray(value, np.float64), start - 0.1 * reference, rtol=1e-4, atol=1e-6)
    assert int(ops.to_numpy(optimizer.iterations)) == 1


def test_tape_without_watch_accessed_variables_does_not_watch(backend):
    model = _sequential()
    with ember.GradientTape(watch_accessed_variables=False) as tape:
        loss = ops.sum(model(_data((2, 4))))
    assert tape.gradient(loss, model.trainable_variables) == [None] * 4


# --- subclassed models ----------------------------------------------------------------------------
def test_vae_subclassed_model_trains_with_add_loss(backend):
    ember.initializers.set_seed(0)
    vae = VAE(name="vae")
    x = np.random.default_rng(0).random((32, 6)).astype("float32")
    outputs = vae(x[:4])
    assert ops.shape(outputs) == (4, 6)
    assert len(vae.losses) == 1 and float(_np(vae.losses[0])) > 0
    assert [w.path for w in vae.weights][:2] == ["proj/kernel", "proj/bias"]
    assert [w.path for w in vae.weights][-2:] == ["decoder_1/kernel", "decoder_1/bias"]
    before = vae.get_weights()
    vae.compile(optimizer=ember.optimizers.Adam(1e-2), loss="mse")
    history = vae.fit(x, x, epochs=2, batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert any(not np.allclose(a, b) for a, b in zip(before, vae.get_weights()))
    # fit's loss includes the KL term: evaluate's loss is mse + kl
    mse = float(np.mean((vae.predict(x, verbose=0).astype(np.float64) - x) ** 2))
    assert vae.evaluate(x, x, verbose=0) > mse


def test_subclassed_model_fit_matches_the_same_functional_model(backend):
    class TwoDense(ember.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.hidden = layers.Dense(5, activation="relu")
            self.out = layers.Dense(1)

        def call(self, inputs):
            return self.out(self.hidden(inputs))

    x, y = _data((16, 3), 4), _data((16, 1), 5)
    subclassed = TwoDense()
    subclassed(x[:1])
    functional = ember.Sequential([ember.Input((3,)), layers.Dense(5, activation="relu"), layers.Dense(1)])
    functional.set_weights(subclassed.get_weights())
    for model in (subclassed, functional):
        model.compile(optimizer=ember.optimizers.SGD(0.05), loss="mse", seed=0)
        model.fit(x, y, epochs=2, batch_size=4, shuffle=False, verbose=0)
    for a, b in zip(subclassed.get_weights(), functional.get_weights()):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


# --- masks and freezing -------------------------------------------------------------------------------
def test_mask_from_embedding_passes_through_dense(backend):
    tokens = ember.Input((4,), dtype="int32")
    hidden = layers.Embedding(10, 3, mask_zero=True)(tokens)
    hidden = layers.Dense(2)(hidden)
    model = ember.Model(tokens, MaskReader()(hidden))
    batch = np.array([[1, 2, 0, 0], [3, 0, 0, 0]], "int32")
    assert _np(model(batch)).tolist() == (batch != 0).astype(float).tolist()


def test_freezing_a_base_model(backend):
    base = ember.Sequential([ember.Input((3,)), layers.Dense(4, activation="relu", name="base_dense")], name="base")
    inputs = ember.Input((3,))
    model = ember.Model(inputs, layers.Dense(1, name="head")(base(inputs)))
    base.trainable = False
    assert [w.path for w in model.trainable_weights] == ["head/kernel", "head/bias"]
    assert len(model.non_trainable_weights) == 2
    frozen = base.get_weights() if base.state is not None else model.get_layer("base").get_weights()
    model.compile(optimizer=ember.optimizers.SGD(0.1), loss="mse")
    head_before = model.get_layer("head").get_weights()
    model.fit(_data((8, 3)), _data((8, 1), 1), epochs=1, batch_size=4, verbose=0)
    for a, b in zip(frozen, model.get_layer("base").get_weights()):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(head_before[0], model.get_layer("head").get_weights()[0])
    with pytest.raises(TypeError, match="trainable must be a bool"):
        base.trainable = "no"


# --- construction parity, saving, nesting ----------------------------------------------------------
@ember.saving.register_serializable("tests_keras_object")
class TwoDense(ember.Model):
    def __init__(self, units=5, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.hidden = layers.Dense(units, activation="relu")
        self.out = layers.Dense(1)

    def call(self, inputs):
        return self.out(self.hidden(inputs))


def test_input_shape_keyword_on_the_first_layer_and_input_batch_shape(backend):
    model = ember.Sequential([layers.Dense(4, input_shape=(3,)), layers.Dense(1)])
    assert [w.shape for w in model.weights] == [(3, 4), (4,), (4, 1), (1,)]
    rebuilt = ember.Sequential.from_config(model.get_config())
    assert [w.shape for w in rebuilt.weights] == [(3, 4), (4,), (4, 1), (1,)]
    assert ember.Input(batch_shape=(8, 3)).shape == (8, 3)
    with pytest.raises(ValueError, match="batch_shape or shape"):
        ember.Input((3,), batch_shape=(None, 3))
    with pytest.raises(ValueError, match="input_shape must hold"):
        layers.Dense(2, input_shape=(-1,))


def test_summary_of_an_unbuilt_model_prints_what_is_known():
    lines = []
    ember.Sequential([layers.Dense(4, name="a"), layers.Dense(1, name="b")]).summary(print_fn=lines.append)
    assert any(line.startswith("a (Dense)") and "0 (unbuilt)" in line for line in lines)


def test_subclassed_model_saves_and_loads_by_class(backend, tmp_path):
    model = TwoDense(4, name="two")
    x = _data((2, 3))
    y = _np(model(x))
    lines = []
    model.summary(print_fn=lines.append)
    assert any("Total params: 21" in line for line in lines)  # 3*4+4 + 4*1+1
    model.save(tmp_path / "two.h5")
    loaded = ember.load_model(tmp_path / "two.h5")
    assert type(loaded) is TwoDense and loaded.units == 4
    np.testing.assert_array_equal(_np(loaded(x)), y)
    model.save_weights(tmp_path / "two.weights.h5")
    again = TwoDense(4)
    again(x)
    again.load_weights(tmp_path / "two.weights.h5")
    np.testing.assert_array_equal(_np(again(x)), y)


def test_nesting_subclassed_in_functional_and_functional_in_subclassed(backend):
    inputs = ember.Input((3,))
    inner = TwoDense(4, name="inner")
    outer = ember.Model(inputs, layers.Dense(2, name="top")(inner(inputs)))
    x = _data((2, 3))
    h1, b1, h2, b2, t, tb = (np.asarray(w, np.float64) for w in outer.get_weights())
    expected = (np.maximum(x @ h1 + b1, 0) @ h2 + b2) @ t + tb
    np.testing.assert_allclose(_np(outer(x)), expected, rtol=RTOL, atol=ATOL)

    class Wrapper(ember.Model):
        def __init__(self, body, **kwargs):
            super().__init__(**kwargs)
            self.body = body

        def call(self, inputs):
            return self.body(inputs) * 2.0

    body = ember.Sequential([ember.Input((3,)), layers.Dense(2, name="d")])
    wrapper = Wrapper(body)
    y = wrapper(x)
    kernel, bias = (np.asarray(w, np.float64) for w in wrapper.get_weights())
    np.testing.assert_allclose(_np(y), 2.0 * (x @ kernel + bias), rtol=RTOL, atol=ATOL)
    assert [w.path for w in wrapper.weights] == ["body/d/kernel", "body/d/bias"]


def test_same_definition_gives_same_keys_and_weights_whatever_was_created_before(backend, tmp_path):
    def make():
        inputs = ember.Input((3,))
        hidden = layers.Dense(4, activation="relu")(inputs)
        return ember.Model(inputs, layers.Dense(1)(hidden))

    first = make()
    first.build(seed=7)
    first.save_weights(tmp_path / "w.h5")
    for _ in range(3):
        layers.Dense(2)  # advance the global name counter
    second = make()
    second.build(seed=7)
    assert list(first.state["params"]) == list(second.state["params"]) == ["dense", "dense_1"]
    for a, b in zip(first.get_weights(), second.get_weights()):
        np.testing.assert_array_equal(a, b)
    third = make()
    third.build(seed=8)
    third.load_weights(tmp_path / "w.h5")
    for a, b in zip(first.get_weights(), third.get_weights()):
        np.testing.assert_array_equal(a, b)
    rebuilt = ember.Model.from_config(first.get_config())
    assert list(rebuilt.build(seed=0)["params"]) == ["dense", "dense_1"]


@needs("keras")
def test_count_params_counts_every_weight_as_keras(backend):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(4), layers.BatchNormalization()])
    reference = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.BatchNormalization()])
    assert model.count_params() == reference.count_params() == 3 * 4 + 4 + 4 * 4
    assert len(model.weights) == len(reference.weights) == 6
    assert [w.shape for w in model.non_trainable_weights] == [tuple(w.shape) for w in reference.non_trainable_weights]
    reference.set_weights(model.get_weights())
    x = _data((5, 3))
    np.testing.assert_allclose(_np(model(x)), reference(x, training=False).detach().cpu().numpy(), **FLOAT32_PAIR)


def test_keras_style_layer_build_then_custom_loop(backend):
    layer = CustomDense(2, name="cd")
    layer.build((None, 3))  # Keras: the weights exist after build
    assert [w.shape for w in layer.trainable_weights] == [(3, 2), (2,)]
    x = _data((4, 3))
    kernel, bias = (np.asarray(w, np.float64) for w in layer.get_weights())
    with ember.GradientTape() as tape:
        loss = ops.sum(layer(x))
    grad_kernel, grad_bias = tape.gradient(loss, layer.trainable_weights)
    # d/dW sum(xW + b) = x^T 1 (+ the L2 penalty is not in this loss); d/db = batch size
    np.testing.assert_allclose(_np(grad_kernel), x.astype(np.float64).sum(0)[:, None] * np.ones((1, 2)), rtol=RTOL)
    np.testing.assert_allclose(_np(grad_bias), [4.0, 4.0], rtol=RTOL)
    ember.optimizers.SGD(1.0).apply([grad_kernel, grad_bias], layer.trainable_weights)
    np.testing.assert_allclose(layer.get_weights()[1], bias - 4.0, rtol=RTOL)


def test_output_shape_inference_leaves_a_subclassed_model_unbuilt(backend):
    inner = TwoDense(3, name="probe_inner")
    inputs = ember.Input((2,))
    inner(inputs)  # infers the output shape by running call on placeholders
    assert inner.state is None and not inner.built


def test_add_weight_layer_trains_in_fit_like_dense(backend):
    class PlainDense(layers.Layer):  # CustomDense without the penalty, so both losses are the same
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
            self.bias = self.add_weight(shape=(self.units,), initializer="zeros", name="bias")

        def call(self, inputs):
            return ops.matmul(inputs, self.kernel) + self.bias

    x, y = _data((16, 3), 6), _data((16, 2), 7)
    custom = ember.Sequential([ember.Input((3,)), PlainDense(2)])
    builtin = ember.Sequential([ember.Input((3,)), layers.Dense(2)])
    builtin.set_weights(custom.get_weights())
    for model in (custom, builtin):
        model.compile(optimizer=ember.optimizers.Adam(0.01), loss="mse", seed=0)
        model.fit(x, y, epochs=3, batch_size=4, shuffle=False, verbose=0)
    for a, b in zip(custom.get_weights(), builtin.get_weights()):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
