"""``compile(jit_compile=True)`` on torch: the whole train step under ``torch.compile``.

torch.compile takes seconds to tens of seconds per model on a CPU, so these tests are few and
each compiles one small model: the compiled fit gives the eager fit's weights after 20 steps
(Adam + BatchNorm against the fused eager step; SGD with momentum + BatchNorm + Dropout against
the same step run eagerly, the fallback a failed compile takes), with zero graph breaks and one
graph for all batch sizes; an interrupt anywhere leaves whole steps; checkpoints round-trip.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys

import numpy as np
import optree
import pytest

import ember
from ember import layers, ops
from tests.tolerances import FLOAT32, FLOAT32_PAIR

X = np.random.default_rng(0).normal(size=(70, 12)).astype("float32")  # batches of 16: the last has 6 rows
Y = np.random.default_rng(1).integers(0, 4, 70)
IMAGES = np.random.default_rng(2).normal(size=(70, 6, 6, 1)).astype("float32")
BATCH, EPOCHS = 16, 4  # 5 steps per epoch: 20 steps


def _loss():
    return ember.losses.SparseCategoricalCrossentropy(from_logits=True)


def _mlp(jit_compile, optimizer=None):
    """W1's shape of model (Dense-ReLU stack, sparse cross-entropy from logits, accuracy), with BatchNorm."""
    model = ember.Sequential([ember.Input((12,)), layers.Dense(16, activation="relu"), layers.BatchNormalization(),
                              layers.Dense(4)])
    model.build(seed=0)
    model.compile(optimizer=optimizer or ember.optimizers.Adam(0.01), loss=_loss(), metrics=["accuracy"],
                  jit_compile=jit_compile, seed=5)
    return model


def _cnn(jit_compile):
    """W3's shape of model (Conv-Pool-Dense), with BatchNorm and Dropout, SGD with momentum."""
    model = ember.Sequential([ember.Input((6, 6, 1)), layers.Conv2D(4, 3, activation="relu"),
                              layers.BatchNormalization(), layers.MaxPooling2D(2), layers.Flatten(),
                              layers.Dropout(0.3), layers.Dense(4)])
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.SGD(0.05, momentum=0.9), loss=_loss(), metrics=["accuracy"],
                  jit_compile=jit_compile, seed=5)
    return model


def _numpy(tree):
    return optree.tree_map(lambda a: np.array(ops.to_numpy(a)), tree)


def _assert_close(got, want):
    """float32 after 20 steps: 1e-5 of each tensor's scale (Inductor fuses and reorders the sums)."""
    # Each step's values are FLOAT32_PAIR apart; an update (Adam ~lr = 0.01, SGD lr |velocity| <= 0.05) then moves
    # by <= 2e-5 of its size, and the 20 steps' independent roundings add as a random walk (Higham & Mary 2019):
    # sqrt(20) * 0.05 * 2e-5 = 4.5e-6 -> atol 1e-5 of each tensor's scale (>= 1)
    for path, a, b in zip(optree.tree_paths(want), optree.tree_leaves(_numpy(got)), optree.tree_leaves(_numpy(want))):
        np.testing.assert_allclose(a, b, rtol=FLOAT32_PAIR["rtol"], atol=1e-5 * max(float(np.abs(b).max()), 1.0),
                                   err_msg=str(path))


@contextlib.contextmanager
def _dynamo_counters():
    import torch

    torch._dynamo.utils.counters.clear()
    yield torch._dynamo.utils.counters


def _assert_one_graph(counters, steps, eager_batches=0):
    assert dict(counters["graph_break"]) == {}, f"graph breaks: {dict(counters['graph_break'])}"
    assert counters["stats"]["unique_graphs"] == 1  # the last, smaller batch reused the graph
    assert steps.fallback_reason is None and steps.compile_seconds > 0
    assert steps.eager_batches == eager_batches  # every other step after the first ran through it


def test_compiled_fit_matches_the_eager_fit_with_one_graph(torch_backend):
    eager = _mlp(False)
    eager.fit(X, Y, batch_size=BATCH, epochs=EPOCHS, verbose=0)
    compiled = _mlp(True)
    with _dynamo_counters() as counters:
        history = compiled.fit(X, Y, batch_size=BATCH, epochs=EPOCHS, verbose=0)
    steps = compiled._training.trainer.steps
    assert type(steps).__name__ == "CompiledTorchSteps"
    _assert_one_graph(counters, steps)
    assert int(ops.to_numpy(compiled._training.opt_state["iterations"])) == 20
    _assert_close(compiled.state, eager.state)
    _assert_close({k: v for k, v in compiled._training.opt_state.items() if k != "iterations"},
                  {k: v for k, v in eager._training.opt_state.items() if k != "iterations"})
    # losses and predictions of weights _assert_close apart: FLOAT32_PAIR, the weights' drift (4.5e-6) times
    # inputs summing to |x| <= 10 on the absolute side
    np.testing.assert_allclose(history.history["loss"], eager.history.history["loss"], **FLOAT32_PAIR)
    np.testing.assert_allclose(compiled.predict(X, verbose=0), eager.predict(X, verbose=0), rtol=FLOAT32_PAIR["rtol"],
                               atol=FLOAT32_PAIR["atol"] + 10 * 4.5e-6)


def test_a_compiled_fit_in_a_fresh_thread_runs_every_step_compiled(torch_backend):
    """The first compiled fit of a thread (nothing run in it before): the graph's guards hold for every
    later step. (Its first step once created a thread-local list the guards then found on every later
    step, and all but the first step ran uncompiled, silently.)"""
    import threading

    compiled = _mlp(True)
    outcome: dict = {}

    def fit() -> None:
        with _dynamo_counters() as counters:
            compiled.fit(X, Y, batch_size=BATCH, epochs=EPOCHS, verbose=0)
            outcome["counters"] = counters

    worker = threading.Thread(target=fit)
    worker.start()
    worker.join()
    _assert_one_graph(outcome["counters"], compiled._training.trainer.steps)


SCALE = 1.0  # read by _ScaledByAGlobal: torch.compile guards the compiled step on its value


class _ScaledByAGlobal(layers.Layer):
    """Multiplies its inputs by the module's SCALE (a guard that fails when SCALE changes)."""

    def call(self, inputs):
        return inputs * SCALE


class _SetScale(ember.callbacks.Callback):
    def __init__(self, after_batch: int, value: float) -> None:
        super().__init__()
        self.after_batch, self.value = after_batch, value

    def on_train_batch_end(self, batch, logs=None):
        global SCALE
        if batch == self.after_batch:
            SCALE = self.value


def _scaled_model(jit_compile):
    model = ember.Sequential([ember.Input((12,)), layers.Dense(8), _ScaledByAGlobal(), layers.Dense(4)])
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.SGD(0.05), loss=_loss(), jit_compile=jit_compile, seed=5)
    return model


def test_a_batch_the_guards_refuse_runs_eagerly_with_a_warning_naming_the_guard(torch_backend, monkeypatch):
    """A step whose guards fail (here a global the model reads changed after step 2) runs eagerly, with the new
    value: the weights of an eager fit given the same change, and one warning naming the guard."""
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 1.0)
    eager = _scaled_model(False)
    eager.fit(X, Y, batch_size=BATCH, epochs=1, verbose=0, callbacks=[_SetScale(1, 3.0)])
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 1.0)
    compiled = _scaled_model(True)
    refused = r"a batch of 16 rows, as many as the compiled train step's, failed its guards.*SCALE"
    with pytest.warns(RuntimeWarning, match=refused):
        compiled.fit(X, Y, batch_size=BATCH, epochs=1, verbose=0, callbacks=[_SetScale(1, 3.0)])
    steps = compiled._training.trainer.steps
    assert steps.fallback_reason is None and steps.eager_batches == 3  # steps 3-5 of 5
    _assert_close(compiled.state, eager.state)


def test_a_refusal_torch_cannot_explain_is_still_reported(torch_backend, monkeypatch):
    """When the second look at the guards passes (an interrupt landed in Dynamo's guard evaluation, which
    treats it as a failed guard), the warning carries that one line instead of an empty account."""
    steps = _mlp(True)._training.trainer.steps
    steps._compiled_rows = 16
    monkeypatch.setattr(steps, "_refusal", lambda *args: "the guards passed on a second look")
    second_look = r"failed its guards and ran eagerly \(the guards passed on a second look\)"
    with pytest.warns(RuntimeWarning, match=second_look):
        steps._note_refused_batch(None, X[:16], None, None)
    assert steps.eager_batches == 1
    steps._note_refused_batch(None, X[:6], None, None)  # another batch size: counted, no second warning
    assert steps.eager_batches == 2


def _tokens_model(jit_compile):
    """W4's input side: token indices through an Embedding and causal attention (no host read may remain)."""
    inputs = ember.Input((5,), dtype="int64")
    h = layers.Embedding(20, 8)(inputs)
    h = layers.MultiHeadAttention(num_heads=2, key_dim=4)(h, h, use_causal_mask=True)
    model = ember.Model(inputs, layers.Dense(4)(layers.GlobalAveragePooling1D()(h)))
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.Adam(0.01), loss=_loss(), jit_compile=jit_compile, seed=5)
    return model


def test_embedding_and_attention_compile_as_one_graph(torch_backend):
    """The Embedding's index check reads the host only outside fit's steps (fit checked the inputs first),
    and take's host bounds check is skipped while torch.compile traces: no graph break, no fallback."""
    tokens = np.random.default_rng(3).integers(0, 20, (70, 5))
    eager = _tokens_model(False)
    eager.fit(tokens, Y, batch_size=BATCH, epochs=EPOCHS, verbose=0)
    compiled = _tokens_model(True)
    with _dynamo_counters() as counters:
        compiled.fit(tokens, Y, batch_size=BATCH, epochs=EPOCHS, verbose=0)
    _assert_one_graph(counters, compiled._training.trainer.steps)
    _assert_close(compiled.state, eager.state)
    with pytest.raises(ValueError, match=r"indices must lie in \[0, 20\)"):  # fit still checks the inputs
        compiled.fit(np.full((16, 5), 20), Y[:16], batch_size=BATCH, epochs=1, verbose=0)


def _patches_model(jit_compile):
    """W5V's input side: image patches by a strided Conv2D, a Reshape with -1, then self-attention."""
    inputs = ember.Input((6, 6, 1))
    h = layers.Reshape((-1, 8))(layers.Conv2D(8, 2, strides=2)(inputs))
    h = layers.MultiHeadAttention(num_heads=2, key_dim=4)(layers.LayerNormalization()(h), h)
    h = layers.MultiHeadAttention(num_heads=2, key_dim=4)(h, h)
    model = ember.Model(inputs, layers.Dense(4)(layers.GlobalAveragePooling1D()(h)))
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.Adam(0.01), loss=_loss(), jit_compile=jit_compile, seed=5)
    return model


def test_patches_reshape_and_self_attention_compile_as_one_graph(torch_backend):
    """A ViT's stem (Reshape's -1 resolved without a generator Dynamo cannot trace) and both attention forms
    (a cross-attention of two tensors; a self-attention projected in one GEMM) compile as one graph."""
    eager = _patches_model(False)
    eager.fit(IMAGES, Y, batch_size=BATCH, epochs=EPOCHS, verbose=0)
    compiled = _patches_model(True)
    with _dynamo_counters() as counters:
        compiled.fit(IMAGES, Y, batch_size=BATCH, epochs=EPOCHS, verbose=0)
    _assert_one_graph(counters, compiled._training.trainer.steps)
    # The attention key biases are left out: their gradient is zero up to rounding (softmax ignores a shift of
    # a row), and Adam turns that rounding into steps of ~lr whatever its size, so the two runs' key biases
    # are noise of either sign.
    _assert_close(_without_key_biases(compiled.state["params"]), _without_key_biases(eager.state["params"]))


def _without_key_biases(params):
    return {layer: {part: {k: v for k, v in leaves.items() if not (part == "key" and k == "bias")}
                    for part, leaves in sub.items()} if layer.startswith("multi_head_attention") else sub
            for layer, sub in params.items()}


def test_cnn_with_dropout_compiled_equals_its_eager_fallback(torch_backend, monkeypatch):
    """A compile that fails (a backend that raises) warns and trains eagerly with the same step: the same
    dropout masks from the same seeds, so the same weights as the compiled CNN after 20 steps."""
    from ember.backends.torch import compiled_step

    def failing_backend(graph, example_inputs):
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(compiled_step, "_BACKEND", failing_backend)
    fallback = _cnn(True)
    with pytest.warns(RuntimeWarning, match=r"jit_compile=True: torch.compile could not compile.*no compiler here"):
        fallback.fit(IMAGES, Y, batch_size=BATCH, epochs=EPOCHS, verbose=0)
    assert "no compiler here" in fallback._training.trainer.steps.fallback_reason
    monkeypatch.undo()
    compiled = _cnn(True)
    with _dynamo_counters() as counters:
        compiled.fit(IMAGES, Y, batch_size=BATCH, epochs=EPOCHS, verbose=0)
    # Inductor's CPU reductions here hold for 16-256 rows (it guards on that): each epoch's last batch of 6
    # rows runs eagerly, with no warning (a batch-size guard).
    _assert_one_graph(counters, compiled._training.trainer.steps, eager_batches=EPOCHS)
    _assert_close(compiled.state, fallback.state)


def test_a_model_error_is_raised_not_hidden_by_the_fallback(torch_backend):
    """An error of the model itself (here a batch of the wrong width, given past fit's eager checks) fails
    the compile and then the eager step: the eager step's error is raised, with no fallback warning."""
    import warnings

    model = ember.Sequential([ember.Input((4,)), layers.Dense(3)])
    model.build(seed=0)
    trainer = ember.Trainer(model, optimizer="sgd", loss=_loss(), jit_compile=True)
    state = trainer.init_state(seed=0)
    with warnings.catch_warnings(record=True) as caught, pytest.raises(ValueError, match="4"):
        warnings.simplefilter("always")
        trainer.steps.fit_step(state, (np.zeros((8, 5), "float32"), Y[:8] % 3, None))
    assert not [w for w in caught if "could not compile" in str(w.message)]
    assert trainer.steps.fallback_reason is None


@contextlib.contextmanager
def _traced(tracer):
    """``sys.settrace(tracer)`` with the cyclic GC off (a collection would run others' callbacks)."""
    enabled = gc.isenabled()
    gc.disable()
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(None)
        if enabled:
            gc.enable()


def test_interrupts_leave_whole_steps_and_checkpoints_round_trip(torch_backend, tmp_path):
    """A KeyboardInterrupt on entering any n-th Python function of a compiled fit (6 steps) leaves the
    weights and optimizer state of a whole number of steps; a checkpoint keeps the step seed."""
    model = ember.Sequential([ember.Input((4,)), layers.Dense(5, activation="relu"), layers.Dense(3)])
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.Adam(0.05), loss=_loss(), jit_compile=True, seed=1)
    initial = model.state
    x, y = X[:24, :4], Y[:24] % 3

    def fit():
        model.state, model._training.opt_state = initial, None  # the same start; the compiled step is kept
        model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0, callbacks=[recorder])

    class Recorder(ember.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            live = self.model._training.live_state.state
            reference.append(_numpy((live["model"], _slots(live["optimizer"]))))

    reference = [_numpy((initial, None))]
    recorder = Recorder()
    fit()  # compiles, and records the state after each of the 6 steps
    assert len(reference) == 7
    states, calls = list(reference), 0

    def count(frame, event, arg):
        nonlocal calls
        calls += 1

    with _traced(count):
        fit()
    total = calls
    for n in np.linspace(1, total, int(os.environ.get("EMBER_SWEEP", 15))).astype(int):
        reference[:] = [states[0]]
        calls = 0

        def interrupt(frame, event, arg, n=n):
            nonlocal calls
            calls += 1
            if calls == n:
                raise KeyboardInterrupt(f"injected at call {n}")

        with pytest.raises(KeyboardInterrupt) as raised, _traced(interrupt):
            fit()
            raise KeyboardInterrupt("fit ended first")
        opt_state = model._training.opt_state
        got = _numpy((model.state, None if opt_state is None else _slots(opt_state)))
        if "fit ended first" in str(raised.value):
            # torch swallowed the injected interrupt (it landed in Dynamo's guard evaluation, which
            # catches it and runs that step eagerly, rounding differently): the fit ran whole.
            _assert_close(got, states[-1])
            continue
        taken = [k for k, state in enumerate(states) if _equal(state[0], got[0])
                 and (_equal(state[1], got[1]) or k == 0 and int(got[1]["iterations"]) == 0)]
        assert taken, f"a torn state after an interrupt at call {n} of {total}"
    fit()
    path = str(tmp_path / "compiled.h5")
    model.save(path)
    loaded = ember.load_model(path)
    _assert_close(loaded.state, model.state)
    assert loaded._training.resume["rng"] == int(ops.to_numpy(model._training.last_fit["rng"]))


def _slots(opt_state):
    return {k: v for k, v in opt_state.items() if k != "learning_rate"}


def _equal(a, b) -> bool:
    leaves_a, spec_a = optree.tree_flatten(a, none_is_leaf=True)
    leaves_b, spec_b = optree.tree_flatten(b, none_is_leaf=True)
    return spec_a == spec_b and all(np.array_equal(p, q) for p, q in zip(leaves_a, leaves_b))


def test_jit_compile_true_on_numpy_warns_and_trains_eagerly():
    model = _mlp(True, optimizer=ember.optimizers.SGD(0.1))
    with pytest.warns(UserWarning, match="NumPy backend has no compiler"):
        model.fit(X, Y, batch_size=BATCH, epochs=1, verbose=0)
    reference = _mlp(False, optimizer=ember.optimizers.SGD(0.1))
    reference.fit(X, Y, batch_size=BATCH, epochs=1, verbose=0)
    _assert_close(model.state, reference.state)


def test_jit_compile_with_run_eagerly_warns_and_runs_eagerly(torch_backend):
    model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    with pytest.warns(UserWarning, match="run_eagerly=True and jit_compile=True"):
        model.compile(optimizer="sgd", loss="mse", jit_compile=True, run_eagerly=True)
    assert type(model._training.trainer.steps).__name__ == "TorchSteps"
    model.compile(optimizer="sgd", loss="mse")  # "auto": torch's fused eager step (compiling does not pay)
    assert type(model._training.trainer.steps).__name__ == "TorchSteps"


def test_compiled_step_under_ember_distribute_is_not_implemented(torch_backend):
    model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    model.build(seed=0)
    trainer = ember.Trainer(model, optimizer="sgd", loss="mse", jit_compile=True)
    state = trainer.init_state(seed=0)
    trainer.steps.sync = object()  # what the Trainer sets under ember.distribute
    with pytest.raises(NotImplementedError, match="jit_compile=False for data-parallel"):
        trainer.steps.fit_step(state, (np.ones((2, 2), "float32"), np.zeros((2, 1), "float32"), None))


def test_counter_dropout_of_a_tensor_seed(torch_backend):
    """The tensor-seeded dropout (compiled steps): reproducible, seed-dependent, keeps ~1-rate, scales kept."""
    import torch

    from ember.backends.torch.random import counter_draws

    x = torch.ones(200, 50)
    with counter_draws():
        a = ops.random.dropout(x, 0.3, seed=torch.tensor(11))
        b = ops.random.dropout(x, 0.3, seed=torch.tensor(11))
        c = ops.random.dropout(x, 0.3, seed=torch.tensor(12))
        compiled = torch.compile(lambda t, s: ops.random.dropout(t, 0.3, seed=s), fullgraph=True, backend="eager")
        assert torch.equal(compiled(x, torch.tensor(11)), a)
    assert torch.equal(a, b) and not torch.equal(a, c)
    kept = (a != 0).double().mean().item()
    assert abs(kept - 0.7) < 4 * (0.3 * 0.7 / x.numel()) ** 0.5  # binomial: 4 standard deviations
    np.testing.assert_allclose(a[a != 0].numpy(), 1 / 0.7, **FLOAT32)  # float32(1 / 0.7)
    outside = ops.random.dropout(x, 0.3, seed=torch.tensor(11))  # the int seed's mask (the backends' contract)
    assert torch.equal(outside, ops.random.dropout(x, 0.3, seed=11)) and not torch.equal(outside, a)
