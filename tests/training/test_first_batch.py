"""``fit`` checks its first batch without a forward pass where its first step runs eagerly
(:mod:`ember.training.first_batch`), with the same errors as the eager check and no state changed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.training.first_batch import eager_first_step, predicted_shapes
from tests.helpers import same_state, state_snapshot

RNG = np.random.default_rng(0)
X = RNG.normal(size=(12, 4)).astype("float32")
Y = np.array([0, 1, 2] * 4)


def _sce():
    return ember.losses.SparseCategoricalCrossentropy(from_logits=True)


def _compiled(model, jit_compile="auto"):
    model.compile(optimizer=ember.optimizers.Adam(0.01), loss=_sce(), seed=0, jit_compile=jit_compile)
    return model


def _mlp(jit_compile="auto"):
    model = ember.Sequential([ember.Input((4,)), layers.Dense(5, activation="relu"), layers.Dense(3, name="logits")])
    model.build(seed=0)
    return _compiled(model, jit_compile)


def _count_forwards(model):
    """Count the model's forward passes (the trainer's ``core.forward``) into the returned list (call it
    before the first ``fit``: the steps a backend builds may keep their own copy of the core)."""
    core = model._training.trainer.core
    calls = []
    forward = core.forward
    core.forward = lambda *args: calls.append(args[3]) or forward(*args)  # args[3]: training
    return calls


def _one_step(model, x=X, y=Y):
    model.fit(x, y, batch_size=len(x), epochs=1, shuffle=False, verbose=0)


# --------------------------------------------------------------------------------- no extra forward
def test_fit_runs_no_forward_before_an_eager_first_step(backend):
    model = _mlp(jit_compile=False)  # an eager step on every backend (MLX included)
    calls = _count_forwards(model)
    for _ in range(2):
        _one_step(model)
    assert calls == [True, True]  # the training steps only: no inference-mode check


def test_a_compiled_first_step_keeps_the_eager_check(mlx_backend):
    """``mx.compile`` may not surface what an eager forward raises: the first batch is run eagerly (lazily on
    MLX: only the labels it reads are computed) before the step."""
    model = _mlp()  # jit_compile="auto" compiles on MLX
    calls = _count_forwards(model)
    _one_step(model)
    _one_step(model)
    assert calls.count(False) == 2  # one eager check per fit (the traced steps come on top)


@pytest.mark.parametrize(("backend_name", "jit", "cuda_graphs", "distributed", "expected"), [
    ("numpy", True, False, False, True),
    ("torch", "auto", False, False, True),
    ("torch", False, False, False, True),
    ("torch", True, False, False, True),
    ("torch", "auto", True, False, False),
    ("torch", "auto", False, True, False),
    ("mlx", "auto", False, False, False),
    ("mlx", True, False, False, False),
    ("mlx", False, False, False, True),
    ("numpy", "auto", False, True, False),
])
def test_which_first_steps_run_eagerly(backend_name, jit, cuda_graphs, distributed, expected):
    """A LossScaleOptimizer changes nothing here: it trains on the backend's own steps."""
    assert eager_first_step(backend_name, jit, cuda_graphs, distributed) is expected


# --------------------------------------------------------------------------------- same errors
def _bad_batches():
    return {
        "label out of range": (X, np.full(12, 5)),
        "negative label": (X, np.full(12, -1)),
        "non-integral float labels": (X, np.full(12, 0.5)),
        "one-hot labels": (X, np.eye(3, dtype="float32")[Y]),
        "labels of rank 3": (X, np.zeros((12, 2, 2), "int64")),
        "feature count": (np.ones((12, 5), "float32"), Y),
        "rank of x": (np.ones((12, 4, 1), "float32"), Y),
    }


@pytest.mark.parametrize("case", list(_bad_batches()))
def test_bad_first_batch_raises_the_eager_checks_error_and_changes_nothing(backend, case):
    model = _mlp()
    _one_step(model)  # an optimizer state exists
    x, y = _bad_batches()[case]
    trainer = model._training.trainer
    batch = tuple(ops.convert_to_tensor(a) if a is not None else None for a in (x, y, None))
    with pytest.raises((ValueError, TypeError)) as expected:
        trainer.check_batch({"model": model.state}, batch)  # the eager forward check, as fit ran it before
    before = state_snapshot(model)
    with pytest.raises(type(expected.value)) as caught:
        _one_step(model, x, y)
    assert str(caught.value) == str(expected.value)
    assert same_state(state_snapshot(model), before)


def _embedding_model():
    model = ember.Sequential([ember.Input((3,), dtype="int64"), layers.Embedding(10, 4, name="tokens"),
                              layers.Flatten(), layers.Dense(3)])
    model.build(seed=0)
    return _compiled(model)


TOKENS = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9], [0, 1, 2]])
BAD_TOKENS = np.array([[1, 2, 3], [4, 5, 12], [7, 8, 9], [0, 1, 2]])  # 12 >= input_dim: only values tell


def test_what_only_a_forward_finds_raises_from_the_first_step_with_nothing_changed(backend):
    model = _embedding_model()
    _one_step(model, TOKENS, Y[:4])
    before = state_snapshot(model)
    with pytest.raises(ValueError, match=r"layer 'tokens': indices must lie in \[0, 10\).*received values in "
                                         r"\[0, 12\]"):
        _one_step(model, BAD_TOKENS, Y[:4])
    assert same_state(state_snapshot(model), before)


class _OpaqueKernelError(RuntimeError):
    pass


class _NonNegative(layers.Layer):
    """Passes its inputs on; raises on a negative value (found only by running it)."""

    def call(self, inputs):
        if float(ops.convert_to_numpy(ops.min(inputs))) < 0:
            raise ValueError(f"layer {self.name!r}: inputs must be >= 0")
        return inputs


def _failing_first_step(model, monkeypatch):
    """The first step fails the way a fused or compiled kernel may: with an error of its own."""
    def fail(state, batch):
        raise _OpaqueKernelError("kernel failed")

    monkeypatch.setattr(model._training.trainer.steps, "fit_step", fail)


def test_a_failing_first_step_gets_the_eager_checks_clear_error(backend, monkeypatch):
    model = _embedding_model()
    _one_step(model, TOKENS, Y[:4])
    before = state_snapshot(model)
    _failing_first_step(model, monkeypatch)
    with pytest.raises(ValueError, match=r"layer 'tokens': indices must lie in \[0, 10\)") as caught:
        _one_step(model, BAD_TOKENS, Y[:4])
    assert caught.value.__cause__ is None  # the check's error, not chained to the step's
    assert same_state(state_snapshot(model), before)
    # Where the data is fine, the step's own error stands.
    with pytest.raises(_OpaqueKernelError, match="kernel failed"):
        _one_step(model, TOKENS, Y[:4])
    assert same_state(state_snapshot(model), before)


def test_torchs_compiled_first_step_takes_the_quick_check_and_its_failure_the_clear_error(torch_backend,
                                                                                          monkeypatch):
    """torch's jit_compile=True step is pure and falls back to the same step run eagerly, raising the
    model's own error: its first batch needs no inference-mode forward, and a first step that fails gets
    the eager check's clear error with nothing changed."""
    model = ember.Sequential([ember.Input((4,)), _NonNegative(name="non_negative"), layers.Dense(3)])
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.Adam(0.01), loss=_sce(), seed=0, jit_compile=True)
    trainer = model._training.trainer
    eager_checks = []
    check = trainer.first_batch.eager
    monkeypatch.setattr(trainer.first_batch, "eager", lambda *args: eager_checks.append(1) or check(*args))
    trainer.check_first_batch({"model": model.state}, (ops.convert_to_tensor(np.abs(X)), ops.convert_to_tensor(Y),
                                                       None))
    assert eager_checks == []  # the stand-in decided: no forward before the compiled step
    before = state_snapshot(model)
    _failing_first_step(model, monkeypatch)  # the compiled step fails (as its eager fallback would, on X)
    with pytest.raises(ValueError, match="layer 'non_negative': inputs must be >= 0") as caught:
        _one_step(model, X, Y)  # X has negative values: only the forward finds it, the eager check explains
    assert caught.value.__cause__ is None and eager_checks == [1]
    assert same_state(state_snapshot(model), before)
    with pytest.raises(_OpaqueKernelError, match="kernel failed"):  # good data: the step's own error stands
        _one_step(model, np.abs(X), Y)


# ------------------------------------------------------------------------- output shapes, learned
class _MisdeclaredDense(layers.Dense):
    """A Dense whose ``compute_output_shape`` is wrong (an extra axis): the stand-in cannot be trusted."""

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (4, self.units)


def test_a_wrong_declared_output_shape_falls_back_to_the_forward_once(backend):
    model = ember.Sequential([ember.Input((4,)), layers.Dense(5), _MisdeclaredDense(3)])
    model.build(seed=0)
    _compiled(model, jit_compile=False)
    calls = _count_forwards(model)
    _one_step(model)
    assert calls == [False, True]  # the stand-in was rejected: the eager check decided (and passed)
    _one_step(model)
    assert calls == [False, True, True]  # the shapes that forward gave are remembered


class _TwoDense(ember.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = layers.Dense(5, activation="relu")
        self.out = layers.Dense(3)

    def call(self, inputs):
        return self.out(self.hidden(inputs))


def test_a_subclassed_model_learns_its_output_shapes_from_the_first_check(backend):
    model = _compiled(_TwoDense(), jit_compile=False)
    calls = _count_forwards(model)
    _one_step(model)  # builds the model from the data; nothing declares its output shapes: the forward tells
    assert calls == [False, True]
    _one_step(model)
    _one_step(model)
    assert calls == [False, True, True, True]
    with pytest.raises(ValueError, match="received 7"):  # the labels are still checked against 3 classes
        _one_step(model, X, np.full(12, 7))
    assert predicted_shapes(model, model._training.trainer.output_names, ops.convert_to_tensor(X)) is None


# --------------------------------------------------------------------------------- predicted_shapes
def _functional():
    a, b = ember.Input((4,), name="a"), ember.Input((2, 3), name="b")
    merged = layers.Concatenate()([layers.Dense(5)(a), layers.Flatten()(b)])
    return ember.Model([a, b], {"scores": layers.Dense(3, name="scores")(merged),
                                "value": layers.Dense(1, name="value")(merged)})


def test_predicted_shapes_follow_the_declared_inputs(backend):
    model = _functional()
    names = model._training.trainer.output_names if model._training.trainer else ["scores", "value"]
    a, b = ops.zeros((6, 4)), ops.zeros((6, 2, 3))
    assert predicted_shapes(model, names, [a, b]) == [(6, 3), (6, 1)]
    assert predicted_shapes(model, names, {"a": a, "b": b}) == [(6, 3), (6, 1)]
    assert predicted_shapes(model, names, [a, ops.zeros((6, 3, 3))]) is None  # does not fit input "b"
    assert predicted_shapes(model, names, [a, ops.zeros((5, 2, 3))]) is None  # two batch sizes
    assert predicted_shapes(model, names, [a]) is None
    assert predicted_shapes(model, names, {"a": a}) is None
    sequential = ember.Sequential([ember.Input((4,)), layers.Dense(2)])
    assert predicted_shapes(sequential, ["dense"], a) == [(6, 2)]
    assert predicted_shapes(sequential, ["dense"], ops.zeros((6, 5))) is None
    assert predicted_shapes(ember.Sequential([layers.Dense(2)]), ["dense"], a) is None  # input shape unknown


def test_an_unknown_output_dim_is_left_to_the_forward(backend):
    inputs = ember.Input((None, 3))
    model = ember.Model(inputs, layers.Dense(2)(inputs))
    assert predicted_shapes(model, ["dense"], ops.zeros((4, 5, 3))) is None


def test_multi_output_fit_checks_each_output_without_a_forward(backend):
    model = _functional()
    model.compile(optimizer="sgd", loss={"scores": _sce(), "value": "mse"}, seed=0, jit_compile=False)
    x = [RNG.normal(size=(12, 4)).astype("float32"), RNG.normal(size=(12, 2, 3)).astype("float32")]
    y = {"scores": Y, "value": RNG.normal(size=(12, 1)).astype("float32")}
    calls = _count_forwards(model)
    for _ in range(2):
        model.fit(x, y, batch_size=12, epochs=1, verbose=0)
    assert calls == [True, True]
    with pytest.raises(ValueError, match=r"sparse_categorical_crossentropy.*received 3"):
        model.fit(x, {"scores": np.full(12, 3), "value": y["value"]}, batch_size=12, epochs=1, verbose=0)
    with pytest.raises(ValueError, match=r"one integer class index per prediction.*received y_true.shape=\(12, 2\)"):
        model.fit(x, {"scores": np.zeros((12, 2), "int64"), "value": y["value"]}, batch_size=12, epochs=1,
                  verbose=0)


_PROBABILISTIC = {
    "categorical_crossentropy": (ember.losses.CategoricalCrossentropy, 3, "softmax", np.eye(3)[Y]),
    "sparse_categorical_crossentropy": (ember.losses.SparseCategoricalCrossentropy, 3, "softmax", Y),
    "binary_crossentropy": (ember.losses.BinaryCrossentropy, 1, "sigmoid", (Y[:, None] == 1).astype("float32")),
}


@pytest.mark.parametrize("from_logits", [False, True])
@pytest.mark.parametrize("name", sorted(_PROBABILISTIC))
def test_crossentropy_fit_warns_nothing_and_keeps_the_quick_check(backend, name, from_logits):
    """The stand-in predictions are a valid probability (not zeros, which the probability losses'
    ``y_pred / sum(y_pred)`` turned into 0 / 0 and a NumPy RuntimeWarning on every ``fit``)."""
    loss, units, activation, y = _PROBABILISTIC[name]
    model = ember.Sequential([ember.Input((4,)), layers.Dense(units, activation=None if from_logits else activation)])
    model.compile(optimizer="sgd", loss=loss(from_logits=from_logits), seed=0, jit_compile=False)
    calls = _count_forwards(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _one_step(model, y=y)
    assert [str(warning.message) for warning in caught] == []
    assert calls == [True]  # the losses accepted the stand-in: no eager check ran
