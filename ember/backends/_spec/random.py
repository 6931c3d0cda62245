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
        """Reset the global generator that ``seed=None`` calls draw from.

        Example:
            >>> from ember import ops
            >>> ops.random.set_seed(7)
            >>> a = ops.to_numpy(ops.random.normal((3,)))
            >>> ops.random.set_seed(7)
            >>> bool((a == ops.to_numpy(ops.random.normal((3,)))).all())
            True
        """

    def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
        """Uniform in ``[minval, maxval)``.

        Example:
            >>> from ember import ops
            >>> x = ops.random.uniform((2, 3), minval=-1.0, maxval=1.0, seed=0)
            >>> ops.shape(x), ops.dtype(x), bool(ops.all(ops.less(ops.abs(x), 1.0)))
            ((2, 3), 'float32', True)
        """

    def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
        """Normal with the given mean and standard deviation.

        Example:
            >>> from ember import ops
            >>> x = ops.random.normal((2, 3), seed=0)
            >>> ops.shape(x), ops.dtype(x)
            ((2, 3), 'float32')
            >>> bool((ops.to_numpy(x) == ops.to_numpy(ops.random.normal((2, 3), seed=0))).all())
            True
        """

    def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
        """Normal resampled to lie within two standard deviations of the mean.

        Example:
            >>> from ember import ops
            >>> x = ops.random.truncated_normal((100,), stddev=1.0, seed=0)
            >>> bool(ops.all(ops.less_equal(ops.abs(x), 2.0)))
            True
        """

    def bernoulli(shape, p=0.5, seed=None):
        """Boolean array, True with probability ``p``.

        Example:
            >>> from ember import ops
            >>> x = ops.random.bernoulli((4,), p=1.0, seed=0)
            >>> ops.to_numpy(x).tolist()
            [True, True, True, True]
        """

    def randint(shape, minval, maxval, dtype="int32", seed=None):
        """Integers in ``[minval, maxval)``.

        Example:
            >>> from ember import ops
            >>> x = ops.random.randint((5,), 0, 3, seed=0)
            >>> ops.dtype(x), set(ops.to_numpy(x).tolist()) <= {0, 1, 2}
            ('int32', True)
        """

    def categorical(logits, num_samples, dtype="int32", seed=None):
        """Samples from the categorical distributions given by rows of ``logits``: ``(batch, num_samples)``.

        Example:
            >>> from ember import ops
            >>> x = ops.random.categorical([[0.0, -1e9]], 3, seed=0)
            >>> ops.shape(x), ops.to_numpy(x).tolist()
            ((1, 3), [[0, 0, 0]])
        """

    def permutation(x, seed=None):
        """A permutation of ``arange(x)`` (int ``x``) or of ``x`` along axis 0.

        Example:
            >>> from ember import ops
            >>> sorted(ops.to_numpy(ops.random.permutation(4, seed=0)).tolist())
            [0, 1, 2, 3]
        """

    def shuffle(x, axis=0, seed=None):
        """``x`` shuffled along ``axis``.

        Example:
            >>> from ember import ops
            >>> x = ops.random.shuffle(ops.arange(4), seed=0)
            >>> sorted(ops.to_numpy(x).tolist())
            [0, 1, 2, 3]
        """

    def dropout(x, rate, noise_shape=None, seed=None):
        """Zero entries with probability ``rate`` and scale the rest by ``1 / (1 - rate)``.

        Example:
            >>> from ember import ops
            >>> x = ops.random.dropout(ops.ones((1000,)), 0.5, seed=0)
            >>> sorted(set(ops.to_numpy(x).tolist()))
            [0.0, 2.0]
        """
