"""The op protocol for ``ember.ops.stats``: one stub per op (see :mod:`ember.backends._spec`)."""

# ruff: noqa: ARG001  (stubs: the signature is the specification)

from __future__ import annotations


class stats:
    """``ember.ops.stats``: descriptive statistics."""

    def mean(x, axis=None, keepdims=False):
        """Arithmetic mean.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.stats.mean([[1.0, 2.0], [3.0, 4.0]], axis=0)).tolist()
            [2.0, 3.0]
        """

    def var(x, axis=None, keepdims=False, ddof=0):
        """Variance.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.stats.var([1.0, 3.0])).tolist()
            1.0
            >>> ops.to_numpy(ops.stats.var([1.0, 3.0], ddof=1)).tolist()
            2.0
        """

    def std(x, axis=None, keepdims=False, ddof=0):
        """Standard deviation.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.stats.std([1.0, 3.0])).tolist()
            1.0
        """

    def median(x, axis=None, keepdims=False):
        """Median (mean of the two middle values for even counts).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.stats.median([3.0, 1.0, 4.0, 2.0])).tolist()
            2.5
        """

    def percentile(x, q, axis=None, keepdims=False, method="linear"):
        """``q``-th percentile(s), ``q`` in [0, 100] (scalar or 1-D, leading output axis as NumPy).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.stats.percentile([1.0, 2.0, 3.0, 4.0, 5.0], [25, 50])).tolist()
            [2.0, 3.0]
        """

    def quantile(x, q, axis=None, keepdims=False, method="linear"):
        """``q``-th quantile(s), ``q`` in [0, 1].

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.stats.quantile([1.0, 2.0, 3.0, 4.0, 5.0], 0.75)).tolist()
            4.0
        """

    def cov(x, rowvar=True, bias=False, ddof=None):
        """Covariance matrix, NumPy's ``cov`` semantics.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.stats.cov([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]])).tolist()
            [[1.0, 2.0], [2.0, 4.0]]
        """

    def gaussian(x, mean=0.0, std=1.0):
        """Normal probability density at ``x``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.stats.gaussian([0.0, 1.0])).astype(float).round(4).tolist()
            [0.3989, 0.242]
        """
