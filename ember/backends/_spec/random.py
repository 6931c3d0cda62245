"""The op protocol for ``ember.ops.random``: one stub per op (see :mod:`ember.backends._spec`)."""

# ruff: noqa: ARG001  (stubs: the signature is the specification)

from __future__ import annotations


class random:
    """``ember.ops.random`` / ``ember.random``: seeded random numbers.

    ``seed`` is an int or None. An int gives the same numbers on every call and every
    run of a backend. None draws from the backend's global generator, which
    :func:`set_seed` resets. Arrays land on the default device.
    """

    def set_seed(seed):
        """Reset the global generator that ``seed=None`` calls draw from."""

    def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
        """Uniform in ``[minval, maxval)``."""

    def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
        """Normal with the given mean and standard deviation."""

    def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
        """Normal resampled to lie within two standard deviations of the mean."""

    def bernoulli(shape, p=0.5, seed=None):
        """Boolean array, True with probability ``p``."""

    def randint(shape, minval, maxval, dtype="int32", seed=None):
        """Integers in ``[minval, maxval)``."""

    def categorical(logits, num_samples, dtype="int32", seed=None):
        """Samples from the categorical distributions given by rows of ``logits``: ``(batch, num_samples)``."""

    def permutation(x, seed=None):
        """A permutation of ``arange(x)`` (int ``x``) or of ``x`` along axis 0."""

    def shuffle(x, axis=0, seed=None):
        """``x`` shuffled along ``axis``."""

    def dropout(x, rate, noise_shape=None, seed=None):
        """Zero entries with probability ``rate`` and scale the rest by ``1 / (1 - rate)``."""
