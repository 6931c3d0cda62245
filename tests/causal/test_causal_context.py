"""``ember.causal``: causal links, influence, exports and plots of a spiking layer's run.

References: a hand-built network whose spike causes are worked out by hand (threshold 1,
beta 0.5, weights set by hand), a NumPy float64 LIF transcription of the equations for the
ablations, the layer's own membranes (a reset-to-zero neuron's links account for its whole
membrane), and the NumPy backend's record for the other backends.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import ember
from ember import layers, ops, wirings
from ember.causal import CausalContext, causal_context, plot_raster, plot_space
from ember.causal.links import decay_kernel
from tests.tolerances import FLOAT32_PAIR, FLOAT64

BETA, THRESHOLD = 0.5, 1.0


def _toy():
    """3 inputs, 3 recurrent LIF neurons. in0 -> n0 (1.2: fires alone); in1 -> n1 (0.7: fires on two
    steps in a row), in2 -> n1 (-0.5, inhibitory); n0 -> n2 (1.1: fires one step after n0), n1 -> n2 (0.4)."""
    kernel = np.zeros((3, 3), "float32")
    kernel[0, 0], kernel[1, 1], kernel[2, 1] = 1.2, 0.7, -0.5
    recurrent = np.zeros((3, 3), "float32")
    recurrent[0, 2], recurrent[1, 2] = 1.1, 0.4
    x = np.zeros((2, 5, 3))
    x[0, 0, 0] = x[0, 1, 1] = x[0, 2, 1] = x[0, 3, 2] = 1.0   # b0: in0 @0, in1 @1 @2, in2 @3
    x[1, 1:5, 1] = 1.0                                       # b1: in1 @1..4, in2 @2
    x[1, 2, 2] = 1.0
    layer = layers.LIF(3, beta=BETA, threshold=THRESHOLD, use_bias=False, return_sequences=True)
    return layer, {"params": {"kernel": kernel, "recurrent_kernel": recurrent}, "buffers": {}}, x


def _lif_reference(kernel, recurrent, x, beta=BETA, threshold=THRESHOLD):
    """Float64 LIF with reset by subtraction (snntorch's reset_delay), from the equations."""
    batch, time, _ = x.shape
    mem = np.zeros((batch, kernel.shape[1]))
    spk = np.zeros_like(mem)
    out = []
    for t in range(time):
        mem = beta * mem + x[:, t] @ kernel + spk @ recurrent - spk * threshold
        spk = (mem > threshold).astype(np.float64)
        out.append(spk)
    return np.stack(out, axis=1)


# --- causal links -------------------------------------------------------------------------------
def test_links_of_the_hand_built_network_are_the_known_ones(backend):
    layer, state, x = _toy()
    ctx = causal_context(layer, state, x, influence=())
    assert ctx.events.tolist() == [[0, 0, 0], [0, 1, 2], [0, 2, 1], [1, 4, 1]]
    assert ctx.spike_times_of(1, batch=0) == [2] and ctx.spike_times_of(1, batch=1) == [4]
    assert ctx.window_starts.tolist() == [0, 0, 0, 0]
    # (spike, kind, source, source step, arrival, weight, decay): worked out by hand.
    known = [
        (0, "input", 0, 0, 0, 1.2, 1.0),       # n0 @0 <- in0 @0
        (1, "neuron", 0, 0, 1, 1.1, 1.0),      # n2 @1 <- n0's spike @0, arriving @1
        (2, "input", 1, 1, 1, 0.7, 0.5),       # n1 @2 <- in1 @1 (decayed once) and in1 @2
        (2, "input", 1, 2, 2, 0.7, 1.0),
        (3, "input", 1, 1, 1, 0.7, 0.125),     # n1 @4 in b1 <- in1 @1..4 and the inhibitory in2 @2
        (3, "input", 1, 2, 2, 0.7, 0.25),
        (3, "input", 2, 2, 2, -0.5, 0.25),
        (3, "input", 1, 3, 3, 0.7, 0.5),
        (3, "input", 1, 4, 4, 0.7, 1.0),
    ]
    got = [(lk.target, lk.kind, lk.source, lk.source_step, lk.arrival) for lk in ctx.links]
    assert got == [k[:5] for k in known]
    weights = np.array([lk.weight for lk in ctx.links])
    np.testing.assert_array_equal(weights, np.float32([k[5] for k in known]).astype(np.float64))
    np.testing.assert_array_equal([lk.decay for lk in ctx.links], [k[6] for k in known])
    np.testing.assert_allclose([lk.contribution for lk in ctx.links], weights * [k[6] for k in known], **FLOAT64)
    # Every spike here has no earlier spike of its neuron: its links account for its whole membrane.
    for n, (b, t, j) in enumerate(ctx.events.tolist()):
        np.testing.assert_allclose(sum(lk.contribution for lk in ctx.links_of(n)), ctx.membranes[b, t, j],
                                   **FLOAT32_PAIR)


def test_window_bounds_the_links_and_refractory_steps_have_none(backend):
    layer, state, x = _toy()
    ctx = causal_context(layer, state, x, window=2, influence=())
    assert [(lk.source_step, lk.kind) for lk in ctx.links_of(3)] == [(3, "input"), (4, "input")]
    lif = layers.LIF(1, beta=BETA, threshold=THRESHOLD, refractory=1, recurrent=False, use_bias=False)
    ctx = causal_context(lif, {"params": {"kernel": np.array([[1.5]], "float32")}, "buffers": {}},
                         np.ones((1, 5, 1)), influence=())
    assert ctx.spike_times_of(0) == [0, 2, 4]
    # After the spike at 0, step 1 is refractory: the spike at 2 was driven by the input at 2 alone.
    assert [[lk.source_step for lk in ctx.links_of(n)] for n in range(3)] == [[0], [2], [4]]


def test_reset_to_zero_links_account_for_the_membrane_and_respect_the_wiring(backend):
    wiring = wirings.AutoNCP(6, 2, seed=1)
    layer = layers.LIF(wiring, beta=0.8, threshold=0.3, reset="zero", use_bias=False)
    state = layer.build((None, 6, 3), seed=2)
    x = np.random.default_rng(3).uniform(0.0, 1.0, (2, 6, 3))
    ctx = causal_context(layer, state, x, influence=())
    assert len(ctx.events) > 5
    mask_in, mask_rec = layer.cell.masks(3)
    assert (mask_rec == 0).any() and (mask_in == 0).any()
    for link in ctx.links:
        j = ctx.events[link.target, 2]
        assert (mask_in if link.kind == "input" else mask_rec)[link.source, j] != 0
    magnitude = np.zeros(len(ctx.events))
    total = np.zeros(len(ctx.events))
    for link in ctx.links:
        total[link.target] += link.contribution
        magnitude[link.target] += abs(link.contribution)
    expected = ctx.membranes[tuple(ctx.events.T)]
    # U_t is the float32 sum of these <= 6 steps x 9 terms: within FLOAT32_PAIR of the float64 sum,
    # relative to the terms' magnitudes (tests/tolerances.py).
    assert np.all(np.abs(total - expected) <= FLOAT32_PAIR["rtol"] * magnitude + FLOAT32_PAIR["atol"])


def test_synaptic_decay_kernel_is_the_impulse_response():
    beta, alpha = np.array([0.8]), 0.6
    syn = mem = 0.0
    for lag in range(5):
        syn = alpha * syn + (1.0 if lag == 0 else 0.0)
        mem = beta[0] * mem + syn
        np.testing.assert_allclose(decay_kernel(beta, alpha, lag), [mem], **FLOAT64)


def test_unrolled_spikes_equal_the_layers_output(backend):
    wiring = wirings.SpatialWiring(wirings.AutoNCP(7, 2, seed=0))
    for layer in (layers.LIF(wiring, threshold=0.4, refractory=1, return_sequences=True),
                  layers.ALIF(5, threshold=0.4, adaptation=0.3, return_sequences=True),
                  layers.Synaptic(4, threshold=0.4, return_sequences=True),
                  layers.SeRSNN(wiring, threshold=0.3, return_sequences=True)):
        state = layer.build((None, 5, 3), seed=4)
        x = np.random.default_rng(5).uniform(0.0, 1.0, (2, 5, 3)).astype("float32")
        ctx = causal_context(layer, state, x, influence=())
        out, _ = layer.apply(state, ops.convert_to_tensor(x))
        np.testing.assert_array_equal(ctx.spikes[..., :layer.cell.motor_size], ops.to_numpy(out))


# --- influence --------------------------------------------------------------------------------
def test_ablation_matches_the_float64_reference_and_the_most_influential_input_changes_most(backend):
    layer, state, x = _toy()
    ctx = causal_context(layer, state, x)
    kernel, recurrent = (state["params"][k].astype(np.float64) for k in ("kernel", "recurrent_kernel"))
    original = _lif_reference(kernel, recurrent, x)
    np.testing.assert_array_equal(ctx.spikes, original)
    for i in range(3):
        ablated = x.copy()
        ablated[..., i] = 0.0
        change = _lif_reference(kernel, recurrent, ablated).sum(axis=1) - original.sum(axis=1)
        np.testing.assert_array_equal(ctx.influence["channel_count_change"][:, i], change)
    # b0: removing in0 silences n0 and, through it, n2; removing in1 costs n1's spike; in2 changes nothing.
    assert ctx.influence["channel_count_change"][0].tolist() == [[-1, 0, -1], [0, -1, 0], [0, 0, 0]]
    most = int(np.argmax(np.abs(ctx.influence["channel_count_change"][0]).sum(axis=-1)))
    assert most == 0
    totals = [np.abs(_lif_reference(kernel, recurrent, np.where(np.arange(3) == i, 0.0, x))[0] - original[0]).sum()
              for i in range(3)]
    assert int(np.argmax(totals)) == most and totals[most] > max(totals[1:])
    # Silencing n0 also silences n2 (its only cause); each removed event's effect is the known one.
    assert ctx.influence["neuron_count_change"][0].tolist() == [[-1, 0, -1], [0, -1, 0], [0, 0, -1]]
    assert ctx.influence["spike_event_count_change"].tolist() == [[-1, 0, -1], [0, 0, -1], [0, -1, 0],
                                                                  [0, -1, 0]]
    # Links: each b0 cause is necessary; in b1 the first two in1 inputs are not (n1 still fires at 4).
    assert [lk.necessary for lk in ctx.links] == [True, True, True, True, False, False, True, True, True]


def test_gradient_x_input_ranks_agree_with_ablation(backend):
    layer, state, x = _toy()
    ctx = causal_context(layer, state, x, influence=("gradient", "channels"))
    gradient = ctx.influence["gradient_x_input"][0].sum(axis=(0, 2))       # per channel, b0
    ablation = -ctx.influence["channel_count_change"][0].sum(axis=-1)     # spikes lost per channel
    assert np.argsort(-gradient).tolist() == np.argsort(-ablation, kind="stable").tolist() == [0, 1, 2]
    assert np.all(ctx.influence["gradient_x_input"][x == 0] == 0.0)


# --- the same records on every backend ---------------------------------------------------------------
def _assert_same(got, expected, path="record"):
    if isinstance(expected, float) and not isinstance(got, bool):
        np.testing.assert_allclose(got, expected, err_msg=path, **FLOAT32_PAIR)
    elif isinstance(expected, dict):
        assert sorted(got) == sorted(expected), path
        for key in expected:
            _assert_same(got[key], expected[key], f"{path}.{key}")
    elif isinstance(expected, list):
        assert len(got) == len(expected), path
        for n, (a, b) in enumerate(zip(got, expected)):
            _assert_same(a, b, f"{path}[{n}]")
    else:
        assert got == expected, path


def _spatial_record():
    wiring = wirings.SpatialWiring(wirings.AutoNCP(6, 2, seed=0), positions="layered")
    layer = layers.SeRSNN(wiring, threshold=0.4, return_sequences=True)
    with ember.using_backend("numpy"):
        state = layer.build((None, 4, 2), seed=6)
    # Excitatory, doubled weights: every neuron fires, and no membrane comes within 0.08 of the
    # threshold (so float32 rounding cannot move a spike between backends).
    params = {k: np.float32(2.0) * np.abs(np.asarray(ops.to_numpy(v))) for k, v in state["params"].items()}
    x = (np.random.default_rng(7).uniform(0.0, 1.0, (2, 4, 2)) > 0.4).astype(np.float64)
    return layer, {"params": params, "buffers": {}}, x


def test_json_records_are_the_same_on_every_backend(backend):
    for make in (_toy, _spatial_record):
        layer, state, x = make()
        record = causal_context(layer, state, x).to_dict()
        with ember.using_backend("numpy"):
            expected = causal_context(layer, state, x).to_dict()
        assert record["events"] and record["links"]
        # Spikes, events, links, weights, contributions and ablations are exact; membranes and
        # gradients are float32 computations of each backend (FLOAT32_PAIR).
        _assert_same(record, expected)
        assert [lk for lk in record["links"]] == expected["links"]


def test_record_graph_gives_each_op_its_step(backend):
    layer, state, x = _toy()
    ctx = causal_context(layer, state, x, influence=(), record_graph=True)
    ops_of = [[node.op for node, step in zip(ctx.op_graph.nodes, ctx.op_steps) if step == t] for t in range(5)]
    assert len(ctx.op_steps) == len(ctx.op_graph.nodes)
    assert all(names.count("custom_gradient") == 1 for names in ops_of)  # one spike op per step
    assert all(names == ops_of[1] for names in ops_of[2:])  # every step after the first runs the same ops
    record = json.loads(ctx.to_json())
    assert record["op_steps"] == ctx.op_steps and len(record["op_graph"]["nodes"]) == len(ctx.op_steps)
    with ember.using_backend("numpy"):
        expected = causal_context(layer, state, x, influence=(), record_graph=True)
    assert ctx.op_steps == expected.op_steps
    assert [n.op for n in ctx.op_graph.nodes] == [n.op for n in expected.op_graph.nodes]
    with pytest.raises(ValueError, match="record_graph must be True or False, received 1"):
        causal_context(layer, state, x, record_graph=1)


# --- spatial context, exports, plots -----------------------------------------------------------------
def test_spatial_context_and_exports(backend):
    layer, state, x = _spatial_record()
    ctx = causal_context(layer, state, x)
    np.testing.assert_array_equal(ctx.positions, layer.cell.units.positions)
    assert ctx.neuron_types == layer.cell.units.neuron_types
    record = json.loads(ctx.to_json())
    assert record == ctx.to_dict()
    first = record["events"][0]
    assert first["position"] == ctx.positions[first["neuron"]].tolist()
    assert record["spike_times"][0][first["neuron"]] == ctx.spike_times_of(first["neuron"], 0)
    dot = ctx.to_dot()
    assert dot.startswith('digraph "causal" {') and dot.count(" -> ") == len(ctx.links)
    nx = pytest.importorskip("networkx")
    graph = ctx.to_networkx()
    assert isinstance(graph, nx.DiGraph)
    assert graph.number_of_nodes() == len(ctx.events) + len(ctx.input_events)
    assert graph.number_of_edges() == len({(lk.kind, lk.source_event, lk.target) for lk in ctx.links})
    link = ctx.links[0]
    source = f"{'input' if link.kind == 'input' else 'spike'}:{link.source_event}"
    edge = graph.edges[source, f"spike:{link.target}"]
    assert edge["weight"] == link.weight and edge["contribution"] == link.contribution
    assert graph.nodes[f"spike:{link.target}"]["step"] == int(ctx.events[link.target, 1])


def test_plots(backend):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    layer, state, x = _spatial_record()
    ctx = causal_context(layer, state, x)
    ax = plot_raster(ctx, batch=1)
    assert len(ax.patches) == sum(int(ctx.events[lk.target, 0]) == 1 for lk in ctx.links)
    ax = plot_space(ctx)
    np.testing.assert_array_equal(ax.collections[-1].get_array(), ctx.neuron_influence())
    assert ctx.neuron_influence().sum() > 0
    with pytest.raises(ValueError, match=r"plot_space: values must have shape \(6,\)"):
        plot_space(ctx, values=np.ones(3))
    with pytest.raises(ValueError, match="plot_raster: batch must be an index in \\[0, 2\\)"):
        plot_raster(ctx, batch=2)
    toy_layer, toy_state, toy_x = _toy()
    with pytest.raises(ValueError, match="has no neuron coordinates"):
        plot_space(causal_context(toy_layer, toy_state, toy_x, influence=()))


def test_weights_come_from_the_state_the_model_or_the_layer(backend):
    lif = layers.LIF(3, threshold=0.3, return_sequences=True)
    model = ember.Sequential([ember.Input((4, 2)), lif])
    kernel, recurrent, bias = np.full((2, 3), 0.4, "float32"), np.eye(3, dtype="float32"), np.full(3, 0.1, "float32")
    lif.set_weights([kernel, recurrent, bias])
    x = np.ones((1, 4, 2))
    expected = causal_context(lif, {"params": {"kernel": kernel, "recurrent_kernel": recurrent, "bias": bias}}, x)
    assert expected.events.size and expected.bias.tolist() == bias.astype(np.float64).tolist()
    assert causal_context(lif, model, x).to_dict() == expected.to_dict() == causal_context(lif, None, x).to_dict()
    with pytest.raises(ValueError, match="is not a layer of"):
        causal_context(layers.LIF(3), model, x)


def test_a_time_major_layer_reads_time_major_inputs(backend):
    layer, state, x = _toy()
    time_major = layers.LIF(3, beta=BETA, threshold=THRESHOLD, use_bias=False, time_major=True)
    expected = causal_context(layer, state, x).to_dict()
    got = causal_context(time_major, state, x.swapaxes(0, 1)).to_dict()
    assert {**got, "layer": None} == {**expected, "layer": None}


# --- bad input --------------------------------------------------------------------------------
def test_bad_arguments_raise_clear_errors(backend):
    layer, state, x = _toy()
    with pytest.raises(TypeError, match="causal_context: layer must be a spiking layer"):
        causal_context(layers.Dense(2), state, x)
    with pytest.raises(NotImplementedError, match="go_backwards=True"):
        causal_context(layers.LIF(3, go_backwards=True), state, x)
    with pytest.raises(ValueError, match="window must be None or an int >= 1"):
        causal_context(layer, state, x, window=0)
    with pytest.raises(ValueError, match=r"targets must be neuron indices in \[0, 3\), received 3"):
        causal_context(layer, state, x, targets=3)
    with pytest.raises(ValueError, match="influence must be a subset of"):
        causal_context(layer, state, x, influence=("saliency",))
    with pytest.raises(ValueError, match=r"inputs \(batch, time, 3\) with time >= 1, received shape \(2, 5, 2\)"):
        causal_context(layer, state, x[..., :2])
    with pytest.raises(ValueError, match="a dict with 'params'"):
        causal_context(layer, state["params"], x)
    before = {k: v.copy() for k, v in state["params"].items()}
    assert isinstance(causal_context(layer, state, x, influence=()), CausalContext)
    for key, value in before.items():  # the state is read, never changed
        np.testing.assert_array_equal(state["params"][key], value)


def test_a_recorder_that_misses_the_spike_ops_is_refused_naming_the_backends_that_record_them(backend,
                                                                                               monkeypatch):
    """The guard of ``op_steps.recorded_unroll``: a recorded graph without one spike op per step would give
    every op a wrong step; it raises instead (simulated by a run that records no op)."""
    from ember.causal import op_steps

    def steps_only(cell, params, x, on_step):
        for _ in range(3):
            on_step(0)
        on_step(0)

    monkeypatch.setattr(op_steps, "unroll", steps_only)
    layer, state, x = _toy()
    with pytest.raises(NotImplementedError, match=r"recorded graph misses the spikes' ember.custom_gradient ops "
                                                  r"\(0 recorded for 3 steps\).*numpy or mlx backend"):
        causal_context(layer, state, x, influence=(), record_graph=True)
