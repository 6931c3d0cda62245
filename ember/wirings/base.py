"""``Wiring``: the connectivity of a neural circuit, as plain data.

A wiring describes ``units`` neurons and the synapses between them:

* ``adjacency_matrix`` ``(units, units)`` int32: entry ``[src, dest]`` is ``+1`` for an
  excitatory synapse from neuron ``src`` to neuron ``dest``, ``-1`` for an inhibitory one
  and ``0`` for none;
* ``sensory_adjacency_matrix`` ``(input_dim, units)`` int32: the same for synapses from
  the input features (the *sensory* neurons) into the circuit; it exists once the
  wiring is built for an input size (``build(input_dim)``), ``None`` before;
* ``output_dim``: the number of *motor* neurons; they are neurons ``0 .. output_dim-1``
  and their states are the output of a wired cell;
* a type per neuron (``"motor"``, ``"command"`` or ``"inter"``) and a grouping into
  feed-forward layers (``num_layers``, ``get_neurons_of_layer``) used by
  :class:`~ember.layers.WiredCfCCell`.

Wirings are data, independent of any backend: the matrices are NumPy int arrays drawn
from ``numpy.random.default_rng`` with the wiring's seed, so the same seed gives the
same circuit on every backend and every run. The recurrent synapses are drawn when the
wiring is created; the sensory synapses, which need the input size, when it is built
(from a second random stream, so they never shift the recurrent ones).
``get_config``/``from_config`` round-trip the matrices exactly (a hand-edited wiring
comes back as it was), and ``build`` is idempotent.

Cells never mutate the wiring they are given: they keep a copy, and use
:meth:`Wiring.built` (the wiring itself when it is already built for the input size, a
cached built copy otherwise).

Example:
    >>> from ember import wirings
    >>> wiring = wirings.Wiring(3, output_dim=1)
    >>> wiring.add_synapse(1, 0, 1)
    >>> wiring.add_synapse(2, 1, -1)
    >>> wiring.build(2)
    >>> wiring.add_sensory_synapse(0, 2, 1)
    >>> wiring.synapse_count, wiring.sensory_synapse_count, wiring.neuron_types
    (2, 1, ['motor', 'inter', 'inter'])
    >>> rebuilt = wirings.Wiring.from_config(wiring.get_config())
    >>> rebuilt == wiring
    True
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.serialization import register_serializable
from ember.wirings.draw import draw_wiring

NEURON_TYPES = ("sensory", "inter", "command", "motor")
_MATRIX_KEYS = ("adjacency_matrix", "sensory_adjacency_matrix", "input_dim")


def check_count(owner: str, name: str, value: Any, minimum: int = 1) -> int:
    """``value`` as an int ``>= minimum``; ValueError/TypeError naming ``owner.name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {name} must be an int, received {value!r}")
    if value < minimum:
        raise ValueError(f"{owner}: {name} must be >= {minimum}, received {value}")
    return int(value)


def check_seed(owner: str, name: str, value: Any) -> int:
    """A non-negative int seed (what ``numpy.random.default_rng`` accepts)."""
    return check_count(owner, name, value, minimum=0)


def check_sparsity(owner: str, value: Any) -> float:
    """A sparsity level strictly between 0 and 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 < float(value) < 1.0:
        raise ValueError(f"{owner}: sparsity_level must be a number strictly between 0 and 1, received {value!r}")
    return float(value)


def random_polarity(rng: np.random.Generator, size: int | tuple[int, ...] | None = None,
                    excitatory_share: str = "two_thirds") -> Any:
    """Synapse polarities: ``+1`` with probability 2/3 (``"two_thirds"``) or 1/2 (``"half"``)."""
    choices = np.array([-1, 1, 1] if excitatory_share == "two_thirds" else [-1, 1], dtype=np.int32)
    return rng.choice(choices, size=size)


@register_serializable("ember")
class Wiring:
    """A neural circuit: ``units`` neurons, signed synapses, ``output_dim`` motor neurons.

    The base class starts with no synapses; add them with :meth:`add_synapse` and, after
    :meth:`build`, :meth:`add_sensory_synapse`. The subclasses
    (:class:`~ember.wirings.FullyConnected`, :class:`~ember.wirings.Random`,
    :class:`~ember.wirings.NCP`, :class:`~ember.wirings.AutoNCP`) generate their synapses
    from a seed.

    Args:
        units: number of neurons (positive int).
        output_dim: number of motor neurons (neurons ``0 .. output_dim-1``), at most
            ``units``; ``None`` means ``units``.

    Attributes:
        adjacency_matrix: ``(units, units)`` int32, ``[src, dest]`` in ``{-1, 0, 1}``.
        sensory_adjacency_matrix: ``(input_dim, units)`` int32, or None before ``build``.
        input_dim: the number of sensory inputs, or None before ``build``.

    Example:
        >>> from ember import wirings
        >>> wiring = wirings.Wiring(2)
        >>> wiring.add_synapse(0, 1, -1)
        >>> wiring.adjacency_matrix.tolist()
        [[0, -1], [0, 0]]
    """

    def __init__(self, units: int, output_dim: int | None = None) -> None:
        name = type(self).__name__
        self.units = check_count(name, "units", units)
        if output_dim is None:
            output_dim = self.units
        self.output_dim = check_count(name, "output_dim", output_dim)
        if self.output_dim > self.units:
            raise ValueError(f"{name}: output_dim (the number of motor neurons) must be at most units={self.units}, "
                             f"received {self.output_dim}")
        self.adjacency_matrix = np.zeros((self.units, self.units), dtype=np.int32)
        self.sensory_adjacency_matrix: np.ndarray | None = None
        self.input_dim: int | None = None
        self._built_copies: dict[int, Wiring] = {}

    # --- structure ------------------------------------------------------------------------
    @property
    def num_layers(self) -> int:
        """Number of feed-forward layers (1 unless the wiring is layered, as NCP is)."""
        return 1

    def get_neurons_of_layer(self, layer_id: int) -> list[int]:
        """Neuron ids of layer ``layer_id`` (every neuron for a one-layer wiring)."""
        self._check_layer(layer_id)
        return list(range(self.units))

    def _check_layer(self, layer_id: int) -> None:
        if isinstance(layer_id, bool) or not isinstance(layer_id, numbers.Integral) or not (
                0 <= layer_id < self.num_layers):
            raise ValueError(f"{type(self).__name__}: layer_id must be an int in [0, {self.num_layers}), "
                             f"received {layer_id!r}")

    def get_type_of_neuron(self, neuron_id: int) -> str:
        """``"motor"`` for the first ``output_dim`` neurons, ``"inter"`` for the others."""
        self._check_neuron(neuron_id, "neuron_id")
        return "motor" if neuron_id < self.output_dim else "inter"

    @property
    def neuron_types(self) -> list[str]:
        """The type of every neuron, in id order."""
        return [self.get_type_of_neuron(i) for i in range(self.units)]

    def _check_neuron(self, neuron_id: Any, argument: str, count: int | None = None, what: str = "neuron") -> int:
        count = self.units if count is None else count
        is_id = not isinstance(neuron_id, bool) and isinstance(neuron_id, numbers.Integral)
        if not is_id or not 0 <= neuron_id < count:
            raise ValueError(f"{type(self).__name__}: {argument} must be a {what} id in [0, {count}), "
                             f"received {neuron_id!r}")
        return int(neuron_id)

    @staticmethod
    def _check_polarity(owner: str, polarity: Any) -> int:
        if isinstance(polarity, bool) or polarity not in (-1, 1):
            raise ValueError(f"{owner}: polarity must be +1 (excitatory) or -1 (inhibitory), received {polarity!r}")
        return int(polarity)

    # --- editing --------------------------------------------------------------------------
    def add_synapse(self, src: int, dest: int, polarity: int) -> None:
        """Add (or overwrite) the synapse ``src -> dest`` with polarity ``+1`` or ``-1``."""
        src = self._check_neuron(src, "src")
        dest = self._check_neuron(dest, "dest")
        self.adjacency_matrix[src, dest] = self._check_polarity(f"{type(self).__name__}.add_synapse", polarity)
        self._built_copies.clear()

    def add_sensory_synapse(self, src: int, dest: int, polarity: int) -> None:
        """Add (or overwrite) the synapse from input feature ``src`` to neuron ``dest`` (needs ``build``)."""
        if self.input_dim is None or self.sensory_adjacency_matrix is None:  # build sets both
            raise ValueError(f"{type(self).__name__}.add_sensory_synapse: the wiring is not built; "
                             f"call build(input_dim) first")
        src = self._check_neuron(src, "src", self.input_dim, "sensory input")
        dest = self._check_neuron(dest, "dest")
        self.sensory_adjacency_matrix[src, dest] = self._check_polarity(
            f"{type(self).__name__}.add_sensory_synapse", polarity)

    # --- building ---------------------------------------------------------------------------
    def is_built(self) -> bool:
        """True once :meth:`build` has set the input size."""
        return self.input_dim is not None

    def build(self, input_dim: int) -> None:
        """Create the sensory synapses for ``input_dim`` input features.

        Idempotent: building again with the same ``input_dim`` changes nothing; a different
        ``input_dim`` raises (a wiring's sensory synapses are fixed once drawn).
        """
        name = type(self).__name__
        input_dim = check_count(name, "input_dim", input_dim)
        if self.input_dim is not None:
            if self.input_dim != input_dim:
                raise ValueError(f"{name}: the wiring is already built for input_dim={self.input_dim}, "
                                 f"cannot build it for input_dim={input_dim} (use a new wiring or wiring.copy())")
            return
        sensory = np.zeros((input_dim, self.units), dtype=np.int32)
        self._draw_sensory_synapses(sensory)
        self.sensory_adjacency_matrix = sensory
        self.input_dim = input_dim

    def _draw_sensory_synapses(self, sensory: np.ndarray) -> None:
        """Fill ``sensory`` ``(input_dim, units)`` in place; the base wiring draws none."""

    def built(self, input_dim: int) -> Wiring:
        """This wiring built for ``input_dim`` without modifying it.

        Returns ``self`` when it is already built for ``input_dim``, otherwise a built copy
        (cached, so repeated calls are cheap). Raises ValueError when the wiring is built for
        another input size.

        Example:
            >>> from ember import wirings
            >>> wiring = wirings.FullyConnected(3)
            >>> copy = wiring.built(2)
            >>> wiring.is_built(), copy.input_dim, wiring.built(2) is copy
            (False, 2, True)
        """
        if self.input_dim is not None:
            if self.input_dim != input_dim:
                raise ValueError(f"{type(self).__name__}: the wiring is built for input_dim={self.input_dim}, "
                                 f"but the inputs have {input_dim} features")
            return self
        copy = self._built_copies.get(input_dim)
        if copy is None:
            copy = self.copy()
            copy.build(input_dim)
            self._built_copies[input_dim] = copy
        return copy

    def copy(self) -> Wiring:
        """An independent copy with the same matrices (through the config)."""
        return type(self).from_config(self.get_config())

    # --- statistics -------------------------------------------------------------------------
    @property
    def synapse_count(self) -> int:
        """Number of synapses between neurons."""
        return int(np.count_nonzero(self.adjacency_matrix))

    @property
    def sensory_synapse_count(self) -> int:
        """Number of synapses from the inputs (0 before ``build``)."""
        return 0 if self.sensory_adjacency_matrix is None else int(np.count_nonzero(self.sensory_adjacency_matrix))

    def statistics(self) -> dict:
        """Counts: neurons per type and synapses per polarity (what :meth:`summary` prints).

        Example:
            >>> from ember import wirings
            >>> wirings.FullyConnected(2, self_connections=False).statistics()["synapses"]
            2
        """
        types = self.neuron_types
        sensory = self.sensory_adjacency_matrix
        return {
            "units": self.units,
            "input_dim": self.input_dim,
            "output_dim": self.output_dim,
            "neurons": {kind: types.count(kind) for kind in ("inter", "command", "motor")},
            "synapses": self.synapse_count,
            "excitatory_synapses": int(np.sum(self.adjacency_matrix == 1)),
            "inhibitory_synapses": int(np.sum(self.adjacency_matrix == -1)),
            "sensory_synapses": self.sensory_synapse_count,
            "excitatory_sensory_synapses": 0 if sensory is None else int(np.sum(sensory == 1)),
            "inhibitory_sensory_synapses": 0 if sensory is None else int(np.sum(sensory == -1)),
        }

    def summary(self, print_fn: Callable[[str], Any] = print) -> None:
        """Print the neuron and synapse counts (one line each) with ``print_fn``.

        Example:
            >>> from ember import wirings
            >>> wirings.NCP(3, 2, 1, 2, 2, 1, 2, seed=0).summary()
            NCP: 6 neurons (3 inter, 2 command, 1 motor), not built (no sensory inputs yet)
            synapses: 9 (6 excitatory, 3 inhibitory)
            sensory synapses: 0
        """
        s = self.statistics()
        neurons = ", ".join(f"{n} {kind}" for kind, n in s["neurons"].items() if n)
        inputs = "not built (no sensory inputs yet)" if s["input_dim"] is None else f"{s['input_dim']} sensory inputs"
        print_fn(f"{type(self).__name__}: {s['units']} neurons ({neurons}), {inputs}")
        print_fn(f"synapses: {s['synapses']} ({s['excitatory_synapses']} excitatory, "
                 f"{s['inhibitory_synapses']} inhibitory)")
        line = f"sensory synapses: {s['sensory_synapses']}"
        if s["input_dim"] is not None:
            line += (f" ({s['excitatory_sensory_synapses']} excitatory, "
                     f"{s['inhibitory_sensory_synapses']} inhibitory)")
        print_fn(line)

    def draw(self, ax: Any = None, **kwargs: Any) -> Any:
        """Plot the circuit with matplotlib (``pip install "ember[plot]"``); returns the Axes.

        Neurons are coloured by type (sensory, inter, command, motor) and laid out in
        columns in that order; synapses are coloured by polarity. See
        :func:`ember.wirings.draw.draw_wiring` for the options.
        """
        return draw_wiring(self, ax=ax, **kwargs)

    # --- serialization ----------------------------------------------------------------------
    def _constructor_config(self) -> dict:
        """The constructor arguments (subclasses override)."""
        return {"units": self.units, "output_dim": self.output_dim}

    def get_config(self) -> dict:
        """Constructor arguments plus the matrices (plain JSON: lists of ints)."""
        config = self._constructor_config()
        config["adjacency_matrix"] = self.adjacency_matrix.tolist()
        config["input_dim"] = self.input_dim
        config["sensory_adjacency_matrix"] = (None if self.sensory_adjacency_matrix is None
                                              else self.sensory_adjacency_matrix.tolist())
        return config

    @classmethod
    def from_config(cls, config: dict) -> Wiring:
        """Rebuild a wiring from :meth:`get_config`'s output, with exactly those matrices."""
        if not isinstance(config, dict):
            raise TypeError(f"{cls.__name__}.from_config: expected a dict, received {type(config).__name__}")
        config = dict(config)
        matrices = {key: config.pop(key, None) for key in _MATRIX_KEYS}
        wiring = cls(**config)
        if matrices["adjacency_matrix"] is not None:
            wiring.adjacency_matrix = _matrix(cls.__name__, "adjacency_matrix", matrices["adjacency_matrix"],
                                              (wiring.units, wiring.units))
        input_dim, sensory = matrices["input_dim"], matrices["sensory_adjacency_matrix"]
        if (input_dim is None) != (sensory is None):
            raise ValueError(f"{cls.__name__}.from_config: input_dim and sensory_adjacency_matrix must be given "
                             f"together, received input_dim={input_dim!r} and "
                             f"{'no' if sensory is None else 'a'} sensory_adjacency_matrix")
        if input_dim is not None:
            input_dim = check_count(cls.__name__, "input_dim", input_dim)
            wiring.sensory_adjacency_matrix = _matrix(cls.__name__, "sensory_adjacency_matrix", sensory,
                                                      (input_dim, wiring.units))
            wiring.input_dim = input_dim
        return wiring

    # --- comparison -------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.get_config() == other.get_config()

    def __hash__(self) -> int:
        # Built on what never changes (build and add_synapse edit the matrices in place),
        # so equal wirings hash equal.
        return hash((type(self).__name__, self.units, self.output_dim))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._constructor_config().items())
        built = "" if self.input_dim is None else f", input_dim={self.input_dim}"
        return f"{type(self).__name__}({args}{built})"


def _matrix(owner: str, name: str, value: Any, shape: tuple[int, int]) -> np.ndarray:
    """A saved matrix back as int32, checked for shape and ``{-1, 0, 1}`` entries."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        raise ValueError(f"{owner}.from_config: {name} must be a nested list of ints, received {value!r}") from None
    if array.shape != shape:
        raise ValueError(f"{owner}.from_config: {name} must have shape {shape}, received {array.shape}")
    if array.size and (not np.issubdtype(array.dtype, np.number) or not np.all(np.isin(array, (-1, 0, 1)))):
        raise ValueError(f"{owner}.from_config: {name} entries must be -1, 0 or 1")
    return array.astype(np.int32)
