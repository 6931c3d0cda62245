"""Wirings: structure, fixed-seed statistics, determinism, serialization, building, errors.

The expected structure is checked against the definitions in the module docstrings
(ember/wirings/*.py) with graph searches written here; the fixed-seed statistics pin
the exact circuits (counts plus a position-weighted checksum of each matrix), so a
change in how synapses are drawn shows up as a failing test.
"""

from __future__ import annotations

import json
from collections import deque

import numpy as np
import pytest

from ember import ops, wirings
from ember.serialization import deserialize, serialize


def checksum(matrix):
    return int(np.sum(np.arange(matrix.size).reshape(matrix.shape) * matrix))


def make_all():
    return [wirings.FullyConnected(6, 2), wirings.Random(8, 3, 0.6, seed=3), wirings.NCP(5, 4, 2, 3, 2, 4, 3, seed=7),
            wirings.AutoNCP(16, 3, 0.5, seed=5)]


# Fixed seeds, built for 4 inputs: (neurons per type, synapses (+, -), sensory (+, -), checksums).
EXPECTED = {
    "FullyConnected": ({"inter": 4, "command": 0, "motor": 2}, (31, 5), (15, 9), (408, 52)),
    "Random": ({"inter": 5, "command": 0, "motor": 3}, (16, 10), (9, 4), (143, 70)),
    "NCP": ({"inter": 5, "command": 4, "motor": 2}, (10, 10), (4, 8), (-234, -37)),
    "AutoNCP": ({"inter": 8, "command": 5, "motor": 3}, (10, 17), (9, 7), (-975, -103)),
}


@pytest.mark.parametrize("index", range(4))
def test_fixed_seed_statistics_are_stable(index):
    wiring = make_all()[index]
    wiring.build(4)
    neurons, synapses, sensory, sums = EXPECTED[type(wiring).__name__]
    stats = wiring.statistics()
    assert stats["neurons"] == neurons
    assert (stats["excitatory_synapses"], stats["inhibitory_synapses"]) == synapses
    assert stats["synapses"] == sum(synapses) == wiring.synapse_count
    assert (stats["excitatory_sensory_synapses"], stats["inhibitory_sensory_synapses"]) == sensory
    assert stats["sensory_synapses"] == sum(sensory) == wiring.sensory_synapse_count
    assert (checksum(wiring.adjacency_matrix), checksum(wiring.sensory_adjacency_matrix)) == sums


def test_same_seed_same_matrices_under_every_backend(backend):
    """Wirings are NumPy data drawn from the seed: the active backend plays no part."""
    for first, second in zip(make_all(), make_all()):
        first.build(4)
        second.build(4)
        np.testing.assert_array_equal(first.adjacency_matrix, second.adjacency_matrix)
        np.testing.assert_array_equal(first.sensory_adjacency_matrix, second.sensory_adjacency_matrix)
        assert checksum(first.adjacency_matrix) == EXPECTED[type(first).__name__][3][0]
    assert ops.shape(ops.convert_to_tensor(first.adjacency_matrix)) == (16, 16)


def test_different_seeds_differ():
    assert not np.array_equal(wirings.NCP(5, 4, 2, 3, 2, 4, 3, seed=1).adjacency_matrix,
                              wirings.NCP(5, 4, 2, 3, 2, 4, 3, seed=2).adjacency_matrix)
    assert not np.array_equal(wirings.FullyConnected(5, erev_init_seed=1).adjacency_matrix,
                              wirings.FullyConnected(5, erev_init_seed=2).adjacency_matrix)


# ---------------------------------------------------------------------------- structure


def test_fully_connected_structure():
    wiring = wirings.FullyConnected(60, output_dim=5)
    assert wiring.synapse_count == 3600 and set(np.unique(wiring.adjacency_matrix)) == {-1, 1}
    share = np.mean(wiring.adjacency_matrix == 1)
    assert abs(share - 2 / 3) < 0.03  # polarities excitatory with probability 2/3
    assert wiring.neuron_types == ["motor"] * 5 + ["inter"] * 55
    no_self = wirings.FullyConnected(4, self_connections=False)
    assert no_self.synapse_count == 12 and np.all(np.diag(no_self.adjacency_matrix) == 0)
    no_self.build(3)
    assert no_self.sensory_synapse_count == 12
    assert wirings.FullyConnected(3).output_dim == 3 and wirings.FullyConnected(3).num_layers == 1


def test_random_structure():
    wiring = wirings.Random(10, output_dim=2, sparsity_level=0.75, seed=0)
    assert wiring.synapse_count == 25  # round(100 * 0.25)
    wiring.build(6)
    assert wiring.sensory_synapse_count == 15  # round(60 * 0.25)
    assert set(np.unique(wiring.adjacency_matrix)) <= {-1, 0, 1}


def _edges(wiring):
    return {(int(s), int(d)) for s, d in zip(*np.nonzero(wiring.adjacency_matrix))}


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_ncp_layers_and_reachability(seed):
    wiring = wirings.NCP(inter_neurons=7, command_neurons=5, motor_neurons=3, sensory_fanout=2, inter_fanout=2,
                         recurrent_command_synapses=6, motor_fanin=2, seed=seed)
    wiring.build(4)
    motor, command, inter = set(range(3)), set(range(3, 8)), set(range(8, 15))
    assert [set(wiring.get_neurons_of_layer(i)) for i in range(3)] == [inter, command, motor]
    assert wiring.neuron_types == ["motor"] * 3 + ["command"] * 5 + ["inter"] * 7
    for src, dest in _edges(wiring):  # only inter->command, command->command, command->motor
        assert (src in inter and dest in command) or (src in command and dest in command | motor), (src, dest)
    sensory = wiring.sensory_adjacency_matrix
    assert set(np.nonzero(sensory)[1]) <= inter
    assert np.all(np.count_nonzero(sensory, axis=1) >= 2)  # each input reaches sensory_fanout inter neurons
    a = wiring.adjacency_matrix
    assert all(np.count_nonzero(a[i, sorted(command)]) >= 2 for i in inter)  # inter_fanout
    assert all(np.count_nonzero(a[sorted(command), m]) >= 2 for m in motor)  # motor_fanin
    assert 1 <= np.count_nonzero(a[np.ix_(sorted(command), sorted(command))]) <= 6
    # Every neuron is reachable from the inputs, and every neuron reaches a motor neuron.
    forward = {i: {d for s, d in _edges(wiring) if s == i} for i in range(15)}
    reached = set(np.nonzero(sensory)[1].tolist())
    queue = deque(reached)
    while queue:
        for dest in forward[queue.popleft()]:
            if dest not in reached:
                reached.add(dest)
                queue.append(dest)
    assert reached == set(range(15))
    backward = {i: {s for s, d in _edges(wiring) if d == i} for i in range(15)}
    reaches_motor, queue = set(motor), deque(motor)
    while queue:
        for src in backward[queue.popleft()]:
            if src not in reaches_motor:
                reaches_motor.add(src)
                queue.append(src)
    assert reaches_motor == set(range(15))
    assert set(np.unique(a[a != 0])) <= {-1, 1}


def test_auto_ncp_sizes():
    wiring = wirings.AutoNCP(32, 4, sparsity_level=0.5, seed=0)
    # n = 28 non-motor neurons: command = int(0.4 * 28) = 11, inter = 17; density 0.5.
    assert (wiring.inter_neurons, wiring.command_neurons, wiring.motor_neurons) == (17, 11, 4)
    assert (wiring.sensory_fanout, wiring.inter_fanout, wiring.recurrent_command_synapses,
            wiring.motor_fanin) == (8, 5, 11, 5)
    assert wiring.units == 32 and wiring.output_dim == 4
    dense = wirings.AutoNCP(32, 4, sparsity_level=0.1, seed=0)
    assert dense.synapse_count > wiring.synapse_count
    smallest = wirings.AutoNCP(3, 1, sparsity_level=0.9, seed=0)
    assert (smallest.inter_neurons, smallest.command_neurons) == (1, 1)


# ---------------------------------------------------------------------------- building


def test_build_is_idempotent_and_fixed():
    wiring = wirings.AutoNCP(10, 2, seed=0)
    assert not wiring.is_built() and wiring.sensory_adjacency_matrix is None
    recurrent = wiring.adjacency_matrix.copy()
    wiring.build(3)
    sensory = wiring.sensory_adjacency_matrix.copy()
    wiring.build(3)
    np.testing.assert_array_equal(wiring.sensory_adjacency_matrix, sensory)
    np.testing.assert_array_equal(wiring.adjacency_matrix, recurrent)  # building never moves internal synapses
    with pytest.raises(ValueError, match="already built for input_dim=3"):
        wiring.build(4)
    np.testing.assert_array_equal(wiring.sensory_adjacency_matrix, sensory)  # the failed call changed nothing
    with pytest.raises(ValueError, match="input_dim must be >= 1"):
        wirings.AutoNCP(10, 2, seed=0).build(0)
    with pytest.raises(TypeError, match="input_dim must be an int"):
        wirings.AutoNCP(10, 2, seed=0).build(2.0)


def test_built_returns_a_cached_copy_without_modifying():
    wiring = wirings.NCP(3, 2, 1, 2, 1, 1, 1, seed=0)
    copy = wiring.built(2)
    assert copy is not wiring and not wiring.is_built() and copy.input_dim == 2
    assert wiring.built(2) is copy
    reference = wirings.NCP(3, 2, 1, 2, 1, 1, 1, seed=0)
    reference.build(2)
    assert copy == reference
    assert copy.built(2) is copy
    with pytest.raises(ValueError, match="built for input_dim=2"):
        copy.built(3)
    wiring.add_synapse(0, 1, 1)  # editing drops the cached copies
    assert wiring.built(2) is not copy and wiring.built(2).adjacency_matrix[0, 1] == 1


def test_manual_wiring():
    wiring = wirings.Wiring(3, output_dim=1)
    wiring.add_synapse(2, 0, -1)
    with pytest.raises(ValueError, match="not built"):
        wiring.add_sensory_synapse(0, 0, 1)
    wiring.build(2)
    assert wiring.sensory_synapse_count == 0  # the base wiring draws no synapses
    wiring.add_sensory_synapse(1, 2, 1)
    assert wiring.sensory_adjacency_matrix.tolist() == [[0, 0, 0], [0, 0, 1]]
    with pytest.raises(ValueError, match="polarity must be"):
        wiring.add_synapse(0, 1, 0)
    with pytest.raises(ValueError, match=r"dest must be a neuron id in \[0, 3\)"):
        wiring.add_synapse(0, 3, 1)
    with pytest.raises(ValueError, match=r"src must be a sensory input id in \[0, 2\)"):
        wiring.add_sensory_synapse(2, 0, 1)


# ---------------------------------------------------------------------------- serialization


@pytest.mark.parametrize("built", [False, True])
def test_config_round_trip_is_exact(built):
    for wiring in make_all():
        if built:
            wiring.build(3)
        wiring.add_synapse(0, 0, -1)  # a hand edit survives too
        config = json.loads(json.dumps(wiring.get_config()))
        rebuilt = type(wiring).from_config(config)
        assert rebuilt == wiring and hash(rebuilt) == hash(wiring)
        np.testing.assert_array_equal(rebuilt.adjacency_matrix, wiring.adjacency_matrix)
        assert rebuilt.adjacency_matrix.dtype == np.int32
        assert rebuilt.input_dim == wiring.input_dim
        if built:
            np.testing.assert_array_equal(rebuilt.sensory_adjacency_matrix, wiring.sensory_adjacency_matrix)
        again = deserialize(json.loads(json.dumps(serialize(wiring))))
        assert type(again) is type(wiring) and again == wiring
        assert serialize(wiring)["class_name"] == f"ember>{type(wiring).__name__}"


def test_unbuilt_round_trip_builds_the_same_sensory_synapses():
    wiring = wirings.AutoNCP(12, 2, seed=4)
    rebuilt = wirings.AutoNCP.from_config(wiring.get_config())
    wiring.build(5)
    rebuilt.build(5)
    assert rebuilt == wiring


def test_copy_is_independent():
    wiring = wirings.FullyConnected(3)
    copy = wiring.copy()
    copy.build(2)
    copy.add_synapse(0, 1, -1)
    assert not wiring.is_built() and copy != wiring
    assert wiring != wirings.Random(3, sparsity_level=0.5)


def test_from_config_rejects_bad_matrices():
    config = wirings.FullyConnected(3).get_config()
    with pytest.raises(ValueError, match=r"adjacency_matrix must have shape \(3, 3\)"):
        wirings.FullyConnected.from_config({**config, "adjacency_matrix": [[1, 0], [0, 1]]})
    with pytest.raises(ValueError, match="entries must be -1, 0 or 1"):
        wirings.FullyConnected.from_config({**config, "adjacency_matrix": [[2, 0, 0]] * 3})
    with pytest.raises(ValueError, match="must be given together"):
        wirings.FullyConnected.from_config({**config, "input_dim": 2})
    with pytest.raises(TypeError, match="unexpected keyword"):
        wirings.FullyConnected.from_config({**config, "colour": 1})


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize("make, error, match", [
    (lambda: wirings.FullyConnected(3, output_dim=4), ValueError, "output_dim .* at most units=3, received 4"),
    (lambda: wirings.FullyConnected(0), ValueError, "units must be >= 1"),
    (lambda: wirings.FullyConnected(True), TypeError, "units must be an int"),
    (lambda: wirings.FullyConnected(3, self_connections=1), TypeError, "self_connections must be a bool"),
    (lambda: wirings.FullyConnected(3, erev_init_seed=-1), ValueError, "erev_init_seed must be >= 0"),
    (lambda: wirings.Random(3, sparsity_level=0.0), ValueError, "sparsity_level must be .* strictly between 0 and 1"),
    (lambda: wirings.Random(3, sparsity_level=1.0), ValueError, "strictly between 0 and 1"),
    (lambda: wirings.Random(3, output_dim=5), ValueError, "at most units=3"),
    (lambda: wirings.NCP(3, 2, 1, 4, 1, 1, 1), ValueError, "sensory_fanout must be at most inter_neurons=3"),
    (lambda: wirings.NCP(3, 2, 1, 2, 3, 1, 1), ValueError, "inter_fanout must be at most command_neurons=2"),
    (lambda: wirings.NCP(3, 2, 1, 2, 1, 1, 3), ValueError, "motor_fanin must be at most command_neurons=2"),
    (lambda: wirings.NCP(3, 0, 1, 2, 1, 1, 1), ValueError, "command_neurons must be >= 1"),
    (lambda: wirings.NCP(3, 2, 1, 2, 1, -1, 1), ValueError, "recurrent_command_synapses must be >= 0"),
    (lambda: wirings.AutoNCP(5, 4), ValueError, "units must exceed output_size by at least 2"),
    (lambda: wirings.AutoNCP(5, 6), ValueError, "units must exceed output_size"),
    (lambda: wirings.AutoNCP(10, 2, sparsity_level=1.2), ValueError, "strictly between 0 and 1"),
    (lambda: wirings.AutoNCP(10, 2, sparsity_level=0), ValueError, "strictly between 0 and 1"),
    (lambda: wirings.NCP(3, 2, 1, 2, 1, 1, 1).get_neurons_of_layer(3), ValueError,
     r"layer_id must be an int in \[0, 3\)"),
    (lambda: wirings.NCP(3, 2, 1, 2, 1, 1, 1).get_type_of_neuron(6), ValueError, r"neuron id in \[0, 6\)"),
])
def test_invalid_arguments(make, error, match):
    with pytest.raises(error, match=match):
        make()


# ---------------------------------------------------------------------------- summary / draw


def test_summary_prints_counts():
    wiring = wirings.NCP(5, 4, 2, 3, 2, 4, 3, seed=7)
    wiring.build(4)
    lines = []
    wiring.summary(print_fn=lines.append)
    assert lines == ["NCP: 11 neurons (5 inter, 4 command, 2 motor), 4 sensory inputs",
                     "synapses: 20 (10 excitatory, 10 inhibitory)",
                     "sensory synapses: 12 (4 excitatory, 8 inhibitory)"]
    assert "input_dim=4" in repr(wiring)
