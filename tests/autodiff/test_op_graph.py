"""The recorded graph (``GradientTape(record_graph=True)``): the same structure on every backend that
runs the same ops, exports, the dependency helper and gradient-times-input attribution (against NumPy
float64). A Dense layer runs ``ops.nn.dense``: one fused node on torch and MLX (``addmm``), its composite's
``matmul`` and ``add`` on NumPy."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ember
from ember import backends, layers, ops
from tests.tolerances import FLOAT32

RNG = np.random.default_rng(0)
X = RNG.normal(size=(4, 3)).astype(np.float32)
Y = RNG.normal(size=(4, 2)).astype(np.float32)


def _dense_relu_dense_mse(name):
    ember.set_backend(name)
    ember.clear_session()
    model = ember.Sequential([ember.Input((3,)), layers.Dense(5, activation="relu"), layers.Dense(2)])
    state = model.build(seed=0)
    with ember.GradientTape(record_graph=True) as tape:
        tape.watch(state["params"])
        out, _ = model.apply(state, ops.convert_to_tensor(X))
        loss = ember.losses.MeanSquaredError()(ops.convert_to_tensor(Y), out)
    return tape, loss


def _structure(graph):
    nodes = [(n.op, n.inputs, n.outputs, [(a.shape, a.dtype) for a in n.input_arrays],
              [(a.shape, a.dtype) for a in n.output_arrays]) for n in graph]
    sources = [(s.index, s.slot, s.array.shape, s.array.dtype) for s in graph.sources]
    return nodes, sources, graph.edges


DENSE_OPS = {"torch": ["nn.dense"], "mlx": ["nn.dense"]}  # fused kernels; NumPy: the composite's two ops


def test_dense_relu_dense_mse_has_the_same_graph_on_every_backend():
    structures, losses = {}, {}
    for name in backends.available():
        tape, loss = _dense_relu_dense_mse(name)
        graph = tape.graph
        dense = DENSE_OPS.get(name, ["matmul", "add"])
        ops_run = [n.op for n in graph]
        assert ops_run[:2 * len(dense) + 1] == dense + ["nn.relu"] + dense
        assert ops_run[-1] == "divide" and graph[-1].output_arrays[0].shape == ()
        assert [n.index for n in graph] == list(range(len(graph)))
        times = [n.time for n in graph]
        assert times == sorted(times) and times[0] >= 0.0
        assert all(a.device == ops.get_device(loss) for n in graph for a in n.output_arrays)
        # every watched parameter reaches the loss
        assert sorted(graph.dependencies(loss)) == [0, 1, 2, 3]
        structures.setdefault(tuple(dense), {})[name] = _structure(graph)
        losses[name] = [(n.op, [(a.shape, a.dtype) for a in n.output_arrays]) for n in graph][2 * len(dense) + 1:]
    for same_ops in structures.values():
        first = next(iter(same_ops.values()))
        for name, structure in same_ops.items():
            assert structure == first, name
    first = next(iter(losses.values()))
    for name, loss_ops in losses.items():  # after the model's ops, the same loss ops everywhere
        assert loss_ops == first, name


def test_the_graph_survives_gradient_and_reset_clears_it(backend):
    x = ops.convert_to_tensor(np.array([1.0, 2.0], np.float32))
    with ember.GradientTape(record_graph=True) as tape:  # not persistent
        tape.watch(x)
        y = ops.sum(ops.square(x))
    tape.gradient(y, x)
    assert [n.op for n in tape.graph] == ["square", "sum"]
    tape.reset()
    assert len(tape.graph) == 0 and tape.graph.sources == []


def test_dependencies_name_the_sources_and_ops_on_the_path(backend):
    a, b, c = (ops.convert_to_tensor(np.array([v], np.float32)) for v in (1.0, 2.0, 3.0))
    with ember.GradientTape(record_graph=True) as tape:
        tape.watch([a, b, c])
        ab = ops.multiply(a, b)          # node 0
        cc = ops.square(c)               # node 1
        out = ops.add(ab, 1.0)           # node 2
    graph = tape.graph
    assert graph.dependencies(out) == {0: [0, 2], 1: [0, 2]}
    assert graph.dependencies(cc) == {2: [1]}
    with pytest.raises(ValueError, match="not recorded by the tape"):
        graph.dependencies(ops.ones((1,)))


def test_exports(backend):
    tape, loss = _dense_relu_dense_mse(backend)
    graph = tape.graph
    data = graph.to_dict()
    assert json.loads(graph.to_json()) == data
    assert [n["op"] for n in data["nodes"]] == [n.op for n in graph]
    assert len(data["edges"]) == len(graph.edges) and data["sources"][0]["array"]["dtype"] == "float32"
    nx = pytest.importorskip("networkx")
    digraph = graph.to_networkx()
    assert digraph.number_of_nodes() == len(graph) + len(graph.sources)
    assert digraph.number_of_edges() == len({(p, c) for p, c, _ in graph.edges})
    order = list(nx.topological_sort(digraph))
    assert order.index("source:1") < order.index(0)  # the first kernel feeds the first matmul
    dot = graph.to_dot()
    assert dot.startswith('digraph "tape" {') and dot.count("->") == len(graph.edges)
    first_op = DENSE_OPS.get(backend, ["matmul"])[0]
    assert f'"0" [shape=box, label="0: {first_op}\\n(4, 5)"];' in dot


def test_attribution_is_gradient_times_input(backend):
    x = X.astype(np.float64)
    w = RNG.normal(size=(3, 2))
    xt, wt = ops.convert_to_tensor(X), ops.convert_to_tensor(w.astype(np.float32))
    with ember.GradientTape(record_graph=True) as tape:
        tape.watch([xt, wt])
        loss = ops.sum(ops.square(ops.matmul(xt, wt)))
    ax, aw = tape.attribution(loss)
    z = x @ w  # d/dx sum((xw)^2) = 2 z w^T; d/dw = 2 x^T z
    # unit-scale normal x and w (not 0.1-scale weights): near zero ~10 roundings of sums of |terms| ~ 5,
    # 10 u * 5 = 3e-6 -> FLOAT32's relative part with atol 1e-5
    unit_scale = {**FLOAT32, "atol": 1e-5}
    np.testing.assert_allclose(ops.to_numpy(ax), 2 * z @ w.T * x, **unit_scale)
    np.testing.assert_allclose(ops.to_numpy(aw), 2 * x.T @ z * w, **unit_scale)


def test_without_the_flag_nothing_is_recorded_for_it(backend):
    x = ops.convert_to_tensor(np.array([1.0], np.float32))
    with ember.GradientTape() as tape:
        tape.watch(x)
        if backend == "torch":  # torch's tape binds no recorders: ember.ops is the backend's code
            assert ops.add.__code__ is backends.current().op_tables()["core"]["add"].__code__
        ops.add(x, 1.0)
    assert tape._recorder is None
    with pytest.raises(TypeError, match="record_graph must be True or False, received 'yes'"):
        ember.GradientTape(record_graph="yes")
