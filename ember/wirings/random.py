"""``Random``: a sparse circuit with synapses at random positions."""

from __future__ import annotations

import numpy as np

from ember.serialization import register_serializable
from ember.wirings.base import Wiring, check_seed, check_sparsity, random_polarity


def _scatter(rng: np.random.Generator, target: np.ndarray, sparsity_level: float) -> None:
    """Place ``round(size * (1 - sparsity_level))`` synapses at distinct random entries of ``target``."""
    count = int(np.round(target.size * (1.0 - sparsity_level)))
    positions = rng.choice(target.size, size=count, replace=False)
    target.reshape(-1)[positions] = random_polarity(rng, size=count)


@register_serializable("ember")
class Random(Wiring):
    """A randomly sparse circuit.

    ``round(units**2 * (1 - sparsity_level))`` synapses at distinct random ``(src, dest)``
    pairs, polarities excitatory with probability 2/3; ``build`` places
    ``round(input_dim * units * (1 - sparsity_level))`` sensory synapses the same way
    (from a second random stream of the same seed). Unlike :class:`~ember.wirings.NCP`, a
    random wiring may leave neurons without inputs.

    Args:
        units: number of neurons.
        output_dim: number of motor neurons (the first ``output_dim``); default ``units``.
        sparsity_level: fraction of the possible synapses left out, strictly between 0 and 1.
        seed: seed of the positions and polarities (non-negative int).

    Example:
        >>> from ember import wirings
        >>> wiring = wirings.Random(10, output_dim=2, sparsity_level=0.8, seed=0)
        >>> wiring.synapse_count
        20
    """

    def __init__(self, units: int, output_dim: int | None = None, sparsity_level: float = 0.5,
                 seed: int = 1111) -> None:
        super().__init__(units, output_dim)
        self.sparsity_level = check_sparsity("Random", sparsity_level)
        self.seed = check_seed("Random", "seed", seed)
        _scatter(np.random.default_rng(self.seed), self.adjacency_matrix, self.sparsity_level)

    def _draw_sensory_synapses(self, sensory: np.ndarray) -> None:
        _scatter(np.random.default_rng((self.seed, 1)), sensory, self.sparsity_level)

    def _constructor_config(self) -> dict:
        return {"units": self.units, "output_dim": self.output_dim, "sparsity_level": self.sparsity_level,
                "seed": self.seed}
