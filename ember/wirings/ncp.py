"""``NCP``: the layered Neural Circuit Policy wiring (Lechner et al., Nature Machine Intelligence 2020).

Four kinds of neurons in a feed-forward hierarchy with recurrent command neurons::

    sensory (inputs) -> inter -> command (+ recurrent command synapses) -> motor (outputs)

Neuron ids: motor ``0 .. M-1``, command ``M .. M+C-1``, inter ``M+C .. M+C+I-1`` (so the
motor neurons, the outputs, come first as in every wiring). Synapses are drawn with
``numpy.random.default_rng(seed)``, each polarity excitatory or inhibitory with
probability 1/2:

1. inter -> command: every inter neuron gets ``inter_fanout`` distinct command targets;
   every command neuron left without an input then gets inputs from
   ``max(1, min(I, int(I * inter_fanout / C)))`` distinct inter neurons;
2. ``recurrent_command_synapses`` command -> command synapses at random (pairs drawn with
   replacement, so a repeated pair counts once);
3. command -> motor: every motor neuron gets ``motor_fanin`` distinct command inputs;
   every command neuron left without a motor target then gets
   ``max(1, min(M, int(M * motor_fanin / C)))`` distinct motor targets;
4. at ``build(input_dim)``, sensory -> inter (from a second random stream): every input
   gets ``sensory_fanout`` distinct inter targets; every inter neuron left without an
   input then gets ``max(1, min(input_dim, int(input_dim * sensory_fanout / I)))``
   distinct sensory inputs.

So every neuron lies on a path from the inputs to a motor neuron.
"""

from __future__ import annotations

import numpy as np

from ember.serialization import register_serializable
from ember.wirings.base import Wiring, check_count, check_seed, random_polarity


def _fan_out_with_cover(rng: np.random.Generator, matrix: np.ndarray, sources: np.ndarray, targets: np.ndarray,
                        fanout: int) -> None:
    """Each source -> ``fanout`` distinct targets; each target left without a source then gets the
    mean fan-in of distinct sources. ``matrix[src, dest]`` is written in place (a transposed
    view turns this into "each target <- ``fanout`` sources")."""
    reached = np.zeros(matrix.shape[1], dtype=bool)
    for src in sources:
        for dest in rng.choice(targets, size=fanout, replace=False):
            matrix[src, dest] = random_polarity(rng, excitatory_share="half")
            reached[dest] = True
    mean_fanin = int(np.clip(int(len(sources) * fanout / len(targets)), 1, len(sources)))
    for dest in targets:
        if reached[dest]:
            continue
        for src in rng.choice(sources, size=mean_fanin, replace=False):
            matrix[src, dest] = random_polarity(rng, excitatory_share="half")


@register_serializable("ember")
class NCP(Wiring):
    """A Neural Circuit Policy: sensory -> inter -> command (recurrent) -> motor.

    See the module docstring for how the synapses are drawn.

    Args:
        inter_neurons: number of inter neurons (first layer).
        command_neurons: number of command neurons (second layer, recurrent).
        motor_neurons: number of motor neurons (outputs; ``output_dim``).
        sensory_fanout: inter targets of each input, in ``[1, inter_neurons]``.
        inter_fanout: command targets of each inter neuron, in ``[1, command_neurons]``.
        recurrent_command_synapses: number of command -> command synapses drawn (``>= 0``).
        motor_fanin: command inputs of each motor neuron, in ``[1, command_neurons]``.
        seed: seed of the synapses (non-negative int).

    Example:
        >>> from ember import wirings
        >>> wiring = wirings.NCP(inter_neurons=4, command_neurons=3, motor_neurons=2, sensory_fanout=2,
        ...                      inter_fanout=2, recurrent_command_synapses=3, motor_fanin=2, seed=0)
        >>> wiring.units, wiring.output_dim, wiring.num_layers, wiring.get_neurons_of_layer(1)
        (9, 2, 3, [2, 3, 4])
        >>> wiring.statistics()["neurons"]
        {'inter': 4, 'command': 3, 'motor': 2}
    """

    def __init__(self, inter_neurons: int, command_neurons: int, motor_neurons: int, sensory_fanout: int,
                 inter_fanout: int, recurrent_command_synapses: int, motor_fanin: int, seed: int = 22222) -> None:
        name = type(self).__name__
        inter = check_count(name, "inter_neurons", inter_neurons)
        command = check_count(name, "command_neurons", command_neurons)
        motor = check_count(name, "motor_neurons", motor_neurons)
        self.inter_neurons, self.command_neurons, self.motor_neurons = inter, command, motor
        self.sensory_fanout = self._check_fan("sensory_fanout", sensory_fanout, inter, "inter_neurons")
        self.inter_fanout = self._check_fan("inter_fanout", inter_fanout, command, "command_neurons")
        self.recurrent_command_synapses = check_count(name, "recurrent_command_synapses",
                                                      recurrent_command_synapses, minimum=0)
        self.motor_fanin = self._check_fan("motor_fanin", motor_fanin, command, "command_neurons")
        self.seed = check_seed(name, "seed", seed)
        super().__init__(inter + command + motor, output_dim=motor)

        motors = np.arange(0, motor)
        commands = np.arange(motor, motor + command)
        inters = np.arange(motor + command, self.units)
        rng = np.random.default_rng(self.seed)
        _fan_out_with_cover(rng, self.adjacency_matrix, inters, commands, self.inter_fanout)
        for _ in range(self.recurrent_command_synapses):
            src, dest = rng.choice(commands), rng.choice(commands)
            self.adjacency_matrix[src, dest] = random_polarity(rng, excitatory_share="half")
        # Through the transposed view: each motor neuron <- motor_fanin command neurons.
        _fan_out_with_cover(rng, self.adjacency_matrix.T, motors, commands, self.motor_fanin)

    def _check_fan(self, name: str, value: int, limit: int, limit_name: str) -> int:
        value = check_count(type(self).__name__, name, value)
        if value > limit:
            raise ValueError(f"{type(self).__name__}: {name} must be at most {limit_name}={limit}, received {value}")
        return value

    @property
    def num_layers(self) -> int:
        """Three layers: inter, command, motor."""
        return 3

    def get_neurons_of_layer(self, layer_id: int) -> list[int]:
        """Layer 0: inter neurons, 1: command neurons, 2: motor neurons."""
        self._check_layer(layer_id)
        motor, command = self.motor_neurons, self.command_neurons
        if layer_id == 0:
            return list(range(motor + command, self.units))
        if layer_id == 1:
            return list(range(motor, motor + command))
        return list(range(motor))

    def get_type_of_neuron(self, neuron_id: int) -> str:
        """``"motor"``, ``"command"`` or ``"inter"`` by id range."""
        self._check_neuron(neuron_id, "neuron_id")
        if neuron_id < self.motor_neurons:
            return "motor"
        if neuron_id < self.motor_neurons + self.command_neurons:
            return "command"
        return "inter"

    def _draw_sensory_synapses(self, sensory: np.ndarray) -> None:
        inters = np.arange(self.motor_neurons + self.command_neurons, self.units)
        _fan_out_with_cover(np.random.default_rng((self.seed, 1)), sensory, np.arange(sensory.shape[0]), inters,
                            self.sensory_fanout)

    def _constructor_config(self) -> dict:
        return {"inter_neurons": self.inter_neurons, "command_neurons": self.command_neurons,
                "motor_neurons": self.motor_neurons, "sensory_fanout": self.sensory_fanout,
                "inter_fanout": self.inter_fanout, "recurrent_command_synapses": self.recurrent_command_synapses,
                "motor_fanin": self.motor_fanin, "seed": self.seed}
