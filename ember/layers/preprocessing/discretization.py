"""``Discretization``: bucket numeric inputs by bin boundaries (given, or exact quantiles from ``adapt``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes, ops
from ember.layers.layer import DeclarativeLayer
from ember.layers.preprocessing.category_encoding import encode, encoded_shape
from ember.layers.preprocessing.normalization import host_array

_MODES = ("int", "one_hot", "multi_hot", "count")


class Discretization(DeclarativeLayer):
    """Bucket index of each input: bucket ``i`` holds ``boundaries[i-1] <= x < boundaries[i]``.

    :meth:`adapt` returns a copy with ``num_bins - 1`` boundaries at the exact quantiles of
    the data (Keras approximates them with a streaming summary; ``epsilon`` is its error
    bound and is kept only for config compatibility).

    Args:
        bin_boundaries: increasing list of boundaries (``len + 1`` buckets).
        num_bins: number of buckets for :meth:`adapt`.
        epsilon: Keras's quantile-summary error bound (unused: Ember's quantiles are exact).
        output_mode: ``"int"`` (bucket indices) or ``"one_hot"``/``"multi_hot"``/``"count"``.
        sparse: must be False (Ember has no sparse arrays).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Discretization(bin_boundaries=[0.0, 1.0])
        >>> y, _ = layer.apply(layer.build((None, 3)), ops.convert_to_tensor([[-1.0, 0.5, 2.0]]))
        >>> ops.to_numpy(y).tolist()
        [[0, 1, 2]]
    """

    bin_boundaries: Any = None
    num_bins: int | None = None
    epsilon: float = 0.01
    output_mode: str = "int"
    sparse: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.output_mode not in _MODES:
            raise ValueError(f"{self.name}: output_mode must be one of {_MODES}, received {self.output_mode!r}")
        if self.sparse:
            raise ValueError(f"{self.name}: sparse=True is not supported (Ember has no sparse arrays)")
        if self.bin_boundaries is not None:
            boundaries = [float(b) for b in self.bin_boundaries]
            if any(b >= c for b, c in zip(boundaries, boundaries[1:])):
                raise ValueError(f"{self.name}: bin_boundaries must be strictly increasing, received {boundaries}")
            self._normalize("bin_boundaries", boundaries)
        if self.num_bins is not None and (isinstance(self.num_bins, bool) or not isinstance(self.num_bins, int)
                                          or self.num_bins < 1):
            raise ValueError(f"{self.name}: num_bins must be a positive int, received {self.num_bins!r}")
        if self.bin_boundaries is not None and self.num_bins is not None and \
                self.num_bins != len(self.bin_boundaries) + 1:
            raise ValueError(f"{self.name}: num_bins={self.num_bins} disagrees with {len(self.bin_boundaries)} "
                             "bin_boundaries (num_bins must be len(bin_boundaries) + 1)")

    def adapt(self, data: Any, steps: Any = None) -> Discretization:
        """A copy with ``num_bins - 1`` boundaries at the quantiles of ``data``."""
        if self.num_bins is None:
            raise ValueError(f"{self.name}: adapt needs num_bins")
        values = host_array(data).astype(np.float64).ravel()
        quantiles = np.quantile(values, np.linspace(0.0, 1.0, self.num_bins + 1)[1:-1])
        boundaries = np.unique(quantiles).tolist()
        return self.replace(bin_boundaries=boundaries, num_bins=len(boundaries) + 1)

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        if self.bin_boundaries is None:
            raise ValueError(f"layer {self.name!r} has no bin_boundaries: pass them, or adapt it first with "
                             "layer = layer.adapt(data) (adapt returns the new layer)")
        return super().build(input_shape, seed)

    def call(self, params: dict, inputs: Any) -> Any:
        x = inputs if dtypes.is_float(ops.dtype(inputs)) else ops.cast(inputs, dtypes.floatx())
        boundaries = ops.convert_to_tensor(self.bin_boundaries, dtype=ops.dtype(x))
        buckets = ops.digitize(x, boundaries)
        if self.output_mode == "int":
            return buckets
        dtype = self.compute_dtype if self.dtype else dtypes.floatx()
        return encode(buckets, len(self.bin_boundaries) + 1, self.output_mode, dtype)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        if self.output_mode == "int":
            return tuple(input_shape)
        return encoded_shape(tuple(input_shape), len(self.bin_boundaries or ()) + 1, self.output_mode)
