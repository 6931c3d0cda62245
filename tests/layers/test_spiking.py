"""Spiking layers: surrogates, LIF / ALIF / Synaptic cells and layers, encoders, losses.

Oracles: snntorch (``surrogate``, ``Leaky``, ``RLeaky``, ``Synaptic``, ``spikegen``,
``functional``) driven with the same weights and inputs (torch float32, autograd through
snntorch for the gradients); the derivatives of the smooth surrogate functions by central
differences in NumPy float64; a NumPy float64 transcription of the ALIF equations.
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np
import pytest

import ember
from ember import layers, ops, wirings
from ember.layers.spiking import encoders, losses, spike_times, surrogates
from tests.tolerances import FLOAT32_PAIR, FLOAT64

# The references: snntorch (and torch under it). Without them (a core-only install) the file skips.
torch = pytest.importorskip("torch")
snntorch = pytest.importorskip("snntorch")
snn_functional = pytest.importorskip("snntorch.functional")
spikegen = pytest.importorskip("snntorch.spikegen")
snn_surrogate = pytest.importorskip("snntorch.surrogate")

T, BATCH, FEATURES, UNITS = 6, 3, 2, 4

# The smooth functions whose derivatives the surrogates are.
SMOOTH = {
    "fast_sigmoid": lambda x, k: x / (1 + k * np.abs(x)),
    "atan": lambda x, a: np.arctan(np.pi / 2 * a * x) / np.pi + 0.5,
    "straight_through": lambda x, _: x,
    "triangle": lambda x, w: np.where(np.abs(x) >= w, (x > 0).astype(float),
                                      np.where(x < 0, (1 + x / w) ** 2 / 2, 1 - (1 - x / w) ** 2 / 2)),
}
SNNTORCH = {"fast_sigmoid": lambda s: snn_surrogate.fast_sigmoid(slope=s),
            "atan": lambda s: snn_surrogate.atan(alpha=s),
            "straight_through": lambda s: snn_surrogate.straight_through_estimator()}


def _grad(fn, x):
    return ops.to_numpy(ember.grad(lambda v: ops.sum(fn(v)))(x))


# ------------------------------------------------------------------ surrogates


@pytest.mark.parametrize("kind,scale", [("fast_sigmoid", 25.0), ("fast_sigmoid", 3.0), ("atan", 2.0),
                                        ("straight_through", None)])
def test_surrogates_match_snntorch(backend, kind, scale):
    x = np.linspace(-2.0, 2.0, 41).astype(np.float32)
    upstream = np.random.default_rng(0).normal(size=x.shape).astype(np.float32)
    xt = torch.tensor(x, requires_grad=True)
    out_t = SNNTORCH[kind](scale if scale is not None else 1.0)(xt)
    (out_t * torch.tensor(upstream)).sum().backward()
    spike = surrogates.Surrogate(kind, scale)
    xe = ops.convert_to_tensor(x)
    np.testing.assert_array_equal(ops.to_numpy(spike(xe)), out_t.detach().numpy())
    grad = ops.to_numpy(ember.grad(lambda v: ops.sum(ops.multiply(spike(v), upstream)))(xe))
    np.testing.assert_allclose(grad, xt.grad.numpy(), **FLOAT32_PAIR)


@pytest.mark.parametrize("kind,scale", [("fast_sigmoid", 4.0), ("atan", 2.0), ("straight_through", None),
                                        ("triangle", 1.5)])
def test_surrogate_gradient_is_derivative_of_its_smooth_function(backend, kind, scale):
    dtype = "float64"
    x = np.array([-3.0, -1.2, -0.3, -0.05, 0.07, 0.4, 1.1, 2.5])  # away from the kinks at 0 and +-width
    spike = surrogates.Surrogate(kind, scale)
    h = 1e-6
    # central differences of the float64 smooth function: truncation h^2 f'''/6 <= 1e-12 * 25^3, rounding 1e-16/h
    numeric = (SMOOTH[kind](x + h, spike.scale) - SMOOTH[kind](x - h, spike.scale)) / (2 * h)
    grad = _grad(spike, ops.convert_to_tensor(x.astype(dtype)))
    # the difference quotient's error: <= 2e-8 from the bound above
    np.testing.assert_allclose(grad, numeric, rtol=1e-7, atol=1e-8)
    np.testing.assert_array_equal(ops.to_numpy(spike(ops.convert_to_tensor(x.astype(dtype)))), (x > 0).astype(dtype))


def test_surrogate_arguments_are_checked():
    with pytest.raises(ValueError, match="kind must be one of"):
        surrogates.Surrogate("sigmoidal")
    with pytest.raises(ValueError, match="scale must be a positive finite number"):
        surrogates.fast_sigmoid(-1.0)
    with pytest.raises(ValueError, match="lif_bad: surrogate must be one of"):
        layers.LIFCell(3, surrogate="nope", name="lif_bad")


# ------------------------------------------------------------------ LIF / Synaptic against snntorch


def _inputs(seed=0):
    return (np.random.default_rng(seed).uniform(0.0, 1.5, size=(BATCH, T, FEATURES))).astype(np.float32)


def _snntorch_run(neuron, params, x, recurrent=False, synaptic=False):
    """Spikes and membranes (batch, time, units) of an snntorch neuron on x @ kernel + bias, and the
    gradients of sum(spk * a + mem * b) with respect to the kernel and bias."""
    kernel = torch.tensor(params["kernel"], requires_grad=True)
    bias = torch.tensor(params["bias"], requires_grad=True)
    if recurrent:
        neuron.recurrent.weight.data = torch.tensor(params["recurrent_kernel"]).T.clone()
        neuron.recurrent.bias.data.zero_()
    current = torch.tensor(x) @ kernel + bias
    state = {}
    spikes, mems = [], []
    for t in range(T):
        if synaptic:
            spk, state["syn"], state["mem"] = neuron(current[:, t], state.get("syn", torch.zeros(BATCH, UNITS)),
                                                     state.get("mem", torch.zeros(BATCH, UNITS)))
            mem = state["mem"]
        elif recurrent:
            spk, mem = neuron(current[:, t], state.get("spk", torch.zeros(BATCH, UNITS)),
                              state.get("mem", torch.zeros(BATCH, UNITS)))
            state["spk"], state["mem"] = spk, mem
        else:
            spk, mem = neuron(current[:, t], state.get("mem", torch.zeros(BATCH, UNITS)))
            state["mem"] = mem
        spikes.append(spk)
        mems.append(mem)
    spk, mem = torch.stack(spikes, 1), torch.stack(mems, 1)
    a, b = _weights()
    (spk * torch.tensor(a) + mem * torch.tensor(b)).sum().backward()
    return spk.detach().numpy(), mem.detach().numpy(), kernel.grad.numpy(), bias.grad.numpy()


def _weights():
    rng = np.random.default_rng(7)
    return rng.normal(size=(BATCH, T, UNITS)).astype(np.float32), rng.normal(size=(BATCH, T, UNITS)).astype(np.float32)


def _ember_run(layer, x, seed=0):
    state = layer.build((None, T, FEATURES), seed=seed)
    state["params"]["bias"] = ops.convert_to_tensor(np.linspace(-0.1, 0.2, UNITS).astype(np.float32))
    state["params"]["kernel"] = ops.abs(state["params"]["kernel"])  # excitatory inputs: the neurons fire
    a, b = _weights()

    def objective(params):
        out = layer.apply({**state, "params": params}, ops.convert_to_tensor(x))[0]
        spk, mem = ops.split(out, 2, axis=-1)
        return ops.add(ops.sum(ops.multiply(spk, a)), ops.sum(ops.multiply(mem, b))), out

    (_, out), grads = ember.value_and_grad(objective, has_aux=True)(state["params"])
    out = ops.to_numpy(out)
    params = {k: ops.to_numpy(v) for k, v in state["params"].items()}
    return out[..., :UNITS], out[..., UNITS:], {k: ops.to_numpy(v) for k, v in grads.items()}, params


@pytest.mark.parametrize("reset", ["subtract", "zero", "none"])
def test_lif_matches_snntorch_leaky(backend, reset):
    x = _inputs()
    layer = layers.LIF(UNITS, beta=0.8, threshold=0.6, reset=reset, recurrent=False, surrogate="fast_sigmoid",
                       output="both", return_sequences=True)
    spk, mem, grads, params = _ember_run(layer, x)
    neuron = snntorch.Leaky(beta=0.8, threshold=0.6, reset_mechanism=reset, spike_grad=snn_surrogate.fast_sigmoid())
    spk_t, mem_t, g_kernel, g_bias = _snntorch_run(neuron, params, x)
    assert spk.sum() > 3 and (1 - spk).sum() > 3  # both spikes and silences happen
    np.testing.assert_array_equal(spk, spk_t)
    np.testing.assert_allclose(mem, mem_t, **FLOAT32_PAIR)
    np.testing.assert_allclose(grads["kernel"], g_kernel, **FLOAT32_PAIR)
    np.testing.assert_allclose(grads["bias"], g_bias, **FLOAT32_PAIR)


@pytest.mark.parametrize("reset", ["subtract", "none"])
def test_recurrent_lif_matches_snntorch_rleaky(backend, reset):
    x = _inputs(1)
    layer = layers.LIF(UNITS, beta=0.7, threshold=0.5, reset=reset, output="both", return_sequences=True)
    spk, mem, grads, params = _ember_run(layer, x, seed=3)
    neuron = snntorch.RLeaky(beta=0.7, threshold=0.5, reset_mechanism=reset, linear_features=UNITS, all_to_all=True)
    spk_t, mem_t, g_kernel, g_bias = _snntorch_run(neuron, params, x, recurrent=True)
    assert spk.sum() > 3 and (1 - spk).sum() > 3
    np.testing.assert_array_equal(spk, spk_t)
    np.testing.assert_allclose(mem, mem_t, **FLOAT32_PAIR)
    np.testing.assert_allclose(grads["kernel"], g_kernel, **FLOAT32_PAIR)


@pytest.mark.parametrize("reset", ["subtract", "zero"])
def test_synaptic_matches_snntorch(backend, reset):
    x = _inputs(2) * 0.5
    layer = layers.Synaptic(UNITS, alpha=0.6, beta=0.8, threshold=0.7, reset=reset, recurrent=False,
                            surrogate="atan", output="both", return_sequences=True)
    spk, mem, grads, params = _ember_run(layer, x, seed=1)
    neuron = snntorch.Synaptic(alpha=0.6, beta=0.8, threshold=0.7, reset_mechanism=reset)
    spk_t, mem_t, g_kernel, g_bias = _snntorch_run(neuron, params, x, synaptic=True)
    assert spk.sum() > 3 and (1 - spk).sum() > 3
    np.testing.assert_array_equal(spk, spk_t)
    np.testing.assert_allclose(mem, mem_t, **FLOAT32_PAIR)
    np.testing.assert_allclose(grads["kernel"], g_kernel, **FLOAT32_PAIR)


def _alif_reference(p, x, beta, thr, adaptation, rho):
    """NumPy float64 transcription of the ALIF equations (ember.layers.spiking.alif's docstring)."""
    mem, adapt, spk = (np.zeros((x.shape[0], UNITS)) for _ in range(3))
    spikes, mems = [], []
    for t in range(x.shape[1]):
        current = x[:, t] @ p["kernel"] + p["bias"] + spk @ p["recurrent_kernel"]
        crossed = thr + adaptation * adapt
        adapt = rho * adapt + (1 - rho) * spk
        mem = beta * mem + current - spk * crossed
        spk = (mem - (thr + adaptation * adapt) > 0).astype(float)
        spikes.append(spk)
        mems.append(mem)
    return np.stack(spikes, 1), np.stack(mems, 1)


def test_alif_matches_numpy_reference(backend):
    x = _inputs(3)
    layer = layers.ALIF(UNITS, beta=0.9, threshold=0.5, adaptation=0.8, rho=0.7, output="both",
                        return_sequences=True)
    state = layer.build((None, T, FEATURES), seed=2)
    out = ops.to_numpy(layer.apply(state, ops.convert_to_tensor(x))[0])
    p = {k: ops.to_numpy(v).astype(np.float64) for k, v in state["params"].items()}
    spk, mem = _alif_reference(p, x.astype(np.float64), 0.9, 0.5, 0.8, 0.7)
    assert spk.sum() > 3 and (1 - spk).sum() > 3
    np.testing.assert_array_equal(out[..., :UNITS], spk)
    np.testing.assert_allclose(out[..., UNITS:], mem, **FLOAT32_PAIR)
    plain = layers.ALIF(UNITS, beta=0.9, threshold=0.5, adaptation=0.0, output="both", return_sequences=True)
    lif = layers.LIF(UNITS, beta=0.9, threshold=0.5, output="both", return_sequences=True)
    np.testing.assert_allclose(ops.to_numpy(plain.apply(state, ops.convert_to_tensor(x))[0]),
                               ops.to_numpy(lif.apply(state, ops.convert_to_tensor(x))[0]), **FLOAT32_PAIR)


def test_refractory_period_blocks_input_and_spikes(backend):
    cell = layers.LIFCell(1, beta=1.0, threshold=1.0, refractory=2, recurrent=False, use_bias=False,
                          output="both")
    state = {"params": {"kernel": ops.ones((1, 1))}, "buffers": {}}
    out = ops.to_numpy(layers.RNN(cell, return_sequences=True).apply(state, ops.full((1, 8, 1), 2.0))[0])[0]
    # spike at 0 (U=2); steps 1, 2 refractory: U = 2 - 1 = 1, then 1; step 3: U = 3 spikes; ...
    assert out[:, 0].tolist() == [1, 0, 0, 1, 0, 0, 1, 0]
    assert out[:, 1].tolist() == [2, 1, 1, 3, 2, 2, 4, 3]
    assert cell.state_size == (1, 1, 1)


def test_wired_lif_uses_only_the_wirings_synapses(backend):
    wiring = wirings.AutoNCP(8, 2, seed=0)
    layer = layers.LIF(wiring, beta=0.5, threshold=0.2, output="membrane", return_sequences=True)
    state = layer.build((None, T, FEATURES), seed=0)
    grads = ember.grad(lambda p: ops.sum(layer.apply({**state, "params": p}, ops.convert_to_tensor(_inputs()))[0]))(
        state["params"])
    built = wiring.built(FEATURES)
    assert np.all(ops.to_numpy(grads["kernel"])[built.sensory_adjacency_matrix == 0] == 0)
    assert np.all(ops.to_numpy(grads["recurrent_kernel"])[built.adjacency_matrix == 0] == 0)
    assert np.any(ops.to_numpy(grads["kernel"]) != 0)
    assert layer.cell.output_size == 2 and layer.cell.state_size == (8, 8)


# ------------------------------------------------------------------ config, checkpoints, errors


SPIKING_LAYERS = [
    lambda: layers.LIF(wirings.AutoNCP(6, 2, seed=1), beta=0.7, refractory=1, surrogate=surrogates.triangle(0.5),
                       learn_beta=True, learn_threshold=True, return_sequences=True, name="lif"),
    lambda: layers.ALIF(4, adaptation=0.3, rho=0.8, output="both", name="alif"),
    lambda: layers.Synaptic(3, alpha=0.5, reset="zero", name="syn"),
]


@pytest.mark.parametrize("make", SPIKING_LAYERS)
def test_config_round_trip(make):
    layer = make()
    config = json.loads(json.dumps(layers.serialize(layer)))
    again = layers.deserialize(config)
    assert type(again) is type(layer) and again.get_config() == layer.get_config()
    cell = layer.cell
    assert type(cell).from_config(json.loads(json.dumps(cell.get_config()))).get_config() == cell.get_config()


def test_saved_model_loads_on_every_backend():
    x = _inputs(5)
    with ember.using_backend("numpy"):
        model = ember.Sequential([ember.Input((T, FEATURES)),
                                  layers.LIF(wirings.AutoNCP(6, 2, seed=1), beta=0.7, threshold=0.3,
                                             output="both", return_sequences=True, name="lif"),
                                  layers.ALIF(3, output="membrane", name="alif")])
        model.build(seed=0)
        expected = ops.to_numpy(model.predict_on_batch(ops.convert_to_tensor(x)))
        path = os.path.join(tempfile.mkdtemp(), "snn.h5")
        model.save(path)
    for name in ember.backends.available():
        with ember.using_backend(name):
            loaded = ember.load_model(path)
            assert loaded.layers[0].get_config() == model.layers[0].get_config()
            np.testing.assert_allclose(ops.to_numpy(loaded.predict_on_batch(ops.convert_to_tensor(x))), expected,
                                       **FLOAT32_PAIR)


@pytest.mark.parametrize("kwargs,message", [
    ({"reset": "hard"}, "'bad': reset must be one of"),
    ({"beta": 1.5}, "'bad': beta must be a finite number in"),
    ({"refractory": -1}, "'bad': refractory must be an int >= 0"),
    ({"output": "rates"}, "'bad': output must be one of"),
])
def test_bad_arguments_name_the_layer(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("'bad'", "bad")):
        layers.LIFCell(3, name="bad", **kwargs)


def test_bad_units_and_features(backend):
    with pytest.raises(TypeError, match="lif_units: units must be a positive int"):
        layers.LIF(0, name="lif_units")
    layer = layers.LIF(3, name="lif_in")
    state = layer.build((None, T, FEATURES), seed=0)
    before = {k: ops.to_numpy(v).copy() for k, v in state["params"].items()}
    with pytest.raises(ValueError, match="'lif_in' expects 2 input features.*received 5"):
        layer.apply(state, ops.ones((1, T, 5)))
    assert all(np.array_equal(ops.to_numpy(state["params"][k]), v) for k, v in before.items())


# ------------------------------------------------------------------ encoders and losses


def test_encoders_match_snntorch_spikegen(backend):
    rng = np.random.default_rng(0)
    data = rng.uniform(0.0, 1.0, size=(BATCH, FEATURES + 3)).astype(np.float32)
    data[0, 0] = 0.005  # below the threshold
    for clip in (False, True):
        expected = spikegen.latency(torch.tensor(data), num_steps=T, threshold=0.01, linear=True, normalize=True,
                                    clip=clip).numpy().transpose(1, 0, 2)
        np.testing.assert_array_equal(ops.to_numpy(encoders.latency(ops.convert_to_tensor(data), T, 0.01, clip)),
                                      expected)
    signal = rng.normal(size=(BATCH, T, FEATURES)).astype(np.float32)
    for padding in (False, True):
        for off in (False, True):
            expected = spikegen.delta(torch.tensor(signal.transpose(1, 0, 2)), threshold=0.3, padding=padding,
                                      off_spike=off).numpy().transpose(1, 0, 2)
            np.testing.assert_array_equal(
                ops.to_numpy(encoders.delta(ops.convert_to_tensor(signal), 0.3, padding, off)), expected)
    uniform = rng.uniform(size=(BATCH, T, FEATURES + 3)).astype(np.float32)
    np.testing.assert_array_equal(
        ops.to_numpy(encoders.rate_from_uniform(ops.convert_to_tensor(data), ops.convert_to_tensor(uniform))),
        (uniform < data[:, None, :]).astype(np.float32))
    first = ops.to_numpy(encoders.rate(ops.convert_to_tensor(data), T, seed=3))
    np.testing.assert_array_equal(first, ops.to_numpy(encoders.rate(ops.convert_to_tensor(data), T, seed=3)))
    assert set(np.unique(first)) <= {0.0, 1.0}


@pytest.mark.parametrize("name", ["ce_count_loss", "ce_rate_loss", "ce_temporal_loss"])
def test_losses_match_snntorch_functional(backend, name):
    rng = np.random.default_rng(1)
    spikes = (rng.uniform(size=(BATCH, T, 3)) < 0.3).astype(np.float32)
    spikes[0, :, 1] = 0.0  # one neuron never fires
    targets = np.array([1, 0, 2])
    spikes_t = torch.tensor(spikes.transpose(1, 0, 2), requires_grad=True)
    loss_t = getattr(snn_functional, name)()(spikes_t, torch.tensor(targets))
    loss_t.sum().backward()
    loss_fn = getattr(losses, name)
    spikes_e = ops.convert_to_tensor(spikes)
    value, grad = ember.value_and_grad(lambda s: loss_fn(s, ops.convert_to_tensor(targets)))(spikes_e)
    np.testing.assert_allclose(float(ops.to_numpy(value)), float(loss_t.sum().detach()), **FLOAT32_PAIR)
    np.testing.assert_allclose(ops.to_numpy(grad), spikes_t.grad.numpy().transpose(1, 0, 2), **FLOAT32_PAIR)


def test_first_spike_time_float64():
    with ember.using_backend("numpy"):
        spikes = np.zeros((1, 4, 3))
        spikes[0, 2, 0] = spikes[0, 3, 0] = spikes[0, 0, 2] = 1.0
        times = losses.first_spike_time(ops.convert_to_tensor(spikes))
        np.testing.assert_allclose(ops.to_numpy(times), [[2.0, 3.0, 0.0]], **FLOAT64)


def test_spike_times_lists_the_events_in_time_order(backend):
    train = np.zeros((2, 4, 3), dtype=np.float32)
    train[1, 0, 2] = train[0, 2, 0] = train[0, 2, 1] = train[1, 3, 0] = 1.0
    assert spike_times(ops.convert_to_tensor(train)).tolist() == [[1, 0, 2], [0, 2, 0], [0, 2, 1], [1, 3, 0]]
    with pytest.raises(ValueError, match=r"spike_times: expected a spike train \(batch, time, neurons\)"):
        spike_times(ops.ones((2, 3)))


def test_fit_runs_the_same_on_every_backend():
    """A wired recurrent LIF network trains through the surrogate on every backend (fit, compiled steps);
    the initial loss is the same everywhere."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, T, FEATURES)).astype(np.float32)
    y = (x[:, :, 0].mean(1) > 0).astype(np.int64)
    results = {}
    for name in ember.backends.available():
        with ember.using_backend(name):
            model = ember.Sequential([ember.Input((T, FEATURES)),
                                      layers.LIF(wirings.AutoNCP(8, 2, seed=0), threshold=0.3, return_sequences=True,
                                                 name="lif"),
                                      layers.GlobalAveragePooling1D(name="pool"),
                                      layers.Dense(2, activation="softmax", name="head")])
            model.build(seed=0)
            model.compile(optimizer=ember.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
            initial = model.evaluate(x, y, verbose=0)
            history = model.fit(x, y, epochs=2, batch_size=16, verbose=0, shuffle=False).history["loss"]
            assert np.all(np.isfinite(history))
            results[name] = initial
    first = next(iter(results.values()))
    for value in results.values():
        np.testing.assert_allclose(value, first, **FLOAT32_PAIR)


def test_learned_beta_and_threshold_match_snntorch(backend):
    x = _inputs(4)
    layer = layers.LIF(UNITS, beta=0.8, threshold=0.6, recurrent=False, learn_beta=True, learn_threshold=True,
                       output="both", return_sequences=True)
    state = layer.build((None, T, FEATURES), seed=0)
    params = dict(state["params"], kernel=ops.abs(state["params"]["kernel"]),
                  beta=ops.convert_to_tensor(np.linspace(0.5, 0.95, UNITS).astype(np.float32)),
                  threshold=ops.convert_to_tensor(np.linspace(0.4, 0.8, UNITS).astype(np.float32)))
    a, b = _weights()

    def objective(p):
        spk, mem = ops.split(layer.apply({**state, "params": p}, ops.convert_to_tensor(x))[0], 2, axis=-1)
        return ops.add(ops.sum(ops.multiply(spk, a)), ops.sum(ops.multiply(mem, b)))

    grads = {k: ops.to_numpy(v) for k, v in ember.grad(objective)(params).items()}
    p = {k: torch.tensor(ops.to_numpy(v)) for k, v in params.items()}
    neuron = snntorch.Leaky(beta=p["beta"].clone(), threshold=p["threshold"].clone(), learn_beta=True,
                            learn_threshold=True)
    current = torch.tensor(x) @ p["kernel"] + p["bias"]
    mem, spikes, mems = torch.zeros(BATCH, UNITS), [], []
    for t in range(T):
        spk, mem = neuron(current[:, t], mem)
        spikes.append(spk)
        mems.append(mem)
    (torch.stack(spikes, 1) * torch.tensor(a) + torch.stack(mems, 1) * torch.tensor(b)).sum().backward()
    np.testing.assert_allclose(grads["beta"], neuron.beta.grad.numpy(), **FLOAT32_PAIR)
    np.testing.assert_allclose(grads["threshold"], neuron.threshold.grad.numpy(), **FLOAT32_PAIR)


def test_a_spiking_cell_without_integrate_names_what_to_define():
    from ember.layers.spiking.cell import SpikingCell

    with pytest.raises(NotImplementedError, match="must implement integrate"):
        SpikingCell.integrate(layers.LIFCell(2), {}, None, {}, None, {})
