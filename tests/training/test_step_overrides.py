"""Keras 3 step overrides: ``fit``/``evaluate``/``predict`` call a model's own ``train_step``,
``test_step`` and ``predict_step`` (issue 18 item 1), on every backend.

References: the built-in ``fit`` on the same weights and data (itself checked against torch and
NumPy float64 in test_fit_reference.py), NumPy arithmetic on the logs, and a GAN on scikit-learn's
digits whose losses and samples must move the way adversarial training moves them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import layers, ops
from tests.helpers import needs, optional_import
from tests.tolerances import FLOAT32, FLOAT32_PAIR

sk_datasets = optional_import("sklearn.datasets")  # the GAN's digits; None on a core-only install

RTOL = 1e-5  # float32: a few dozen Adam steps of a small MLP, same operations in both paths
ATOL = 1e-6


def _regression_data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5], [0.0]], "float32") + 0.1).astype("float32")
    return x, y


class StandardStep(ember.Model):
    """The Keras guide's train_step, doing what the built-in step does."""

    def train_step(self, data):
        x, y = data
        with ember.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def _mlp(cls, seed=1):
    inputs = ember.Input((4,))
    hidden = layers.Dense(8, activation="tanh", kernel_regularizer=ember.regularizers.L2(1e-3), name="hidden")(inputs)
    model = cls(inputs, layers.Dense(1, name="out")(hidden))
    model.build(seed=seed)
    return model


def test_custom_train_step_matches_built_in_fit(backend):
    x, y = _regression_data()
    custom, built_in = _mlp(StandardStep), _mlp(ember.Model)
    built_in.set_weights(custom.get_weights())
    histories = []
    for model in (custom, built_in):
        model.compile(optimizer=ember.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
        histories.append(model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0).history)
    for a, b in zip(custom.get_weights(), built_in.get_weights()):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    assert sorted(histories[0]) == sorted(histories[1]) == ["loss", "mae"]
    for key in ("loss", "mae"):
        np.testing.assert_allclose(histories[0][key], histories[1][key], rtol=RTOL)
    assert histories[0]["loss"][-1] < histories[0]["loss"][0]


def test_the_override_is_called_for_every_batch(backend):
    calls = []

    class Counting(StandardStep):
        def train_step(self, data):
            calls.append(ops.shape(data[0])[0])
            return super().train_step(data)

    x, y = _regression_data(40)
    model = _mlp(Counting)
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    assert calls == [16, 16, 8] * 2


def test_default_train_step_via_super_matches_built_in_fit(backend):
    class Super(ember.Model):
        def train_step(self, data):
            return super().train_step(data)

    x, y = _regression_data()
    custom, built_in = _mlp(Super), _mlp(ember.Model)
    built_in.set_weights(custom.get_weights())
    logs = []
    for model in (custom, built_in):
        model.compile(optimizer=ember.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
        logs.append(model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history)
    for a, b in zip(custom.get_weights(), built_in.get_weights()):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(logs[0]["loss"], logs[1]["loss"], rtol=RTOL)


def test_a_raising_train_step_propagates_from_fit_and_changes_nothing(backend):
    class Broken(ember.Model):
        def train_step(self, data):
            raise RuntimeError("probe reached")

    x, y = _regression_data(16)
    model = _mlp(Broken)
    model.compile(optimizer="adam", loss="mse")
    before = model.get_weights()
    with pytest.raises(RuntimeError, match="probe reached"):
        model.fit(x, y, epochs=1, verbose=0)
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("returned, named", [(None, "NoneType"), ([1.0, 2.0], "list"), ("loss", "str"),
                                              ({"loss": "high"}, "'loss' is str")])
def test_a_train_step_returning_something_else_than_a_dict_or_scalar_is_a_type_error(returned, named):
    ember.set_backend("numpy")

    class Odd(ember.Model):
        def train_step(self, data):
            return returned

    x, y = _regression_data(16)
    model = _mlp(Odd)
    model.compile(optimizer="adam", loss="mse")
    with pytest.raises(TypeError, match="train_step") as info:
        model.fit(x, y, epochs=1, verbose=0)
    assert named in str(info.value)


def test_a_scalar_is_logged_as_the_loss_and_an_override_may_skip_the_optimizer(backend):
    class NoUpdate(ember.Model):
        def train_step(self, data):
            x, y = data
            return self.compute_loss(y=y, y_pred=self(x))

    x, y = _regression_data(32)
    model = _mlp(NoUpdate)
    model.compile(optimizer="adam", loss="mse")
    before = model.get_weights()
    history = model.fit(x, y, batch_size=32, epochs=2, verbose=0)
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    h = np.tanh(x.astype(np.float64) @ before[0] + before[1])
    mse = np.mean((h @ before[2] + before[3] - y) ** 2) + 1e-3 * np.sum(before[0].astype(np.float64) ** 2)
    np.testing.assert_allclose(history.history["loss"], [mse, mse], **FLOAT32)


def test_test_step_and_predict_step_overrides(backend):
    class Scaled(StandardStep):
        def test_step(self, data):
            x, y = data
            error = ops.mean(ops.abs(ops.subtract(self(x), y)))
            return {"abs_error": error, "nested": {"twice": ops.multiply(error, 2.0)}}

        def predict_step(self, data):
            return {"doubled": ops.multiply(self(data), 2.0)}

    x, y = _regression_data(32)
    model = _mlp(Scaled)
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(x, y, batch_size=32, epochs=1, validation_data=(x, y), verbose=0)
    assert sorted(history.history) == ["loss", "val_abs_error", "val_twice"]
    expected = float(np.mean(np.abs(np.asarray(ops.to_numpy(model(x))) - y)))
    logs = model.evaluate(x, y, batch_size=32, verbose=0, return_dict=True)
    assert logs["abs_error"] == pytest.approx(expected, rel=FLOAT32["rtol"])  # a float32 mean of 32 terms
    assert logs["twice"] == pytest.approx(2 * expected, rel=FLOAT32["rtol"])
    assert model.evaluate(x, y, batch_size=32, verbose=0) == pytest.approx([expected, 2 * expected],
                                                                           rel=FLOAT32["rtol"])
    # batches of 10 and 5 against one of 32: the matmuls may take other kernels (FLOAT32_PAIR)
    predicted = model.predict(x, batch_size=10, verbose=0)
    np.testing.assert_allclose(predicted["doubled"], 2.0 * np.asarray(ops.to_numpy(model(x))), **FLOAT32_PAIR)
    on_batch = model.predict_on_batch(x[:5])
    np.testing.assert_allclose(on_batch["doubled"], predicted["doubled"][:5], **FLOAT32_PAIR)
    with pytest.raises(ValueError, match="predict_on_batch: training=True with an overridden predict_step"):
        model.predict_on_batch(x[:5], training=True)


def test_predict_on_batch_of_a_sequential_subclass_calls_its_predict_step(backend):
    class Rounded(ember.Sequential):
        def predict_step(self, data):
            return ops.round(self(data))

    model = Rounded([layers.Input((3,)), layers.Dense(2)])
    x = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    expected = np.round(np.asarray(ops.to_numpy(model(x))))
    np.testing.assert_array_equal(model.predict_on_batch(x), expected)  # exact: the same forward, rounded


def test_metrics_lists_the_loss_tracker_first_then_compiled_then_attribute_metrics():
    ember.set_backend("numpy")

    class WithTracker(ember.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = layers.Dense(1)
            self.extra = ember.metrics.Mean(name="extra")

        def call(self, inputs):
            return self.dense(inputs)

    model = WithTracker()
    assert [m.name for m in model.metrics] == ["extra"]
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    assert [m.name for m in model.metrics] == ["loss", "compile_metrics", "extra"]
    x, y = _regression_data(8)
    y_pred = model(x)
    logs = model.compute_metrics(x, y, y_pred)
    # a float32 mean of 8 terms: 9 u = 5.4e-7
    assert logs["mae"] == pytest.approx(float(np.mean(np.abs(np.asarray(ops.to_numpy(y_pred)) - y))), rel=1e-6)
    model.reset_metrics()
    assert float(model.get_metrics_result()["mae"]) == 0.0


def test_no_override_runs_the_built_in_step(backend, monkeypatch):
    model = _mlp(ember.Model)
    assert not model._overrides("train_step") and not model._overrides("test_step")
    assert _mlp(StandardStep)._overrides("train_step")

    def refuse(self, data):
        raise AssertionError("the built-in path must not call train_step")

    monkeypatch.setattr(ember.training.model_api.TrainingAPI, "train_step", refuse)
    model.compile(optimizer="sgd", loss="mse")
    x, y = _regression_data(16)
    model.fit(x, y, epochs=1, verbose=0)


# --- the GAN of the Keras guide, on digits ------------------------------------------------------
LATENT = 8


class GAN(ember.Model):
    """Keras's "customizing what happens in fit" GAN: no call, two optimizers set in compile."""

    def __init__(self, discriminator, generator, latent_dim, seed=0):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        self.seed_generator = ember.random.SeedGenerator(seed)
        self.d_loss_tracker = ember.metrics.Mean(name="d_loss")
        self.g_loss_tracker = ember.metrics.Mean(name="g_loss")

    @property
    def metrics(self):
        return [self.d_loss_tracker, self.g_loss_tracker]

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn

    def train_step(self, real_images):
        batch_size = ops.shape(real_images)[0]
        z = ember.random.normal((batch_size, self.latent_dim), seed=self.seed_generator)
        combined = ops.concatenate([self.generator(z), real_images], axis=0)
        labels = ops.concatenate([ops.ones((batch_size, 1)), ops.zeros((batch_size, 1))], axis=0)
        labels += 0.05 * ember.random.uniform(ops.shape(labels), seed=self.seed_generator)
        with ember.GradientTape() as tape:
            d_loss = self.loss_fn(labels, self.discriminator(combined))
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
        z = ember.random.normal((batch_size, self.latent_dim), seed=self.seed_generator)
        with ember.GradientTape() as tape:
            g_loss = self.loss_fn(ops.zeros((batch_size, 1)), self.discriminator(self.generator(z)))
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply(grads, self.generator.trainable_weights)
        self.d_loss_tracker.update_state(d_loss)
        self.g_loss_tracker.update_state(g_loss)
        return {"d_loss": self.d_loss_tracker.result(), "g_loss": self.g_loss_tracker.result()}


@needs("sklearn.datasets")
def test_gan_on_digits_trains_with_two_optimizers(backend):
    digits = (sk_datasets.load_digits().data[:512] / 16.0).astype("float32")
    discriminator = ember.Sequential([ember.Input((64,)), layers.Dense(32), layers.LeakyReLU(0.2), layers.Dense(1)],
                                     name="discriminator")
    generator = ember.Sequential([ember.Input((LATENT,)), layers.Dense(32), layers.LeakyReLU(0.2),
                                  layers.Dense(64, activation="sigmoid")], name="generator")
    discriminator.build(seed=1)
    generator.build(seed=2)
    gan = GAN(discriminator, generator, LATENT)
    d_optimizer, g_optimizer = ember.optimizers.Adam(3e-3), ember.optimizers.Adam(3e-3)
    gan.compile(d_optimizer=d_optimizer, g_optimizer=g_optimizer,
                loss_fn=ember.losses.BinaryCrossentropy(from_logits=True))

    def distance_to_data():  # mean absolute gap between the generated and the real mean image
        samples = np.asarray(ops.to_numpy(generator(ember.random.normal((256, LATENT), seed=5))))
        return float(np.abs(samples.mean(axis=0) - digits.mean(axis=0)).mean())

    start = distance_to_data()
    history = gan.fit(digits, batch_size=64, epochs=6, verbose=0).history
    d_loss, g_loss = np.asarray(history["d_loss"]), np.asarray(history["g_loss"])
    assert sorted(history) == ["d_loss", "g_loss"] and np.isfinite(d_loss).all() and np.isfinite(g_loss).all()
    assert d_loss[0] < math.log(2) and d_loss.min() < 0.5 * d_loss[0]  # the discriminator learns to tell them apart
    assert g_loss.max() > 2 * math.log(2)  # ... so the generator's loss rises
    assert d_loss[-1] > d_loss.min()  # and the generator fights back
    assert distance_to_data() < 0.7 * start  # its samples moved toward the data
    assert int(ops.to_numpy(d_optimizer.iterations)) == int(ops.to_numpy(g_optimizer.iterations)) == 6 * 8


def test_train_on_batch_and_test_on_batch_use_the_overrides(backend):
    class Probe(StandardStep):
        def test_step(self, data):
            return {"probe": 3.0}

    x, y = _regression_data(16)
    custom, built_in = _mlp(Probe), _mlp(ember.Model)
    built_in.set_weights(custom.get_weights())
    for model in (custom, built_in):
        model.compile(optimizer=ember.optimizers.SGD(0.1), loss="mse")
    first = custom.train_on_batch(x, y, return_dict=True)
    assert first["loss"] == pytest.approx(built_in.train_on_batch(x, y), rel=FLOAT32_PAIR["rtol"])
    for a, b in zip(custom.get_weights(), built_in.get_weights()):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    assert custom.test_on_batch(x, y) == 3.0


class SubclassedWithExtraLoss(ember.Model):
    """A subclassed model whose compile override adds a loss of its own."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = layers.Dense(6, activation="relu")
        self.out = layers.Dense(1)

    def call(self, inputs):
        return self.out(self.hidden(inputs))

    def compile(self, penalty_weight=0.1, **kwargs):
        super().compile(**kwargs)
        self.penalty_weight = penalty_weight

    def train_step(self, data):
        x, y = data
        with ember.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
            loss += self.penalty_weight * ops.mean(ops.square(y_pred))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


def test_subclassed_model_with_compile_override_trains_with_its_extra_loss(backend):
    x, y = _regression_data(32)
    ember.initializers.set_seed(3)
    model = SubclassedWithExtraLoss()
    model.compile(penalty_weight=0.5, optimizer=ember.optimizers.SGD(0.05), loss="mse")
    assert model.penalty_weight == 0.5
    with pytest.raises(AttributeError, match="immutable"):
        model.penalty_weight = 1.0  # only while compile runs
    model(x[:1])  # builds the weights
    start = model.get_weights()
    history = model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    # float64 reference of the first (only) step's loss: mse + 0.5 * mean(y_pred^2)
    w1, b1, w2, b2 = (a.astype(np.float64) for a in start)
    y_pred = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    expected = np.mean((y_pred - y) ** 2) + 0.5 * np.mean(y_pred ** 2)
    assert history.history["loss"][0] == pytest.approx(expected, rel=FLOAT32["rtol"])


def test_a_learning_rate_callback_reaches_the_optimizer_of_an_overridden_step(backend):
    def schedule(epoch, lr):
        return 0.1 if epoch == 0 else 0.01

    x, y = _regression_data(32)
    custom, built_in = _mlp(StandardStep), _mlp(ember.Model)
    built_in.set_weights(custom.get_weights())
    for model in (custom, built_in):
        model.compile(optimizer=ember.optimizers.SGD(0.5), loss="mse")
        model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0,
                  callbacks=[ember.callbacks.LearningRateScheduler(schedule)])
    for a, b in zip(custom.get_weights(), built_in.get_weights()):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


def test_functional_subclasses_with_their_own_init_stay_functional():
    ember.set_backend("numpy")

    class Forwarding(ember.Model):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)

    class Named(ember.Model):
        def __init__(self, inputs, outputs, **kwargs):
            super().__init__(inputs, outputs, **kwargs)

    class Stack(ember.Sequential):
        def __init__(self):
            super().__init__([ember.Input((2,)), layers.Dense(1)])

    inputs = ember.Input((2,))
    outputs = layers.Dense(1)(inputs)
    for model in (Forwarding(inputs, outputs), Named(inputs, outputs), Stack()):
        assert not model._keras_style
        assert ops.shape(model.predict(np.ones((3, 2), "float32"), verbose=0)) == (3, 1)


def test_callbacks_see_the_override_s_logs_and_can_stop_it():
    ember.set_backend("numpy")
    seen = []

    class Constant(ember.Model):
        def train_step(self, data):
            x, y, sample_weight = data
            return {"loss": 1.0, "weight_sum": ops.sum(sample_weight)}

    x, y = _regression_data(32)
    model = _mlp(Constant)
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(x, y, sample_weight=np.full(32, 0.5, "float32"), batch_size=16, epochs=5, verbose=0,
                        callbacks=[ember.callbacks.EarlyStopping(monitor="loss", patience=0),
                                   ember.callbacks.LambdaCallback(
                                       on_train_batch_end=lambda batch, logs: seen.append(dict(logs)))])
    assert history.history["loss"] == [1.0, 1.0]  # no improvement after the first epoch: stopped
    assert seen == [{"loss": 1.0, "weight_sum": 8.0}] * 4
