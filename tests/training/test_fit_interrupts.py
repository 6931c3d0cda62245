"""Fault injection: ``fit`` interrupted anywhere leaves the state of a whole number of steps.

A ``sys.settrace`` hook raises ``KeyboardInterrupt`` on entering the n-th Python function
during ``fit`` (where CPython would deliver a real Ctrl-C), for n spread over a whole small
fit. The model's weights and optimizer state afterwards must equal those of an
uninterrupted run after some number k of steps, the interrupt must reach the caller (never
swallowed), and a later ``fit`` must run as usual. Exceptions raised by callbacks likewise.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import pathlib
import signal
import sys

import numpy as np
import optree
import pytest

import ember
from ember import layers, ops
from ember.autodiff import recording
from ember.autodiff import tape as tape_module
from ember.recorded import calls, graph
from tests.tolerances import FLOAT32
from tests.training.step_paths import force_copy_path

X = np.random.default_rng(0).normal(size=(24, 4)).astype("float32")
Y = np.random.default_rng(1).integers(0, 3, 24)
EPOCHS, BATCH = 2, 8  # 3 steps per epoch, 6 in all
POINTS = 120  # injection points per backend and optimizer


def _model(optimizer: str):
    model = ember.Sequential([ember.Input((4,)), layers.Dense(5, activation="relu", name="hidden"),
                              layers.Dropout(0.25, name="drop"), layers.Dense(3, name="logits")])
    model.build(seed=0)
    opt = ember.optimizers.Adam(0.05) if optimizer == "adam" else ember.optimizers.SGD(0.1, momentum=0.9)
    model.compile(optimizer=opt, loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], seed=1)
    return model


def _numpy_tree(tree):
    return optree.tree_map(lambda a: np.array(ops.to_numpy(a)), tree)


def _train_state(model):
    """(model state, optimizer state) as NumPy; the optimizer state is None before the first fit."""
    opt_state = model._training.opt_state
    opt_state = None if opt_state is None else {k: v for k, v in opt_state.items() if k != "learning_rate"}
    return _numpy_tree(model.state), None if opt_state is None else _numpy_tree(opt_state)


class _RecordSteps(ember.callbacks.Callback):
    """The (model, optimizer) state after every step of an uninterrupted fit."""

    def __init__(self):
        super().__init__()
        self.states = []

    def on_train_batch_end(self, batch, logs=None):
        live = self.model._training.live_state.state
        opt_state = {k: v for k, v in live["optimizer"].items() if k != "learning_rate"}
        self.states.append((_numpy_tree(live["model"]), _numpy_tree(opt_state)))


def _equal(a, b) -> bool:
    leaves_a, spec_a = optree.tree_flatten(a)
    leaves_b, spec_b = optree.tree_flatten(b)
    return spec_a == spec_b and all(np.array_equal(x, y) for x, y in zip(leaves_a, leaves_b))


def _steps_taken(reference: list, got: tuple) -> int | None:
    """The k with ``got`` equal to the state after k clean steps (None: a torn state)."""
    for k, (model_state, opt_state) in enumerate(reference):
        if _equal(model_state, got[0]) and (k == 0 and got[1] is None or _equal(opt_state, got[1])):
            return k
    return None


def _fit(model, callbacks=()):
    return model.fit(X, Y, batch_size=BATCH, epochs=EPOCHS, verbose=0, callbacks=list(callbacks))


def _reference(optimizer: str) -> list:
    model = _model(optimizer)
    initial = _train_state(model)
    recorder = _RecordSteps()
    _fit(model, [recorder])
    assert len(recorder.states) == EPOCHS * 3
    return [initial] + recorder.states


@contextlib.contextmanager
def _traced(tracer):
    """``sys.settrace(tracer)`` for the block, with the cyclic GC off and no ``gc.callbacks``: a
    collection runs other programs' callbacks (hypothesis's, pytest's), where an injected interrupt
    would be swallowed by Python itself, not by Ember."""
    enabled, callbacks = gc.isenabled(), list(gc.callbacks)
    gc.disable()
    gc.callbacks.clear()
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(None)
        gc.callbacks.extend(callbacks)
        if enabled:
            gc.enable()


def _count_calls(optimizer: str) -> int:
    model = _model(optimizer)
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        count += 1

    with _traced(tracer):
        _fit(model)
    return count


def _where(frame) -> str:
    chain = []
    while frame is not None and len(chain) < 4:
        chain.append(f"{frame.f_code.co_name} ({pathlib.Path(frame.f_code.co_filename).name}:{frame.f_lineno})")
        frame = frame.f_back
    return " < ".join(chain)


def _interrupted_fit(optimizer: str, n: int):
    """Fit with a KeyboardInterrupt raised on entering the n-th Python function.

    Returns ``(model, raised, where)``: whether the interrupt reached the caller, and the
    function it was raised in.
    """
    model = _model(optimizer)
    calls = 0
    where = "nowhere (fit ended first)"

    def tracer(frame, event, arg):
        nonlocal calls, where
        calls += 1
        if calls == n:
            where = _where(frame)
            raise KeyboardInterrupt(f"injected at call {n}")

    try:
        with _traced(tracer):
            _fit(model)
    except KeyboardInterrupt:
        return model, True, where
    return model, False, where


@pytest.mark.parametrize("optimizer", ["adam", "sgd_momentum"])
def test_keyboard_interrupt_anywhere_leaves_whole_steps(backend, optimizer):
    _check_interrupts_leave_whole_steps(backend, optimizer)


@pytest.mark.parametrize("optimizer", ["adam", "sgd_momentum"])
def test_keyboard_interrupt_in_torch_copy_path_leaves_whole_steps(torch_backend, optimizer, monkeypatch, torch_on_cpu):
    """torch fit's copy path (new tensors each step: constraints, other optimizers; forced here)."""
    routed = force_copy_path(monkeypatch, "torch")
    _check_interrupts_leave_whole_steps("torch", optimizer)
    assert routed, "fit did not take the copy path"


def _check_the_sigint_lands_after_the_fourth_step(optimizer, reference, raised_at):
    """A fit whose in-place write raises a real SIGINT in the 4th step (``raised_at`` records it) stops
    with exactly 4 whole steps and the handlers restored; a later fit runs as usual."""
    handler = signal.getsignal(signal.SIGINT)
    model = _model(optimizer)
    with pytest.raises(KeyboardInterrupt):
        _fit(model)
    assert raised_at == [3]
    assert _steps_taken(reference, _train_state(model)) == 4  # the interrupted step finished, no more ran
    assert signal.getsignal(signal.SIGINT) is handler  # the handlers are back
    model = _model(optimizer)
    _fit(model)
    assert _steps_taken(reference, _train_state(model)) == len(reference) - 1


@pytest.mark.parametrize("optimizer", ["adam", "sgd_momentum"])
def test_real_sigint_during_torch_in_place_write_interrupts_after_the_step(torch_backend, optimizer, monkeypatch,
                                                                             torch_on_cpu):
    """A real Ctrl-C (SIGINT) arriving while torch's fit writes params and slots in place is held until
    the step is recorded: the interrupt reaches the caller with a whole number of steps taken."""
    import torch

    from ember.backends.torch import optim

    reference = _reference(optimizer)
    write, raised_at = optim.write_in_place, []

    def write_with_sigint(plan):
        kind, params, grads, slots, scratch, shrink, constants, iterations = plan
        if raised_at or int(iterations) != 3:
            return write(plan)
        raised_at.append(3)  # the 4th step: its first tensor, a Ctrl-C, then the other tensors and the counter

        def part(tensors, counter):
            return (kind, params[tensors], grads[tensors], [values[tensors] for values in slots],
                    None if scratch is None else scratch[tensors],
                    ([p for p in shrink[0] if any(p is q for q in params[tensors])], shrink[1]), constants, counter)

        write(part(slice(0, 1), torch.zeros((), dtype=iterations.dtype)))
        signal.raise_signal(signal.SIGINT)  # its handler would run right here (a call): between two tensors
        write(part(slice(1, None), iterations))

    monkeypatch.setattr(optim, "write_in_place", write_with_sigint)
    _check_the_sigint_lands_after_the_fourth_step(optimizer, reference, raised_at)
    assert torch.is_grad_enabled()


@pytest.mark.parametrize("optimizer", ["adam", "sgd_momentum"])
def test_keyboard_interrupt_in_numpy_copy_path_leaves_whole_steps(optimizer, monkeypatch):
    """NumPy fit's copy path (new arrays each step: constraints, other optimizers; forced here): the
    given state stays intact until the step returns."""
    routed = force_copy_path(monkeypatch, "numpy")
    _check_interrupts_leave_whole_steps("numpy", optimizer)
    assert routed, "fit did not take the copy path"


def _split_numpy_write(write, plan, between):
    """NumPy's in-place write of ``plan`` in two parts, the first parameter, then ``between()``, then the
    other parameters and the step counter (the plan's layout: see ``optim.plan_in_place``)."""
    kind, params, grads, slots, scratch, shrink, constants, iterations = plan

    def part(arrays, counter):
        return (kind, params[arrays], grads[arrays], [values[arrays] for values in slots], scratch[arrays],
                shrink[arrays], constants, counter)

    write(part(slice(0, 1), np.zeros((), iterations.dtype)))
    between()
    write(part(slice(1, None), iterations))


@pytest.mark.parametrize("optimizer", ["adam", "sgd_momentum"])
def test_real_sigint_during_numpy_in_place_write_interrupts_after_the_step(optimizer, monkeypatch):
    """A real Ctrl-C (SIGINT) arriving while NumPy's fit writes params and slots in place is held until
    the step is recorded: the interrupt reaches the caller with a whole number of steps taken."""
    from ember.backends.numpy import optim

    reference = _reference(optimizer)
    write, raised_at = optim.write_in_place, []

    def write_with_sigint(plan):
        if raised_at or int(plan[-1]) != 3:
            return write(plan)
        raised_at.append(3)  # the 4th step: its first array, a Ctrl-C, then the other arrays and the counter
        _split_numpy_write(write, plan, lambda: signal.raise_signal(signal.SIGINT))  # handled here if not held

    monkeypatch.setattr(optim, "write_in_place", write_with_sigint)
    _check_the_sigint_lands_after_the_fourth_step(optimizer, reference, raised_at)


@pytest.mark.parametrize("optimizer", ["adam", "adam_amsgrad", "adamw", "sgd", "sgd_momentum", "sgd_nesterov_wd"])
def test_numpy_in_place_write_enters_no_python_function(optimizer):
    """From its first write to its last, NumPy's in-place update runs ufuncs only, floating-point errors
    included (logged, as fit sets NumPy's error state): no call event but its own."""
    from ember.backends.numpy import optim
    from ember.backends.numpy.float_errors import DeferredFloatErrors

    opt = {"adam": lambda: ember.optimizers.Adam(0.1), "adam_amsgrad": lambda: ember.optimizers.Adam(0.1, amsgrad=True),
           "adamw": lambda: ember.optimizers.AdamW(0.1, weight_decay=0.1), "sgd": lambda: ember.optimizers.SGD(10.0),
           "sgd_momentum": lambda: ember.optimizers.SGD(10.0, momentum=0.9),
           "sgd_nesterov_wd": lambda: ember.optimizers.SGD(10.0, momentum=0.9, nesterov=True, weight_decay=0.01),
           }[optimizer]()
    params = {"w": np.array([1.0, 2.0, 3e38], np.float32), "b": np.zeros(2, np.float32)}
    state = opt.init(params)
    grads = {"w": np.array([1.0, np.inf, 3e38], np.float32), "b": np.array([np.nan, 1.0], np.float32)}
    plan = opt.plan_in_place(grads, state, params)  # 3e38 * 10, 3e38 ** 2: floating-point errors
    entered = []
    errors = DeferredFloatErrors()
    errors.defer()
    sys.settrace(lambda frame, event, arg: entered.append(frame.f_code.co_name))
    try:
        optim.write_in_place(plan)
    finally:
        sys.settrace(None)
        logged = errors.restore()
    assert entered == ["write_in_place"]
    assert logged and int(state["iterations"]) == 1


@pytest.mark.parametrize("mode", ["raise", "warn"])
def test_floating_point_error_in_numpy_in_place_write_is_reported_after_the_step(mode, monkeypatch):
    """An overflow in NumPy's in-place update is reported as NumPy's error state asks (a
    FloatingPointError, a RuntimeWarning) once the step is complete and recorded, never half-way."""
    from ember.backends.numpy import optim

    written = []
    write = optim.write_in_place
    monkeypatch.setattr(optim, "write_in_place", lambda plan: written.append(1) or write(plan))
    model = ember.Sequential([ember.Input((4,)), layers.Dense(3, name="d")])
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.SGD(3e38), loss=ember.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    x = np.full((4, 4), 100.0, np.float32)  # gradients of about 100: g * 3e38 overflows float32
    y = np.array([0, 1, 2, 0])
    with np.errstate(over=mode, invalid="ignore"):
        outer = np.geterr()
        if mode == "raise":
            with pytest.raises(FloatingPointError, match="overflow encountered in multiply"):
                model.fit(x, y, batch_size=4, epochs=1, verbose=0)
        else:
            with pytest.warns(RuntimeWarning, match="overflow encountered in multiply"):
                model.fit(x, y, batch_size=4, epochs=1, verbose=0)
        assert np.geterr() == outer and np.geterrcall() is None  # the caller's error state is back
    assert written == [1]
    assert int(model._training.opt_state["iterations"]) == 1  # the step was taken, whole
    kernel = ops.to_numpy(model.state["params"]["d"]["kernel"])
    assert np.isinf(kernel).all()  # every param was written (the overflowed update)


def _check_interrupts_leave_whole_steps(backend, optimizer):
    reference = _reference(optimizer)
    _fit(_model(optimizer))  # warm up: imports and compiled steps are not part of the count
    total = _count_calls(optimizer)
    stride = max(1, total // POINTS)
    seen_k = set()
    for n in range(1, total, stride):
        model, raised, where = _interrupted_fit(optimizer, n)
        assert raised, f"the KeyboardInterrupt injected at call {n} of {total}, in {where}, was swallowed"
        k = _steps_taken(reference, _train_state(model))
        assert k is not None, f"{backend}: interrupt at call {n} of {total}, in {where}, left a torn state"
        seen_k.add(k)
        assert ember.get_backend() == backend
        if backend == "torch":  # torch's global grad mode is restored (no_grad exits can be interrupted)
            import torch

            assert torch.is_grad_enabled(), f"interrupt at call {n}, in {where}, left torch's grad mode off"
    # The points are spread over the whole fit: interrupted runs ended after many different step counts.
    assert {0, len(reference) - 1} <= seen_k and len(seen_k) > len(reference) // 2, sorted(seen_k)
    # Nothing global was left half-changed: a clean fit afterwards gives the reference result.
    model = _model(optimizer)
    _fit(model)
    assert _steps_taken(reference, _train_state(model)) == len(reference) - 1
    assert not recording.is_recording()


class _FailAt(ember.callbacks.Callback):
    def __init__(self, hook: str, epoch: int, batch: int):
        super().__init__()
        self.hook, self.at_epoch, self.at_batch = hook, epoch, batch
        self.epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch
        if self.hook == "on_epoch_begin" and epoch == self.at_epoch:
            raise RuntimeError("callback failed")

    def on_epoch_end(self, epoch, logs=None):
        if self.hook == "on_epoch_end" and epoch == self.at_epoch:
            raise RuntimeError("callback failed")

    def on_train_batch_begin(self, batch, logs=None):
        if self.hook == "on_train_batch_begin" and (self.epoch, batch) == (self.at_epoch, self.at_batch):
            raise RuntimeError("callback failed")

    def on_train_batch_end(self, batch, logs=None):
        if self.hook == "on_train_batch_end" and (self.epoch, batch) == (self.at_epoch, self.at_batch):
            raise RuntimeError("callback failed")


@pytest.mark.parametrize("hook, epoch, batch, steps", [
    ("on_epoch_begin", 0, 0, 0), ("on_epoch_begin", 1, 0, 3), ("on_train_batch_begin", 0, 0, 0),
    ("on_train_batch_begin", 1, 2, 5), ("on_train_batch_end", 0, 0, 1), ("on_train_batch_end", 1, 1, 5),
    ("on_epoch_end", 0, 0, 3), ("on_epoch_end", 1, 0, 6),
])
def test_exception_from_a_callback_leaves_whole_steps(backend, hook, epoch, batch, steps):
    reference = _reference("adam")
    model = _model("adam")
    with pytest.raises(RuntimeError, match="callback failed"):
        _fit(model, [_FailAt(hook, epoch, batch)])
    assert _steps_taken(reference, _train_state(model)) == steps


@functools.cache
def _cleanup_lines(path: str) -> frozenset:
    """Lines inside ``finally:`` and ``except`` blocks: an interrupt there is a second one, during
    cleanup, which no Python code can make safe (and CPython delivers a signal only at a call or a
    backward jump, never on a plain assignment line)."""
    lines = set()
    for node in ast.walk(ast.parse(pathlib.Path(path).read_text())):
        if isinstance(node, ast.Try):
            blocks = node.finalbody + [stmt for handler in node.handlers for stmt in handler.body]
            for stmt in blocks:
                lines.update(range(stmt.lineno, stmt.end_lineno + 1))
    return frozenset(lines)


def _interrupt_line(path: str, n: int):
    """A tracer raising KeyboardInterrupt at the n-th line run in ``path`` (cleanup lines excepted)."""
    skip = _cleanup_lines(path)
    lines = 0

    def local(frame, event, arg):
        nonlocal lines
        if event == "line" and frame.f_lineno not in skip:
            lines += 1
            if lines == n:
                raise KeyboardInterrupt
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code.co_filename == path else None

    return tracer


@pytest.mark.parametrize("backend_name", ["numpy", "mlx"])  # the backends whose tapes record ops
@pytest.mark.parametrize("module", [recording, calls, tape_module, graph], ids=lambda m: m.__name__.split(".")[-1])
def test_interrupt_at_any_line_of_the_tape_leaves_it_usable(backend_name, module):
    """An interrupt inside the tape's bookkeeping (at line granularity) must not break later tapes."""
    if not ember.backends.is_installed(backend_name):
        pytest.skip(f"backend {backend_name!r} is not installed")
    ember.set_backend(backend_name)
    x = ops.convert_to_tensor(np.array([1.0, 2.0, 3.0], dtype="float32"))

    def gradient():
        with ember.GradientTape() as tape:
            tape.watch(x)
            y = ops.sum(ops.multiply(ops.exp(x), x))
        return tape.gradient(y, x)

    expected = np.exp([1.0, 2.0, 3.0]) * (1.0 + np.array([1.0, 2.0, 3.0]))
    n = 0
    while True:
        n += 1
        try:
            with _traced(_interrupt_line(module.__file__, n)):
                gradient()
            break  # n is past the last line run: every line was tried
        except KeyboardInterrupt:
            pass
        np.testing.assert_allclose(ops.to_numpy(gradient()), expected, **FLOAT32)
        assert not recording.is_recording(), f"line {n} of {module.__name__}: an engine is left recording"
    assert n > 10, f"only {n - 1} lines of {module.__name__} ran"
