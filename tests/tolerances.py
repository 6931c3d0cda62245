"""The suite's numeric bounds, each derived from the arithmetic it bounds (not tuned on a machine).

A test compares a result with an independent reference. The two differ by rounding only, and
rounding has known bounds: a float type with unit roundoff ``u`` (float32: 2**-24 = 6.0e-8; float64:
2**-53 = 1.1e-16) computes one operation within ``u`` of the exact result (relative), and a sum of
``n`` terms, in any order, within ``gamma_n = n*u / (1 - n*u)`` of the exact sum relative to the sum
of the terms' magnitudes (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., 3.1).
A bound here is that figure for the size of the computations the suite runs, times a stated margin.
A test whose computation is longer, or ill-conditioned, or statistical, derives its own bound beside
the comparison (``tests/test_tolerance_reasons.py`` holds every literal bound to a written reason).

Example:
    >>> import numpy as np
    >>> np.testing.assert_allclose(np.float32(1 / 3), 1 / 3, **FLOAT32)
"""

from __future__ import annotations

FLOAT32_UNIT_ROUNDOFF = 2.0 ** -24
FLOAT64_UNIT_ROUNDOFF = 2.0 ** -53

# Float32 against a reference (float64, or float32 by another implementation) on the suite's layer-
# and op-sized computations: chains of <= 30 element-wise operations and sums of <= 100 terms (a Dense
# of <= 100 inputs, a mean over a small batch). Each side is within (30 + 100) * u = 7.8e-6 of the
# exact result relative to the magnitudes involved -> rtol 1e-5 for one float32 side (design card:
# "float32 within ~1e-5 relative"). Near zero, where the result cancels from terms of magnitude
# <= 0.1 (initialised weights times unit-scale data), the same 130 roundings give 130 * u * 0.1 =
# 7.8e-7 absolute -> atol 1e-6.
FLOAT32 = {"rtol": 1e-5, "atol": 1e-6}

# Two float32 implementations compared with each other (torch's module against Ember's layer, one
# backend against another): each lies within FLOAT32 of the exact value, so they lie within twice
# that of each other.
FLOAT32_PAIR = {"rtol": 2e-5, "atol": 2e-6}

# Float64 against a float64 reference on the same computations: (30 + 100) * u = 1.4e-14 relative;
# the bound keeps a factor 7,000 for condition numbers up to ~1e3 (the suite's matrices and
# linearisations) -> rtol 1e-10 (design card: "float64 within ~1e-10"); atol 1e-12 for results near
# zero cancelled from unit-scale terms (1.4e-14 times a margin of 70).
FLOAT64 = {"rtol": 1e-10, "atol": 1e-12}


def unit_roundoff(dtype: str) -> float:
    """``u`` of a float dtype name (``"float32"`` or ``"float64"``).

    Example:
        >>> unit_roundoff("float64") == 2.0 ** -53
        True
    """
    return {"float32": FLOAT32_UNIT_ROUNDOFF, "float64": FLOAT64_UNIT_ROUNDOFF}[dtype]


def for_dtype(dtype: str) -> dict:
    """The reference bound (FLOAT32 or FLOAT64) for results of ``dtype``.

    Example:
        >>> for_dtype("float64") == FLOAT64
        True
    """
    return {"float32": FLOAT32, "float64": FLOAT64}[str(dtype)]
