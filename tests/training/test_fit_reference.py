"""fit against independent references: a hand-written torch loop (loss trajectory) and digits.

The reference loop is written out in torch: the same MLP (Keras kernel layout ``(in, out)``,
so ``h = x @ kernel + bias`` needs no transpose), the same initial weights copied from the
Ember model, softmax cross-entropy on logits, and the optimizer update written by hand with
Keras's formulas (SGD: ``p -= lr * g``; Adam: ``m += (g - m)(1 - b1)``, ``v += (g^2 - v)(1 - b2)``,
``p -= lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)``).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import layers, ops
from tests.helpers import needs, optional_import
from tests.tolerances import FLOAT32

torch = optional_import("torch")  # the reference loop; None on a core-only install, where those tests skip

STEPS = 50


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 6)).astype(np.float32)
    y = rng.integers(0, 3, size=32).astype(np.int64)
    return x, y


def _model():
    model = ember.Sequential([ember.Input((6,)), layers.Dense(16, activation="relu", name="h1"),
                              layers.Dense(16, activation="tanh", name="h2"), layers.Dense(3, name="out")])
    model.build(seed=3)
    return model


def _reference(state, x, y, kind, lr):
    """The loss before each of STEPS updates, by a hand-written torch loop (float32)."""
    names = ("h1", "h2", "out")
    params = []
    for name in names:
        params.append(torch.tensor(ops.to_numpy(state["params"][name]["kernel"]), requires_grad=True))
        params.append(torch.tensor(ops.to_numpy(state["params"][name]["bias"]), requires_grad=True))
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    m = [torch.zeros_like(p) for p in params]
    v = [torch.zeros_like(p) for p in params]
    b1, b2, eps = 0.9, 0.999, 1e-7
    losses = []
    for t in range(1, STEPS + 1):
        h = torch.relu(xt @ params[0] + params[1])
        h = torch.tanh(h @ params[2] + params[3])
        logits = h @ params[4] + params[5]
        loss = torch.nn.functional.cross_entropy(logits, yt)
        grads = torch.autograd.grad(loss, params)
        losses.append(float(loss.detach()))
        with torch.no_grad():
            for i, (p, g) in enumerate(zip(params, grads)):
                if kind == "sgd":
                    p -= lr * g
                else:
                    m[i] += (g - m[i]) * (1 - b1)
                    v[i] += (g * g - v[i]) * (1 - b2)
                    alpha = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
                    p -= alpha * m[i] / (torch.sqrt(v[i]) + eps)
    return np.array(losses)


def _optimizer(kind, lr):
    return ember.optimizers.SGD(lr) if kind == "sgd" else ember.optimizers.Adam(lr, epsilon=1e-7)


@needs("torch")
@pytest.mark.parametrize("kind,lr", [("sgd", 0.1), ("adam", 0.01)])
def test_fit_loss_trajectory_matches_handwritten_torch_loop(backend, kind, lr):
    x, y = _data()
    model = _model()
    expected = _reference(model.state, x, y, kind, lr)
    model.compile(optimizer=_optimizer(kind, lr), loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True))
    # One batch per epoch: each epoch's loss is the loss of one step (before its update).
    history = model.fit(x, y, batch_size=32, epochs=STEPS, shuffle=False, verbose=0)
    # float32 on both sides. With rounding errors as independent (Higham & Mary 2019), a loss (~100 roundings) is
    # within 6 sqrt(100) u = 3.6e-6 per side; each update moves by lr times its gradients' 3.6e-6 and the 50 steps
    # add as a random walk: sqrt(50) * 0.1 * 3.6e-6 |g| = 2.5e-6 |g| in a parameter, < 1e-6 in the loss. 2e-5.
    np.testing.assert_allclose(history.history["loss"], expected, rtol=2e-5, atol=1e-6)


@needs("torch")
@pytest.mark.parametrize("kind,lr", [("sgd", 0.1), ("adam", 0.01)])
def test_trainer_train_step_trajectory_matches_handwritten_torch_loop(backend, kind, lr):
    x, y = _data()
    model = _model()
    expected = _reference(model.state, x, y, kind, lr)
    trainer = ember.Trainer(model, optimizer=_optimizer(kind, lr),
                            loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True))
    state = trainer.init_state(seed=0)
    losses = []
    for _ in range(STEPS):
        state = trainer.reset_metrics(state)
        state, logs = trainer.train_step(state, (x, y))
        losses.append(float(ops.to_numpy(logs["loss"])))
    np.testing.assert_allclose(losses, expected, rtol=2e-5, atol=1e-6)  # as in the test above


def test_fit_learns_digits(backend):
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    x, y = x[order], y[order]
    split = int(0.75 * len(x))
    model = ember.Sequential([ember.Input((64,)), layers.Dense(64, activation="relu"), layers.Dense(10)])
    model.compile(optimizer=ember.optimizers.Adam(0.005),
                  loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"], seed=0)
    model.fit(x[:split], y[:split], batch_size=32, epochs=15, verbose=0)
    result = model.evaluate(x[split:], y[split:], verbose=0, return_dict=True)
    assert result["accuracy"] >= 0.95, result
    # Independent check of the metric: accuracy recomputed from predict with NumPy.
    predicted = np.argmax(model.predict(x[split:], verbose=0), axis=-1)
    np.testing.assert_allclose(result["accuracy"], np.mean(predicted == y[split:]), **FLOAT32)  # a float32 mean
