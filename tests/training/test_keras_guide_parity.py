"""Programs from the keras.io guides with only the imports swapped, against Keras 3 itself.

Each test writes the guide's code twice, once with ``keras`` (torch backend, the oracle) and once
with ``ember`` on every backend, gives both the same initial weights (``get_weights`` /
``set_weights`` in Keras's order) and compares what the guide looks at:

* the custom-training-loop guide's first loop: ``tape.gradient(loss, model.trainable_weights)``
  and ``optimizer.apply(grads, model.trainable_weights)`` (``trainable_weights`` and
  ``trainable_variables`` are one list, as in Keras);
* the knowledge-distillation example: a ``Distiller`` whose ``compute_loss`` override mixes the
  student loss with a KL distillation loss against a frozen teacher, trained by ``fit``;
* ``model.optimizer.iterations``: the optimizer steps ``fit`` took, in its callbacks and after it,
  through ``save``/``load_model`` and ``BackupAndRestore``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import callbacks, layers, ops
from tests.helpers import needs, optional_import
from tests.tolerances import FLOAT32, FLOAT32_PAIR

os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is imported (the reference)
keras = optional_import("keras")  # None on a core-only install: the comparisons with Keras skip
torch = optional_import("torch")  # the Keras reference's gradients (the guide's torch loop)

RNG = np.random.default_rng(0)
X = RNG.normal(size=(24, 6)).astype("float32")
Y = RNG.integers(0, 3, size=(24,))
BATCH = 8


def _functional(lib, hidden=8):
    """The guide's functional MLP (784 -> 64 -> 64 -> 10), shrunk."""
    inputs = lib.Input((6,))
    x = lib.layers.Dense(hidden, activation="relu")(inputs)
    x = lib.layers.Dense(hidden, activation="relu")(x)
    return lib.Model(inputs, lib.layers.Dense(3)(x))


def _sequential(lib, hidden):
    return lib.Sequential([lib.Input((6,)), lib.layers.Dense(hidden, activation="relu"), lib.layers.Dense(3)])


def _optimizer(lib, kind):
    return lib.optimizers.SGD(0.1) if kind == "sgd" else lib.optimizers.Adam(0.01)


def _keras_numpy(value):
    return np.asarray(keras.ops.convert_to_numpy(value))


def _batches():
    return [(X[i:i + BATCH], Y[i:i + BATCH]) for i in range(0, len(X), BATCH)]


# --- 1. the custom training loop over model.trainable_weights -----------------------------------------
def _keras_loop(kind, start):
    """The guide's loop from weights ``start``, written as its torch version writes it: the final
    weights and the optimizer's step count."""
    model = _functional(keras)
    model.set_weights(start)
    optimizer = _optimizer(keras, kind)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    for x, y in _batches():
        logits = model(x, training=True)
        loss = loss_fn(y, logits)
        model.zero_grad()
        loss.backward()
        trainable_weights = list(model.trainable_weights)
        gradients = [v.value.grad for v in trainable_weights]
        with torch.no_grad():
            optimizer.apply(gradients, trainable_weights)
    return model.get_weights(), int(_keras_numpy(optimizer.iterations))


@needs("keras", "torch")
@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("update", ["apply", "apply_gradients"])
def test_custom_training_loop_over_trainable_weights_matches_keras(backend, kind, update):
    model = _functional(ember)
    assert model.state is None  # the guide's first step builds it, inside the tape
    optimizer = _optimizer(ember, kind)
    loss_fn = ember.losses.SparseCategoricalCrossentropy(from_logits=True)
    start = None
    for x, y in _batches():  # the first step too: its gradients exist (Keras builds at construction)
        with ember.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_weights)
        assert all(grad is not None for grad in grads)
        if start is None:
            start = model.get_weights()  # the initial weights: Keras's loop starts from them
        if update == "apply":
            optimizer.apply(grads, model.trainable_weights)
        else:
            optimizer.apply_gradients(zip(grads, model.trainable_weights))
    expected, keras_steps = _keras_loop(kind, start)
    # Three steps of float32 layer-sized gradients (FLOAT32 each side), each moving a weight by at
    # most lr * |g| (SGD) or lr (Adam's normalised step) with lr <= 0.1: each step adds a fraction
    # of a FLOAT32 bound to weights of magnitude ~0.5, so the pair stays within FLOAT32_PAIR.
    for value, reference in zip(model.get_weights(), expected):
        np.testing.assert_allclose(value, reference, **FLOAT32_PAIR)
    assert int(optimizer.iterations) == keras_steps == len(_batches())


def test_trainable_weights_and_trainable_variables_are_the_same_list(backend):
    model = _sequential(ember, 4)
    model.layers[0].trainable = False
    for weights, variables in (("weights", "variables"), ("trainable_weights", "trainable_variables"),
                               ("non_trainable_weights", "non_trainable_variables")):
        assert [v.path for v in getattr(model, weights)] == [v.path for v in getattr(model, variables)]
    assert [v.path for v in model.trainable_weights] == ["dense_1/kernel", "dense_1/bias"]
    # Views taken before the tape, after it, or through the layers all get the gradients.
    before = model.trainable_weights
    with ember.GradientTape(persistent=True) as tape:
        loss = ops.sum(model(X[:4], training=True))
    for sources in (before, model.trainable_variables, model.layers[1].trainable_weights):
        assert all(grad is not None for grad in tape.gradient(loss, sources))


@pytest.mark.parametrize("names", ["trainable_weights", "trainable_variables"])
def test_the_first_eager_call_of_an_unbuilt_model_is_watched(backend, names):
    for model in (_functional(ember), _sequential(ember, 4),
                  ember.Sequential([layers.Dense(4, activation="relu"), layers.Dense(3)])):
        assert model.state is None  # built by the first call, inside the tape
        with ember.GradientTape(persistent=True) as tape:
            loss = ops.sum(model(X[:4], training=True))
        for sources in (getattr(model, names), [v for layer in model.layers for v in layer.trainable_weights]):
            assert len(sources) == len(model.weights) > 0
            assert all(grad is not None for grad in tape.gradient(loss, sources))


def test_a_failing_first_call_leaves_the_model_unbuilt(backend):
    model = _sequential(ember, 4)
    with pytest.raises(ValueError), ember.GradientTape():
        model(np.zeros((2, 5), "float32"))  # 5 features where the Input says 6
    assert model.state is None


# --- 2. an overridden compute_loss: the knowledge-distillation example -------------------------------
def _distiller_class(lib):
    """The example's Distiller, written against ``lib`` (its ``compute_loss`` has the example's
    Keras 3 signature, with ``allow_empty`` instead of ``training``)."""
    o = lib.ops

    class Distiller(lib.Model):
        def __init__(self, student, teacher):
            super().__init__()
            self.teacher = teacher
            self.student = student

        def compile(self, optimizer, metrics, student_loss_fn, distillation_loss_fn, alpha=0.1, temperature=3):
            super().compile(optimizer=optimizer, metrics=metrics)
            self.student_loss_fn = student_loss_fn
            self.distillation_loss_fn = distillation_loss_fn
            self.alpha = alpha
            self.temperature = temperature

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, allow_empty=False):
            teacher_pred = self.teacher(x, training=False)
            student_loss = self.student_loss_fn(y, y_pred)
            distillation_loss = self.distillation_loss_fn(
                o.softmax(teacher_pred / self.temperature, axis=1),
                o.softmax(y_pred / self.temperature, axis=1),
            ) * (self.temperature ** 2)
            return self.alpha * student_loss + (1 - self.alpha) * distillation_loss

        def call(self, x):
            return self.student(x)

    return Distiller


def _distill(lib, teacher_weights, student_weights, epochs=2):
    """The example's steps: a frozen teacher, a distiller over the student, fit, evaluate."""
    teacher, student = _sequential(lib, 8), _sequential(lib, 4)
    teacher.set_weights(teacher_weights)
    teacher.trainable = False
    distiller = _distiller_class(lib)(student=student, teacher=teacher)
    distiller(X[:1])
    # The student's weights: through the student on Keras (whose distiller lists the teacher's too),
    # through the distiller on Ember (whose weights are the student's alone: the teacher, never
    # called in `call`, keeps its own).
    (student if lib is keras else distiller).set_weights(student_weights)
    distiller.compile(optimizer=lib.optimizers.Adam(0.01), metrics=[lib.metrics.SparseCategoricalAccuracy()],
                      student_loss_fn=lib.losses.SparseCategoricalCrossentropy(from_logits=True),
                      distillation_loss_fn=lib.losses.KLDivergence(), alpha=0.1, temperature=10)
    history = distiller.fit(X, Y, epochs=epochs, batch_size=BATCH, shuffle=False, verbose=0)
    evaluation = distiller.evaluate(X, Y, verbose=0)
    trained = (student if lib is keras else distiller).get_weights()
    iterations = distiller.optimizer.iterations
    steps = int(_keras_numpy(iterations)) if lib is keras else int(iterations)
    return trained, teacher.get_weights(), history.history, evaluation, steps


@needs("keras")
def test_distiller_compute_loss_override_trains_like_keras(backend):
    draw = np.random.default_rng(1)
    teacher_weights = [draw.normal(scale=0.5, size=w.shape).astype("float32")
                       for w in _sequential(keras, 8).get_weights()]
    student_weights = [draw.normal(scale=0.5, size=w.shape).astype("float32")
                       for w in _sequential(keras, 4).get_weights()]
    expected = _distill(keras, teacher_weights, student_weights)
    result = _distill(ember, teacher_weights, student_weights)
    # Six Adam steps on float32 layer-sized gradients: each step moves a weight by about lr = 0.01
    # whatever the gradient's rounding, so the pair's difference stays within FLOAT32_PAIR.
    for value, reference in zip(result[0], expected[0]):
        np.testing.assert_allclose(value, reference, **FLOAT32_PAIR)
    for value, reference in zip(result[1], expected[1]):  # the frozen teacher is not trained
        np.testing.assert_array_equal(value, reference)
    assert sorted(result[2]) == sorted(expected[2]) == ["loss", "sparse_categorical_accuracy"]
    for name in expected[2]:  # per-epoch means of a few float32 losses: FLOAT32 each side
        np.testing.assert_allclose(result[2][name], expected[2][name], **FLOAT32_PAIR)
    np.testing.assert_allclose(result[3], expected[3], **FLOAT32_PAIR)
    assert result[4] == expected[4] == 2 * len(_batches())


class _Probe(ember.Model):
    """A functional model whose ``compute_loss`` (Keras 3's signature) is twice the compiled loss,
    and records what it returned and the ``training`` it was given."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.returned = []

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        loss = ops.multiply(super().compute_loss(x, y, y_pred, sample_weight, training), 2.0)
        self.returned.append((float(ops.to_numpy(loss)), training))
        return loss


def _probe():
    inputs = ember.Input((6,))
    model = _Probe(inputs, layers.Dense(3)(inputs))
    model.set_weights([np.full((6, 3), 0.1, "float32"), np.zeros((3,), "float32")])
    return model


def test_fit_evaluate_and_batch_methods_report_the_overridden_compute_loss(backend):
    model = _probe()
    model.compile(optimizer=ember.optimizers.SGD(0.1),
                  loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(X, Y, epochs=2, batch_size=BATCH, shuffle=False, verbose=0)
    steps = len(_batches())
    assert [training for _, training in model.returned] == [True] * 2 * steps
    values = np.array([value for value, _ in model.returned]).reshape(2, steps)
    # The loss tracker's mean of equal-sized batches: a sum of three float32 values (FLOAT32).
    np.testing.assert_allclose(history.history["loss"], values.mean(axis=1), **FLOAT32)
    plain = model.get_weights()
    model.returned.clear()
    evaluated = model.evaluate(X, Y, batch_size=BATCH, verbose=0)
    assert [training for _, training in model.returned] == [False] * steps
    np.testing.assert_allclose(evaluated, np.mean([value for value, _ in model.returned]), **FLOAT32)
    model.reset_metrics()  # the batch methods report running means since then (Keras)
    assert model.test_on_batch(X[:BATCH], Y[:BATCH]) == pytest.approx(model.returned[-1][0], rel=FLOAT32["rtol"])
    model.reset_metrics()
    assert model.train_on_batch(X[:BATCH], Y[:BATCH]) == pytest.approx(model.returned[-1][0], rel=FLOAT32["rtol"])
    assert any(not np.array_equal(a, b) for a, b in zip(plain, model.get_weights()))


def test_the_override_doubles_the_step_of_the_compiled_loss(backend):
    """The override's gradient is used: SGD on twice the loss equals SGD at twice the rate."""
    loss = ember.losses.SparseCategoricalCrossentropy(from_logits=True)
    probe = _probe()
    inputs = ember.Input((6,))
    plain = ember.Model(inputs, layers.Dense(3)(inputs))
    plain.set_weights(probe.get_weights())
    probe.compile(optimizer=ember.optimizers.SGD(0.05), loss=loss)
    plain.compile(optimizer=ember.optimizers.SGD(0.1), loss=loss)
    for model in (probe, plain):
        model.fit(X, Y, epochs=1, batch_size=BATCH, shuffle=False, verbose=0)
    for a, b in zip(probe.get_weights(), plain.get_weights()):
        np.testing.assert_allclose(a, b, **FLOAT32_PAIR)  # two float32 paths to the same three steps


class _SameLoss(ember.Model):
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return super().compute_loss(x, y, y_pred, sample_weight, training)


def test_an_override_takes_the_steps_of_the_fused_path_with_a_loss_scale_factor(backend):
    """The default train_step an override runs scales the loss as the fused step does (Keras's
    ``optimizer.scale_loss``): the optimizer divides the gradients by the factor again."""
    models = []
    for cls in (_SameLoss, ember.Model):
        inputs = ember.Input((6,))
        model = cls(inputs, layers.Dense(3)(inputs))
        model.set_weights(_probe().get_weights())
        model.compile(optimizer=ember.optimizers.SGD(0.1, loss_scale_factor=8.0),
                      loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(X, Y, epochs=1, batch_size=BATCH, shuffle=False, verbose=0)
        models.append(model)
    for a, b in zip(*(model.get_weights() for model in models)):
        np.testing.assert_allclose(a, b, **FLOAT32_PAIR)  # two float32 paths to the same three steps


def test_a_compute_loss_override_without_compiled_loss_trains(backend):
    class OwnLoss(ember.Model):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
            return ops.mean(ops.square(ops.subtract(y_pred, ops.convert_to_tensor(y))))

    inputs = ember.Input((6,))
    model = OwnLoss(inputs, layers.Dense(1)(inputs))
    model.compile(optimizer=ember.optimizers.SGD(0.05))  # no loss=: the override is the loss
    target = X[:, :1] * 2.0
    history = model.fit(X, target, epochs=3, batch_size=BATCH, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


# --- 3. optimizer.iterations counts fit's steps ------------------------------------------------------
class _StepCounter(callbacks.Callback):
    """Counts the batches and reads ``int(model.optimizer.iterations)`` in each hook."""

    def __init__(self):
        super().__init__()
        self.steps = 0
        self.at_batch_end: list[tuple[int, int]] = []
        self.at_epoch_end: list[tuple[int, int]] = []

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1
        self.at_batch_end.append((self.steps, int(self.model.optimizer.iterations)))

    def on_epoch_end(self, epoch, logs=None):
        self.at_epoch_end.append((self.steps, int(self.model.optimizer.iterations)))


def _compiled(lib):
    model = _sequential(lib, 4)
    model.compile(optimizer=lib.optimizers.Adam(0.01),
                  loss=lib.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def test_optimizer_iterations_counts_the_steps_of_fit(backend):
    model = _compiled(ember)
    assert int(model.optimizer.iterations) == 0
    counter = _StepCounter()
    model.fit(X[:20], Y[:20], epochs=2, batch_size=BATCH, callbacks=[counter], verbose=0)  # 3 steps per epoch
    assert counter.at_batch_end == [(n, n) for n in range(1, 7)]
    assert counter.at_epoch_end == [(3, 3), (6, 6)]
    assert int(model.optimizer.iterations) == counter.steps == 6
    seen = model.optimizer.iterations
    model.fit(X[:20], Y[:20], epochs=1, batch_size=BATCH, callbacks=[counter], verbose=0)  # continues
    assert int(model.optimizer.iterations) == counter.steps == 9
    assert int(seen) == 6  # a value read earlier does not change with the training state
    model.train_on_batch(X[:BATCH], Y[:BATCH])
    assert int(model.optimizer.iterations) == 10


@needs("keras")
def test_optimizer_iterations_equals_keras_after_the_same_fits(backend):
    counts = []
    for lib in (keras, ember):
        model = _compiled(lib)
        model.fit(X[:20], Y[:20], epochs=2, batch_size=BATCH, verbose=0)
        model.fit(X, Y, epochs=1, batch_size=16, verbose=0)
        iterations = model.optimizer.iterations
        counts.append(int(_keras_numpy(iterations) if lib is keras else iterations))
    assert counts[0] == counts[1] == 2 * 3 + 2


def test_optimizer_iterations_survives_save_and_load(backend, tmp_path):
    model = _compiled(ember)
    model.fit(X, Y, epochs=2, batch_size=BATCH, verbose=0)
    model.save(tmp_path / "m.h5")
    loaded = ember.load_model(tmp_path / "m.h5")
    assert int(loaded.optimizer.iterations) == 6
    counter = _StepCounter()
    loaded.fit(X, Y, epochs=1, batch_size=BATCH, callbacks=[counter], verbose=0)
    assert counter.at_epoch_end == [(3, 9)]


class _Interrupt(callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 1:
            raise KeyboardInterrupt("interrupted (test)")


def test_optimizer_iterations_continues_after_backup_and_restore(backend, tmp_path):
    backup_dir = tmp_path / "backup"
    model = _compiled(ember)
    with pytest.raises(KeyboardInterrupt):
        model.fit(X, Y, epochs=4, batch_size=BATCH, callbacks=[callbacks.BackupAndRestore(backup_dir), _Interrupt()],
                  verbose=0)
    restarted = _compiled(ember)
    counter = _StepCounter()
    restarted.fit(X, Y, epochs=4, batch_size=BATCH, callbacks=[callbacks.BackupAndRestore(backup_dir), counter],
                  verbose=0)
    assert counter.at_epoch_end == [(3, 9), (6, 12)]  # resumed after epoch 1's 6 steps
    assert int(restarted.optimizer.iterations) == 12


def test_optimizer_apply_counts_its_own_updates_after_fit(backend):
    model = _compiled(ember)
    model.fit(X, Y, epochs=1, batch_size=BATCH, verbose=0)
    optimizer = ember.optimizers.SGD(0.1)
    with ember.GradientTape() as tape:
        loss = ops.sum(model(X[:4]))
    optimizer.apply(tape.gradient(loss, model.trainable_weights), model.trainable_weights)
    assert int(optimizer.iterations) == 1 and int(model.optimizer.iterations) == 3
