"""The op protocol for ``ember.ops.stats``: one stub per op (see :mod:`ember.backends._spec`)."""

# ruff: noqa: ARG001  (stubs: the signature is the specification)

from __future__ import annotations


class stats:
    """``ember.ops.stats``: descriptive statistics."""

    def mean(x, axis=None, keepdims=False):
        """Arithmetic mean."""

    def var(x, axis=None, keepdims=False, ddof=0):
        """Variance."""

    def std(x, axis=None, keepdims=False, ddof=0):
        """Standard deviation."""

    def median(x, axis=None, keepdims=False):
        """Median (mean of the two middle values for even counts)."""

    def percentile(x, q, axis=None, keepdims=False, method="linear"):
        """``q``-th percentile(s), ``q`` in [0, 100] (scalar or 1-D, leading output axis as NumPy)."""

    def quantile(x, q, axis=None, keepdims=False, method="linear"):
        """``q``-th quantile(s), ``q`` in [0, 1]."""

    def cov(x, rowvar=True, bias=False, ddof=None):
        """Covariance matrix, NumPy's ``cov`` semantics."""

    def gaussian(x, mean=0.0, std=1.0):
        """Normal probability density at ``x``."""
