"""Spatially embedded networks: SpatialWiring, SpatialRegularizer, SpatialCfC, SeRSNN.

Oracles: the distance and communicability penalties and their gradients from torch float64
autograd (``torch.linalg.matrix_exp``), an independent implementation of Achterberg et al.'s
formula; NumPy for the positions and the assembled neuron-to-neuron matrices.
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np
import pytest

import ember
from ember import layers, ops, wirings
from ember.layers.spatial.regularizers import SpatialRegularizer, expm
from tests.tolerances import FLOAT32_PAIR, FLOAT64

torch = pytest.importorskip("torch")  # the float64 autograd reference; without it the file skips


def _torch_penalty(w, distance, communicability, comms_factor=1.0):
    """Achterberg et al.'s seRNN penalty in torch float64: value and gradient."""
    weights = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    magnitude = weights.abs()
    strength = magnitude.sum(1)  # a neuron that sends nothing (strength 0) gets scale 0, as documented
    scale = torch.diag(torch.where(strength > 0, strength.clamp_min(1e-300) ** -0.5, torch.zeros_like(strength)))
    penalty = magnitude * torch.tensor(distance)
    if communicability:
        comms = torch.linalg.matrix_exp(scale @ magnitude @ scale)
        comms = (comms - torch.diag(torch.diag(comms))) ** comms_factor
        penalty = penalty * comms
    total = penalty.sum()
    total.backward()
    return total.item(), weights.grad.numpy()


# ------------------------------------------------------------------ positions


def test_positions_grid_random_layered_and_given():
    grid = wirings.SpatialWiring(wirings.FullyConnected(5), positions="grid", dims=2, extent=2.0)
    assert grid.positions.tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1]]
    cube = wirings.SpatialWiring(wirings.FullyConnected(8), positions="grid", dims=3)
    assert cube.positions.shape == (8, 3) and len({tuple(p) for p in cube.positions}) == 8
    rand = wirings.SpatialWiring(wirings.Random(6, sparsity_level=0.5), positions="random", seed=4)
    np.testing.assert_array_equal(rand.positions, np.random.default_rng(4).uniform(0, 1, (6, 2)))
    ncp = wirings.AutoNCP(8, 2, seed=0)
    layered = wirings.SpatialWiring(ncp, positions="layered")
    for layer, x in zip(range(3), (0.0, 0.5, 1.0)):
        assert np.all(layered.positions[ncp.get_neurons_of_layer(layer), 0] == x)
    given = wirings.SpatialWiring(wirings.FullyConnected(2), positions=[[0.0, 0.0, 0.0], [3.0, 4.0, 0.0]])
    np.testing.assert_allclose(given.distance_matrix, [[0, 5], [5, 0]], **FLOAT64)
    assert given.dims == 3
    np.testing.assert_array_equal(layered.adjacency_matrix, ncp.adjacency_matrix)
    assert layered.num_layers == 3 and layered.neuron_types == ncp.neuron_types
    np.testing.assert_array_equal(layered.built(3).sensory_adjacency_matrix, ncp.built(3).sensory_adjacency_matrix)


def test_spatial_wiring_round_trip_and_errors():
    wiring = wirings.SpatialWiring(wirings.AutoNCP(8, 2, seed=0), positions="random", dims=3, seed=2)
    wiring.build(3)
    again = wirings.SpatialWiring.from_config(json.loads(json.dumps(wiring.get_config())))
    assert again == wiring and again.input_dim == 3
    np.testing.assert_array_equal(again.positions, wiring.positions)
    with pytest.raises(ValueError, match=r"SpatialWiring: positions must be finite coordinates of shape \(4, dims\)"):
        wirings.SpatialWiring(wirings.FullyConnected(4), positions=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="SpatialWiring: positions must be one of"):
        wirings.SpatialWiring(wirings.FullyConnected(4), positions="circle")
    with pytest.raises(ValueError, match="SpatialWiring: dims must be 2 or 3"):
        wirings.SpatialWiring(wirings.FullyConnected(4), dims=4)
    with pytest.raises(TypeError, match="SpatialWiring: wiring must be an ember.wirings.Wiring"):
        wirings.SpatialWiring(4)


# ------------------------------------------------------------------ regularizers


@pytest.mark.parametrize("communicability,comms_factor", [(False, 1.0), (True, 1.0), (True, 2.0)])
def test_regularizer_value_and_gradient_match_torch_float64(backend, communicability, comms_factor):
    rng = np.random.default_rng(0)
    w = rng.normal(size=(6, 6))
    distance = wirings.SpatialWiring(wirings.FullyConnected(6), positions="random", seed=1).distance_matrix
    expected, expected_grad = _torch_penalty(w, distance, communicability, comms_factor)
    reg = SpatialRegularizer(distance, strength=0.3, communicability=communicability, comms_factor=comms_factor)
    value, grad = ember.value_and_grad(reg)(ops.convert_to_tensor(w, dtype="float64"))
    np.testing.assert_allclose(float(ops.to_numpy(value)), 0.3 * expected, **FLOAT64)
    np.testing.assert_allclose(ops.to_numpy(grad), 0.3 * expected_grad, **FLOAT64)


def test_expm_matches_torch_and_isolated_neurons(backend):
    a = np.random.default_rng(2).normal(size=(5, 5))
    np.testing.assert_allclose(ops.to_numpy(expm(ops.convert_to_tensor(a, dtype="float64"))),
                               torch.linalg.matrix_exp(torch.tensor(a)).numpy(), **FLOAT64)
    w = np.ones((3, 3))
    w[2] = 0.0  # neuron 2 sends nothing: strength 0, no division by zero
    reg = SpatialRegularizer(np.ones((3, 3)), strength=1.0, communicability=True)
    assert np.isfinite(float(ops.to_numpy(reg(ops.convert_to_tensor(w)))))


def test_regularizer_config_and_errors():
    reg = SpatialRegularizer([[0.0, 1.0], [1.0, 0.0]], strength=0.5, communicability=True, comms_factor=2.0)
    again = ember.regularizers.deserialize(json.loads(json.dumps(ember.regularizers.serialize(reg))))
    assert again == reg
    with pytest.raises(ValueError, match="distance must be a finite square matrix"):
        SpatialRegularizer(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="strength must be a non-negative finite number"):
        SpatialRegularizer(np.zeros((2, 2)), strength=-1.0)
    with pytest.raises(ValueError, match=r"expected weights of shape \(2, 2\)"):
        with ember.using_backend("numpy"):
            reg(ops.ones((3, 3)))


# ------------------------------------------------------------------ layers


def test_sersnn_penalises_its_masked_recurrent_kernel(backend):
    wiring = wirings.SpatialWiring(wirings.AutoNCP(8, 2, seed=0), positions="layered")
    snn = layers.SeRSNN(wiring, distance_strength=0.1, communicability=True, return_sequences=True, name="snn")
    state = snn.build((None, 4, 3), seed=0)
    (penalty,) = snn.regularization_losses(state["params"])
    masked = ops.to_numpy(state["params"]["recurrent_kernel"]).astype(np.float64) * np.abs(wiring.adjacency_matrix)
    expected, _ = _torch_penalty(masked, wiring.distance_matrix, True)
    # float32 expm: the Taylor sum's 12 roundings (12 * 6e-8 = 7e-7) grow at most 2**8-fold over the 8 squarings
    # (1.8e-4) -> rtol 2e-4
    np.testing.assert_allclose(float(ops.to_numpy(penalty)), 0.1 * expected, rtol=2e-4)
    spikes = snn.apply(state, ops.ones((2, 4, 3)))[0]
    assert ops.shape(spikes) == (2, 4, 2)
    with pytest.raises(TypeError, match="snn2: needs an ember.wirings.SpatialWiring"):
        layers.SeRSNN(wirings.AutoNCP(8, 2, seed=0), name="snn2")


def test_spatial_cfc_neuron_weights_and_penalty(backend):
    ncp = wirings.AutoNCP(8, 2, seed=0)
    wiring = wirings.SpatialWiring(ncp, positions="grid")
    cfc = layers.SpatialCfC(wiring, distance_strength=0.2, name="scfc")
    state = cfc.build((None, 4, 3), seed=0)
    params = state["params"]
    cell = cfc.cell
    # assemble W_ff1 from the per-layer kernels in NumPy
    expected = np.zeros((8, 8))
    masks = cell.layer_masks(3)
    ids = [ncp.get_neurons_of_layer(i) for i in range(3)]
    for i in range(3):
        kernel = ops.to_numpy(params[f"layer_{i}"]["ff1"]["kernel"]) * masks[i]
        rows = ([] if i == 0 else ids[i - 1]) + ids[i]
        kernel = kernel if i > 0 else kernel[3:]
        for r, row in enumerate(rows):
            expected[row, ids[i]] += kernel[r]
    np.testing.assert_allclose(ops.to_numpy(cell.neuron_weights(params)["ff1"]), expected, **FLOAT32_PAIR)
    losses = cfc.regularization_losses(params)
    assert len(losses) == 2
    np.testing.assert_allclose(float(ops.to_numpy(losses[0])),
                               0.2 * np.sum(np.abs(expected) * wiring.distance_matrix), **FLOAT32_PAIR)
    assert ops.shape(cfc.apply(state, ops.ones((2, 4, 3)))[0]) == (2, 2)


def test_training_the_penalty_makes_weights_local():
    """A few gradient steps on the penalty alone move weight onto short synapses (deterministic)."""
    with ember.using_backend("numpy"):
        wiring = wirings.SpatialWiring(wirings.FullyConnected(9), positions="grid")
        reg = SpatialRegularizer(wiring.distance_matrix, strength=1.0, communicability=True)
        w = ops.convert_to_tensor(np.random.default_rng(0).normal(size=(9, 9)), dtype="float64")
        before = wiring.fraction_within(ops.to_numpy(w), 0.5)
        for _ in range(20):
            w = ops.subtract(w, ops.multiply(ember.grad(reg)(w), 0.02))
        assert wiring.fraction_within(ops.to_numpy(w), 0.5) > before


def test_spatial_layers_round_trip_and_load_on_every_backend():
    x = np.random.default_rng(4).normal(size=(2, 4, 3)).astype(np.float32)
    with ember.using_backend("numpy"):
        wiring = wirings.SpatialWiring(wirings.AutoNCP(8, 2, seed=0), positions="random", seed=3)
        model = ember.Sequential([ember.Input((4, 3)),
                                  layers.SeRSNN(wiring, threshold=0.2, output="membrane", return_sequences=True,
                                                name="snn"),
                                  layers.SpatialCfC(wirings.SpatialWiring(wirings.FullyConnected(5, 2)),
                                                    communicability=True, name="cfc")])
        model.build(seed=0)
        for layer in model.layers:
            config = json.loads(json.dumps(layers.serialize(layer)))
            assert layers.deserialize(config).get_config() == layer.get_config()
        expected = ops.to_numpy(model.predict_on_batch(ops.convert_to_tensor(x)))
        path = os.path.join(tempfile.mkdtemp(), "spatial.h5")
        model.save(path)
    for name in ember.backends.available():
        with ember.using_backend(name):
            loaded = ember.load_model(path)
            np.testing.assert_array_equal(loaded.layers[0].units.positions, wiring.positions)
            np.testing.assert_allclose(ops.to_numpy(loaded.predict_on_batch(ops.convert_to_tensor(x))), expected,
                                       **FLOAT32_PAIR)
