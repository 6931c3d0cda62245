"""``AutoNCP``: an :class:`~ember.wirings.NCP` sized from a neuron count and a sparsity level."""

from __future__ import annotations

from ember.serialization import register_serializable
from ember.wirings.base import check_count, check_sparsity
from ember.wirings.ncp import NCP


def auto_ncp_sizes(units: int, output_size: int, sparsity_level: float) -> dict:
    """The :class:`NCP` arguments ``AutoNCP(units, output_size, sparsity_level)`` uses.

    With ``density = 1 - sparsity_level`` and ``n = units - output_size``:
    ``command = max(1, int(0.4 * n))``, ``inter = n - command``,
    ``sensory_fanout = max(1, int(inter * density))``,
    ``inter_fanout = motor_fanin = max(1, int(command * density))``,
    ``recurrent_command_synapses = max(1, int(2 * command * density))``.

    Example:
        >>> from ember.wirings.auto_ncp import auto_ncp_sizes
        >>> auto_ncp_sizes(32, 4, 0.5)["command_neurons"]
        11
    """
    units = check_count("AutoNCP", "units", units)
    output_size = check_count("AutoNCP", "output_size", output_size)
    sparsity_level = check_sparsity("AutoNCP", sparsity_level)
    if units - output_size < 2:
        raise ValueError(f"AutoNCP: units must exceed output_size by at least 2 (one inter and one command neuron), "
                         f"received units={units} and output_size={output_size}")
    density = 1.0 - sparsity_level
    inter_and_command = units - output_size
    command = max(int(0.4 * inter_and_command), 1)
    inter = inter_and_command - command
    return {
        "inter_neurons": inter,
        "command_neurons": command,
        "motor_neurons": output_size,
        "sensory_fanout": max(int(inter * density), 1),
        "inter_fanout": max(int(command * density), 1),
        "recurrent_command_synapses": max(int(command * density * 2), 1),
        "motor_fanin": max(int(command * density), 1),
    }


@register_serializable("ember")
class AutoNCP(NCP):
    """An NCP with ``units`` neurons, ``output_size`` of them motor, sized by ``sparsity_level``.

    40% of the non-motor neurons are command neurons (at least one), the rest inter
    neurons; the fan-outs and fan-ins scale with ``1 - sparsity_level`` (see
    :func:`auto_ncp_sizes`).

    Args:
        units: total number of neurons; at least ``output_size + 2``.
        output_size: number of motor neurons (the output size of a wired cell).
        sparsity_level: strictly between 0 and 1; higher means fewer synapses.
        seed: seed of the synapses (non-negative int).

    Example:
        >>> from ember import wirings
        >>> wiring = wirings.AutoNCP(16, 2, sparsity_level=0.5, seed=0)
        >>> wiring.statistics()["neurons"]
        {'inter': 9, 'command': 5, 'motor': 2}
    """

    def __init__(self, units: int, output_size: int, sparsity_level: float = 0.5, seed: int = 22222) -> None:
        sizes = auto_ncp_sizes(units, output_size, sparsity_level)
        self.output_size = int(output_size)
        self.sparsity_level = float(sparsity_level)
        super().__init__(**sizes, seed=seed)

    def _constructor_config(self) -> dict:
        return {"units": self.units, "output_size": self.output_size, "sparsity_level": self.sparsity_level,
                "seed": self.seed}
