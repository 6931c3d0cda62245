"""The key training paths on a CUDA device: run only where torch sees one (skipped otherwise, with the reason).

These are the tests that need real CUDA hardware: pinned, non-blocking batch copies on a side
stream with prefetch (:mod:`ember.backends.torch.transfer`), the host-sync count without any
simulation, the checks kept on the device, and ``compile(cuda_graphs=True)``
(:mod:`ember.backends.torch.cuda_graphs`). Every result is compared with the same training on the
CPU (or, for CUDA graphs, with the eager step on the same GPU).
"""

from __future__ import annotations

import collections
import warnings

import numpy as np
import optree
import pytest

import ember
from ember import backends, layers, ops
from ember.training.nonfinite_loss import NonFiniteLossWarning
from tests.tolerances import FLOAT32_PAIR

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (torch sees none)")

# GPU and CPU kernels sum in different orders: after a few Adam steps the float32 weights agree to
# ~1e-5 relative, a few ulps more than one op's rounding (hence 1e-4 here, 1e-5 for GPU vs GPU).
CROSS_DEVICE = {"rtol": 1e-4, "atol": 1e-5}


@pytest.fixture
def cuda(torch_backend):
    previous = backends.default_device()
    backends.set_default_device("cuda")
    try:
        yield "cuda:0"
    finally:
        backends.set_default_device(previous)


def _data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 6)).astype("float32")
    return x, (np.arange(n) % 3).astype("int64")


def _model(*extra, optimizer="adam", **compile_kwargs):
    model = ember.Sequential([ember.Input((6,)), layers.Dense(16, activation="relu"), *extra, layers.Dense(3)])
    model.build(seed=0)
    model.compile(optimizer=optimizer, loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], seed=0, **compile_kwargs)
    return model


def _weights(model):
    return [np.asarray(w) for w in model.get_weights()]


def _on_cpu(train):
    backends.set_default_device("cpu")
    try:
        return train()
    finally:
        backends.set_default_device("cuda")


def _assert_same_on_both_devices(train):
    """``train()`` returns (weights, then any arrays): on the GPU and on the CPU they agree to CROSS_DEVICE."""
    on_gpu = train()
    on_cpu = _on_cpu(train)
    for a, b in zip(on_gpu[0], on_cpu[0]):
        np.testing.assert_allclose(a, b, **CROSS_DEVICE)
    for a, b in zip(on_gpu[1:], on_cpu[1:]):
        np.testing.assert_allclose(a, b, **CROSS_DEVICE)


@pytest.mark.parametrize("source", ["arrays", "generator", "dataloader"])
def test_fit_evaluate_predict_on_cuda_match_the_cpu(cuda, source):
    x, y = _data()

    def train():
        model = _model()
        if source == "arrays":
            history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
        elif source == "generator":
            history = model.fit([(x[i:i + 8], y[i:i + 8]) for i in range(0, 40, 8)], epochs=2, verbose=0)
        else:
            dataset = torch.utils.data.TensorDataset(torch.as_tensor(x), torch.as_tensor(y))
            history = model.fit(torch.utils.data.DataLoader(dataset, batch_size=8), epochs=2, verbose=0)
        assert ops.get_device(optree.tree_leaves(model.state["params"])[0]).startswith(
            "cuda" if backends.default_device() != "cpu" else "cpu")
        return (_weights(model), history.history["loss"], model.evaluate(x, y, batch_size=7, verbose=0),
                model.predict(x, batch_size=7, verbose=0))

    _assert_same_on_both_devices(train)


def test_generator_batches_arrive_through_pinned_non_blocking_copies(cuda):
    transfer = backends.current().batch_transfer(cuda)
    assert transfer is not None and transfer.plan.pin_memory and transfer.plan.non_blocking
    host = torch.arange(6.0).reshape(2, 3)
    moved = transfer.ready(transfer.issue([host, None]))
    assert moved[0].device.type == "cuda" and moved[1] is None
    torch.testing.assert_close(moved[0].cpu(), host)
    fetched = transfer.fetch([moved[0] * 2])
    transfer.host_ready()
    assert fetched[0].device.type == "cpu" and fetched[0].is_pinned()
    torch.testing.assert_close(fetched[0], host * 2)


SYNC_METHODS = ("item", "__bool__", "__float__", "__int__", "__index__", "cpu", "numpy", "tolist")


def _count_syncs(monkeypatch, action, *args, **kwargs):
    counts = collections.Counter()
    active = [False]
    for name in SYNC_METHODS:
        method = getattr(torch.Tensor, name)

        def counted(self, *args, _name=name, _method=method, **kwargs):
            if active[0] and self.device.type == "cuda":
                counts[_name] += 1
            return _method(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    active[0] = True
    try:
        action(*args, **kwargs)
    finally:
        active[0] = False
    return sum(counts.values())


def test_host_syncs_per_fit_do_not_grow_with_the_steps(cuda, monkeypatch):
    """The count of tests/training/test_host_syncs.py, on a real device, counting reads of CUDA tensors."""
    counts = {}
    for steps in (3, 12):
        x, y = _data(steps * 4)
        model = _model()
        model.fit(x, y, batch_size=4, epochs=1, verbose=0)
        counts[steps] = _count_syncs(monkeypatch, model.fit, x, y, batch_size=4, epochs=2, verbose=0)
    assert counts[3] == counts[12]


def test_a_bad_label_on_cuda_raises_at_the_epoch_end_naming_its_batch(cuda):
    x, y = _data(24)
    y[13] = 7
    model = _model()
    with pytest.raises(ValueError, match=r"fit: epoch 0, batch 1 \(0-based\).*received 7"):
        model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)


def test_a_nan_loss_on_cuda_warns_naming_its_batch(cuda):
    x, y = _data(24)
    x[17, 0] = np.nan
    with pytest.warns(NonFiniteLossWarning, match=r"epoch 0, batch 2 \(0-based\)"):
        _model().fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_cuda_graphs_train_the_same_weights_as_the_eager_step(cuda, optimizer):
    """Warm-up, capture, replays, a smaller last batch (eager on the static tensors) and a learning
    rate changed by a callback between epochs (copied into the graph's tensors)."""
    x, y = _data(44)  # 5 batches of 8 and one of 4

    def train(**kwargs):
        model = _model(optimizer=optimizer, **kwargs)
        schedule = ember.callbacks.LearningRateScheduler(lambda epoch, lr: 0.01 / (epoch + 1))
        history = model.fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=[schedule])
        return _weights(model), history.history["loss"], history.history["accuracy"]

    eager = train()
    graphed = train(cuda_graphs=True)
    # The same kernels on the same GPU; cuBLAS may pick another algorithm under capture: float32 rounding.
    # Gradients FLOAT32_PAIR apart move each update (Adam's ~lr in size, SGD's lr |g| <= lr) by <= 2e-5 of
    # it: over 6 steps at each of lr 0.01, 0.005, 0.0033 that adds up to 2.2e-6 absolute in the weights.
    drift = 6 * (0.01 + 0.005 + 0.01 / 3) * FLOAT32_PAIR["rtol"]
    for a, b in zip(graphed[0], eager[0]):
        np.testing.assert_allclose(a, b, rtol=FLOAT32_PAIR["rtol"], atol=FLOAT32_PAIR["atol"] + drift)
    # the losses: FLOAT32_PAIR, and the weights' drift times gradients summing to <= 10 over the weights
    np.testing.assert_allclose(graphed[1], eager[1], rtol=FLOAT32_PAIR["rtol"], atol=10 * drift)
    # exact: a flipped prediction would move an accuracy by 1/44, far beyond rounding; the counts are the same
    np.testing.assert_array_equal(graphed[2], eager[2])


def test_cuda_graphs_refuse_random_layers_before_the_first_step(cuda):
    model = _model(layers.Dropout(0.5), cuda_graphs=True)
    before = _weights(model)
    x, y = _data(16)
    with pytest.raises(NotImplementedError, match="random numbers in training.*cuda_graphs=False"):
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    for a, b in zip(_weights(model), before):
        np.testing.assert_array_equal(a, b)


def test_mixed_bfloat16_trains_on_cuda(cuda):
    """The dtype policy on the device the half types are built for: finite, decreasing loss."""
    previous = ember.mixed_precision.global_policy()
    ember.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        x, y = _data(64)
        with warnings.catch_warnings():
            warnings.simplefilter("error", NonFiniteLossWarning)
            history = _model().fit(x, y, batch_size=16, epochs=5, verbose=0)
    finally:
        ember.mixed_precision.set_global_policy(previous)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


@pytest.mark.parametrize("name", ["take", "take_along_axis", "gather", "getitem", "scatter", "scatter_update"])
def test_host_indices_out_of_range_raise_on_cuda_and_the_device_stays_usable(cuda, name):
    """Host indices are checked on the host before they are sent (no device sync, no device-side
    assert, which would leave the process's CUDA context unusable)."""
    from tests.ops.test_bad_input import _OUT_OF_BOUNDS

    with pytest.raises(IndexError, match=r"out of bounds for axis \d with size \d"):
        _OUT_OF_BOUNDS[name](lambda values: np.asarray(values, dtype=np.int32))
    assert ops.to_numpy(ops.add(ops.ones((2,)), 1.0)).tolist() == [2.0, 2.0]


@pytest.mark.parametrize("optimizer", [lambda: ember.optimizers.AdamW(0.01, weight_decay=0.1, amsgrad=True),
                                       lambda: ember.optimizers.SGD(0.05, momentum=0.9, nesterov=True,
                                                                    weight_decay=0.01)],
                         ids=["adamw_amsgrad", "sgd_nesterov_decay"])
def test_fit_writes_the_update_in_place_on_cuda_with_multi_tensor_kernels(cuda, optimizer, monkeypatch):
    """fit's update on CUDA goes straight into the state's tensors (no second copy of params and
    slots), all or nothing under held signals as on the CPU, with the CPU's numbers."""
    from ember.backends.torch import optim

    kinds = []
    write = optim.write_in_place
    monkeypatch.setattr(optim, "write_in_place", lambda plan: kinds.append(plan[0]) or write(plan))
    x, y = _data()

    def train():
        model = _model(optimizer=optimizer())
        model.fit(x, y, batch_size=8, epochs=2, verbose=0)
        return _weights(model)

    on_gpu = train()
    assert set(kinds) == {"adam_foreach" if "adam" in repr(optimizer()).lower() else "sgd_foreach"}
    assert len(kinds) == 10  # 5 steps per epoch, 2 epochs
    for a, b in zip(on_gpu, _on_cpu(train)):
        np.testing.assert_allclose(a, b, **CROSS_DEVICE)


def _tokens(n=32, length=12, vocabulary=40, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, vocabulary, size=(n, length)).astype("int64")
    return x, np.roll(x, -1, axis=1)  # next-token targets


def _gpt(remat=False, policy=None):
    """A one-block causal decoder (the fused attention path: ``use_causal_mask``, no T x T mask)."""
    ember.mixed_precision.set_global_policy(policy)
    try:
        inputs = ember.Input((12,), dtype="int64")
        h = layers.Embedding(40, 32)(inputs)
        with ember.RematScope(mode="full" if remat else None):
            a = layers.MultiHeadAttention(num_heads=4, key_dim=8)(h, h, use_causal_mask=True)
            h = layers.LayerNormalization()(layers.Add()([h, a]))
            h = layers.Add()([h, layers.Dense(32)(layers.Dense(64, activation="gelu")(h))])
        outputs = layers.Dense(40)(h)
        model = ember.Model(inputs, outputs)
    finally:
        ember.mixed_precision.set_global_policy(None)
    model.build(seed=0)
    model.compile(optimizer="adam", loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True), seed=0)
    return model


def test_causal_attention_trains_on_cuda_as_on_the_cpu(cuda):
    """The fused attention (torch's scaled_dot_product_attention, is_causal) forward and backward on a GPU."""
    x, y = _tokens()

    def train():
        model = _gpt()
        history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        return _weights(model), history.history["loss"], model.predict(x, batch_size=8, verbose=0)

    _assert_same_on_both_devices(train)


def test_remat_on_cuda_trains_as_the_plain_model(cuda):
    """Rematerialized blocks (torch.utils.checkpoint) recompute the same forward on the GPU: same weights."""
    x, y = _tokens()
    plain, remat = _gpt(), _gpt(remat=True)
    plain.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    remat.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    # The same kernels on one device, but the embedding's backward adds rows with atomics (any order):
    # the cross-device bound, not float32's few ulps.
    for a, b in zip(_weights(remat), _weights(plain)):
        np.testing.assert_allclose(a, b, **CROSS_DEVICE)


def test_mixed_bfloat16_attention_learns_on_cuda(cuda):
    """mixed_bfloat16 on the GPU: bfloat16 activations through the fused attention, float32 weights, and the
    loss falls as float32's does (bfloat16 keeps 8 significant bits: within 5 % of float32's loss here)."""
    x, y = _tokens()
    mixed, full = _gpt(policy="mixed_bfloat16"), _gpt()
    assert str(ops.dtype(mixed.predict(x[:2], verbose=0))) in ("float32", "bfloat16")
    mixed_loss = mixed.fit(x, y, batch_size=8, epochs=6, shuffle=False, verbose=0).history["loss"]
    full_loss = full.fit(x, y, batch_size=8, epochs=6, shuffle=False, verbose=0).history["loss"]
    assert all(str(w.dtype) == "float32" for w in _weights(mixed))
    assert np.all(np.isfinite(mixed_loss)) and mixed_loss[-1] < mixed_loss[0]
    np.testing.assert_allclose(mixed_loss[-1], full_loss[-1], rtol=0.05)  # bfloat16's 2^-8 per op, compounded
