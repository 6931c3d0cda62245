"""The op protocol for the top-level ``ember.ops`` namespace.

Creation, elementwise math, reductions, shapes, indexing: one stub per op (see :mod:`ember.backends._spec`).
"""

# ruff: noqa: ARG001  (stubs: the signature is the specification)

from __future__ import annotations


class core:
    """Top-level ``ember.ops`` namespace."""

    # --- conversion, dtype, device -------------------------------------------------
    def convert_to_tensor(x, dtype=None, device=None):
        """Return ``x`` as a native array of the active backend.

        Same object when it already is one with the requested dtype and device.
        bfloat16 NumPy arrays (ml_dtypes) convert losslessly.

        Example:
            >>> from ember import ops
            >>> x = ops.convert_to_tensor([1.0, 2.0])
            >>> ops.is_array(x), ops.dtype(x), ops.shape(x)
            (True, 'float32', (2,))
        """

    def asarray(x, dtype=None, device=None):
        """Alias of :func:`convert_to_tensor`.

        Example:
            >>> from ember import ops
            >>> ops.dtype(ops.asarray([1, 2], dtype='int64'))
            'int64'
        """

    def to_numpy(x):
        """A ``numpy.ndarray`` with the values of ``x`` (bfloat16 as ``ml_dtypes.bfloat16``).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.ones((2,))).tolist()
            [1.0, 1.0]
        """

    def is_array(x):
        """True if ``x`` is a native array of this backend.

        Example:
            >>> from ember import ops
            >>> ops.is_array(ops.zeros(2)), ops.is_array([0.0, 0.0])
            (True, False)
        """

    def cast(x, dtype):
        """``x`` converted to Ember dtype ``dtype`` (a name or any dtype-like).

        Example:
            >>> from ember import ops
            >>> ops.dtype(ops.cast([1.7, -1.7], 'int32')), ops.to_numpy(ops.cast([1.7, -1.7], 'int32')).tolist()
            ('int32', [1, -1])
        """

    def dtype(x):
        """Ember dtype name of ``x`` (``"float32"``, ``"bfloat16"``, ...).

        Example:
            >>> from ember import ops
            >>> ops.dtype(ops.zeros(2)), ops.dtype(ops.arange(3))
            ('float32', 'int32')
        """

    def shape(x):
        """Shape of ``x`` as a tuple of Python ints.

        Example:
            >>> from ember import ops
            >>> ops.shape(ops.zeros((2, 3)))
            (2, 3)
        """

    def ndim(x):
        """Number of dimensions of ``x``.

        Example:
            >>> from ember import ops
            >>> ops.ndim(ops.zeros((2, 3)))
            2
        """

    def size(x):
        """Number of elements of ``x`` as a Python int.

        Example:
            >>> from ember import ops
            >>> ops.size(ops.zeros((2, 3)))
            6
        """

    def get_device(x=None):
        """Device string of ``x`` (``"cpu"``, ``"cuda:0"``, ``"mps"``, ``"gpu"``), or the default device.

        Example:
            >>> from ember import ops
            >>> isinstance(ops.get_device(ops.zeros(2)), str)
            True
        """

    def to_device(x, device):
        """``x`` moved to ``device``; ``ValueError`` naming the device and the valid ones if unknown.

        Example:
            >>> from ember import ops
            >>> x = ops.zeros(2)
            >>> ops.get_device(ops.to_device(x, ops.get_device(x))) == ops.get_device(x)
            True
        """

    def stop_gradient(x):
        """``x`` with no gradient flowing back through it.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.stop_gradient([1.0, 2.0])).tolist()
            [1.0, 2.0]
        """

    # --- creation -----------------------------------------------------------------------
    def zeros(shape, dtype=None, device=None):
        """Array of zeros; ``shape`` is an int or a tuple.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.zeros((2, 2))).tolist()
            [[0.0, 0.0], [0.0, 0.0]]
        """

    def ones(shape, dtype=None, device=None):
        """Array of ones.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.ones(3, dtype='int32')).tolist()
            [1, 1, 1]
        """

    def full(shape, fill_value, dtype=None, device=None):
        """Array filled with ``fill_value`` (dtype inferred from it when ``dtype`` is None).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.full((2,), 7)).tolist()
            [7, 7]
            >>> ops.dtype(ops.full((2,), 0.5))
            'float32'
        """

    def zeros_like(x, dtype=None):
        """Zeros with the shape (and dtype unless given) of ``x``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.zeros_like([[1, 2]])).tolist()
            [[0, 0]]
        """

    def ones_like(x, dtype=None):
        """Ones with the shape (and dtype unless given) of ``x``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.ones_like([1.5, 2.5])).tolist()
            [1.0, 1.0]
        """

    def full_like(x, fill_value, dtype=None):
        """``fill_value`` with the shape (and dtype unless given) of ``x``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.full_like([1, 2, 3], 9)).tolist()
            [9, 9, 9]
        """

    def eye(N, M=None, k=0, dtype=None, device=None):
        """2-D array with ones on the ``k``-th diagonal.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.eye(2, 3, k=1)).tolist()
            [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
        """

    def arange(start, stop=None, step=1, dtype=None, device=None):
        """Evenly spaced values in ``[start, stop)``; NumPy semantics (``dtype="bool"``: the numbers cast).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.arange(5)).tolist()
            [0, 1, 2, 3, 4]
            >>> ops.to_numpy(ops.arange(1.0, 2.0, 0.25)).tolist()
            [1.0, 1.25, 1.5, 1.75]
        """

    def linspace(start, stop, num=50, endpoint=True, dtype=None, device=None):
        """``num`` evenly spaced values from ``start`` to ``stop``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.linspace(0.0, 1.0, 5)).tolist()
            [0.0, 0.25, 0.5, 0.75, 1.0]
        """

    # --- elementwise unary ----------------------------------------------------------
    def negative(x):
        """``-x``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.negative([1, -2])).tolist()
            [-1, 2]
        """

    def abs(x):
        """Absolute value (modulus for complex).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.abs([-1.5, 2.0])).tolist()
            [1.5, 2.0]
        """

    def sign(x):
        """-1, 0 or 1 by the sign of ``x`` (same dtype).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.sign([-3.0, 0.0, 2.0])).tolist()
            [-1.0, 0.0, 1.0]
        """

    def sqrt(x):
        """Square root (integers are first cast to ``floatx()``).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.sqrt([4.0, 9.0])).tolist()
            [2.0, 3.0]
        """

    def rsqrt(x):
        """``1 / sqrt(x)``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.rsqrt([4.0, 16.0])).tolist()
            [0.5, 0.25]
        """

    def square(x):
        """``x * x``; bool counts as 0/1 and gives ``int32`` (as :func:`sum`).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.square([-3, 2])).tolist()
            [9, 4]
        """

    def reciprocal(x):
        """``1 / x`` (integers cast to ``floatx()``).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.reciprocal([2.0, 4.0])).tolist()
            [0.5, 0.25]
        """

    def exp(x):
        """Exponential; integer inputs are cast to ``floatx()`` (as for every transcendental op).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.exp([0.0, 1.0])).astype(float).round(4).tolist()
            [1.0, 2.7183]
        """

    def log(x):
        """Natural logarithm.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.log([1.0, 10.0])).astype(float).round(4).tolist()
            [0.0, 2.3026]
        """

    def log1p(x):
        """``log(1 + x)``, accurate for small ``x``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.log1p([0.0, 1.0])).astype(float).round(4).tolist()
            [0.0, 0.6931]
        """

    def expm1(x):
        """``exp(x) - 1``, accurate for small ``x``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.expm1([0.0, 1.0])).astype(float).round(4).tolist()
            [0.0, 1.7183]
        """

    def log2(x):
        """Base-2 logarithm.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.log2([1.0, 8.0])).tolist()
            [0.0, 3.0]
        """

    def log10(x):
        """Base-10 logarithm.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.log10([1.0, 100.0])).astype(float).round(4).tolist()
            [0.0, 2.0]
        """

    def sin(x):
        """Sine.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.sin([0.0, 1.0])).astype(float).round(4).tolist()
            [0.0, 0.8415]
        """

    def cos(x):
        """Cosine.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.cos([0.0, 1.0])).astype(float).round(4).tolist()
            [1.0, 0.5403]
        """

    def tan(x):
        """Tangent.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.tan([0.0, 1.0])).astype(float).round(4).tolist()
            [0.0, 1.5574]
        """

    def arcsin(x):
        """Inverse sine.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.arcsin([0.0, 1.0])).astype(float).round(4).tolist()
            [0.0, 1.5708]
        """

    def arccos(x):
        """Inverse cosine.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.arccos([1.0, 0.0])).astype(float).round(4).tolist()
            [0.0, 1.5708]
        """

    def arctan(x):
        """Inverse tangent.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.arctan([0.0, 1.0])).astype(float).round(4).tolist()
            [0.0, 0.7854]
        """

    def sinh(x):
        """Hyperbolic sine.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.sinh([0.0, 1.0])).astype(float).round(4).tolist()
            [0.0, 1.1752]
        """

    def cosh(x):
        """Hyperbolic cosine.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.cosh([0.0, 1.0])).astype(float).round(4).tolist()
            [1.0, 1.5431]
        """

    def tanh(x):
        """Hyperbolic tangent.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.tanh([0.0, 1.0])).astype(float).round(4).tolist()
            [0.0, 0.7616]
        """

    def arcsinh(x):
        """Inverse hyperbolic sine.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.arcsinh([0.0, 1.0])).astype(float).round(4).tolist()
            [0.0, 0.8814]
        """

    def arccosh(x):
        """Inverse hyperbolic cosine.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.arccosh([1.0, 2.0])).astype(float).round(4).tolist()
            [0.0, 1.317]
        """

    def arctanh(x):
        """Inverse hyperbolic tangent.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.arctanh([0.0, 0.5])).astype(float).round(4).tolist()
            [0.0, 0.5493]
        """

    def erf(x):
        """Gauss error function.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.erf([0.5, 1.0])).astype(float).round(4).tolist()
            [0.5205, 0.8427]
        """

    def erfinv(x):
        """Inverse of the error function on (-1, 1).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.erfinv([0.0, 0.5])).astype(float).round(4).tolist()
            [0.0, 0.4769]
        """

    def round(x, decimals=0):
        """Round half to even (NumPy's rule) to ``decimals`` places.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.round([0.5, 1.5, 2.25])).tolist()
            [0.0, 2.0, 2.0]
            >>> ops.to_numpy(ops.round([1.2345], decimals=2)).astype(float).round(4).tolist()
            [1.23]
        """

    def floor(x):
        """Largest integer value not greater than ``x`` (same dtype).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.floor([-1.5, 1.5])).tolist()
            [-2.0, 1.0]
        """

    def ceil(x):
        """Smallest integer value not less than ``x`` (same dtype).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.ceil([-1.5, 1.5])).tolist()
            [-1.0, 2.0]
        """

    def isnan(x):
        """Boolean mask of NaNs (all False for integers).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.isnan([1.0, float('nan')])).tolist()
            [False, True]
        """

    def isinf(x):
        """Boolean mask of infinities.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.isinf([1.0, float('inf')])).tolist()
            [False, True]
        """

    def isfinite(x):
        """Boolean mask of finite values.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.isfinite([1.0, float('inf'), float('nan')])).tolist()
            [True, False, False]
        """

    def logical_not(x):
        """Boolean not.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.logical_not([True, False])).tolist()
            [False, True]
        """

    def real(x):
        """Real part (identity for real dtypes).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.real(ops.convert_to_tensor([1 + 2j]))).tolist()
            [1.0]
        """

    def imag(x):
        """Imaginary part (zeros for real dtypes).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.imag(ops.convert_to_tensor([1 + 2j]))).tolist()
            [2.0]
        """

    def conj(x):
        """Complex conjugate (identity for real dtypes).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.conj(ops.convert_to_tensor([1 + 2j]))).tolist()
            [(1-2j)]
        """

    # --- elementwise binary ---------------------------------------------------------
    def add(x1, x2):
        """``x1 + x2`` with broadcasting.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.add([1, 2], 3)).tolist()
            [4, 5]
            >>> ops.to_numpy(ops.add([[1.0], [2.0]], [10.0, 20.0])).tolist()
            [[11.0, 21.0], [12.0, 22.0]]
        """

    def subtract(x1, x2):
        """``x1 - x2``; two bools are a ``TypeError`` (use :func:`logical_xor`).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.subtract([5, 7], [1, 2])).tolist()
            [4, 5]
        """

    def multiply(x1, x2):
        """``x1 * x2``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.multiply([1.5, 2.0], 2.0)).tolist()
            [3.0, 4.0]
        """

    def divide(x1, x2):
        """True division; integer inputs give ``floatx()``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.divide([1, 3], 2)).tolist()
            [0.5, 1.5]
        """

    def floor_divide(x1, x2):
        """``x1 // x2`` (NumPy semantics, rounds toward -inf); two bools give ``int32``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.floor_divide([7, -7], 2)).tolist()
            [3, -4]
        """

    def mod(x1, x2):
        """``x1 % x2`` with the sign of ``x2`` (NumPy semantics); two bools give ``int32``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.mod([7, -7], 3)).tolist()
            [1, 2]
        """

    def power(x1, x2):
        """``x1 ** x2``; two bools give ``int32``.

        An integer or bool ``x1`` with a negative Python int exponent is a ``ValueError``
        (NumPy's rule; cast ``x1`` to a float dtype first).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.power([2, 3], 2)).tolist()
            [4, 9]
        """

    def maximum(x1, x2):
        """Element-wise maximum (NaN propagates).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.maximum([1, 5], [3, 2])).tolist()
            [3, 5]
        """

    def minimum(x1, x2):
        """Element-wise minimum (NaN propagates).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.minimum([1, 5], [3, 2])).tolist()
            [1, 2]
        """

    def arctan2(x1, x2):
        """Quadrant-aware ``arctan(x1 / x2)``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.arctan2([1.0, 0.0], [1.0, -1.0])).astype(float).round(4).tolist()
            [0.7854, 3.1416]
        """

    def equal(x1, x2):
        """``x1 == x2`` (bool).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.equal([1, 2], [1, 3])).tolist()
            [True, False]
        """

    def not_equal(x1, x2):
        """``x1 != x2`` (bool).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.not_equal([1, 2], [1, 3])).tolist()
            [False, True]
        """

    def less(x1, x2):
        """``x1 < x2`` (bool).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.less([1, 2], 2)).tolist()
            [True, False]
        """

    def less_equal(x1, x2):
        """``x1 <= x2`` (bool).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.less_equal([1, 2], 2)).tolist()
            [True, True]
        """

    def greater(x1, x2):
        """``x1 > x2`` (bool).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.greater([1, 2], 1)).tolist()
            [False, True]
        """

    def greater_equal(x1, x2):
        """``x1 >= x2`` (bool).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.greater_equal([1, 2], 1)).tolist()
            [True, True]
        """

    def logical_and(x1, x2):
        """Boolean and.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.logical_and([True, True], [True, False])).tolist()
            [True, False]
        """

    def logical_or(x1, x2):
        """Boolean or.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.logical_or([True, False], [False, False])).tolist()
            [True, False]
        """

    def logical_xor(x1, x2):
        """Boolean exclusive or.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.logical_xor([True, True], [True, False])).tolist()
            [False, True]
        """

    def isclose(x1, x2, rtol=1e-05, atol=1e-08, equal_nan=False):
        """NumPy's ``isclose``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.isclose([1.0, 1.0], [1.0 + 1e-9, 1.1])).tolist()
            [True, False]
        """

    def clip(x, x_min, x_max):
        """``x`` limited to ``[x_min, x_max]``; either bound (or both) may be None.

        Result dtype ``result_type(x, x_min, x_max)`` with weak Python scalars
        (``int32`` with ``2.5`` gives ``float32``, ``int8`` with ``2`` stays ``int8``); a bool
        result becomes ``int32`` (as Keras).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.clip([-2, 0, 5], -1, 3)).tolist()
            [-1, 0, 3]
        """

    def where(condition, x1=None, x2=None):
        """``x1`` where ``condition`` else ``x2``; with one argument, :func:`nonzero`.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.where([True, False], [1, 2], [10, 20])).tolist()
            [1, 20]
        """

    # --- reductions -------------------------------------------------------------------
    def sum(x, axis=None, keepdims=False):
        """Sum over ``axis`` (int, tuple or None for all).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.sum([[1, 2], [3, 4]], axis=0)).tolist()
            [4, 6]
            >>> ops.to_numpy(ops.sum([[1, 2], [3, 4]])).tolist()
            10
        """

    def mean(x, axis=None, keepdims=False):
        """Arithmetic mean.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.mean([[1.0, 2.0], [3.0, 5.0]], axis=1)).tolist()
            [1.5, 4.0]
        """

    def prod(x, axis=None, keepdims=False):
        """Product.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.prod([[1, 2], [3, 4]], axis=1)).tolist()
            [2, 12]
        """

    def max(x, axis=None, keepdims=False):
        """Maximum; ``ValueError`` on an empty reduction.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.max([[1, 5], [3, 2]], axis=0)).tolist()
            [3, 5]
        """

    def min(x, axis=None, keepdims=False):
        """Minimum; ``ValueError`` on an empty reduction.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.min([[1, 5], [3, 2]], axis=1, keepdims=True)).tolist()
            [[1], [2]]
        """

    def argmax(x, axis=None, keepdims=False):
        """Index of the first maximum (``int32``); over the flattened array when axis is None.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.argmax([[1, 5], [3, 2]], axis=1)).tolist()
            [1, 0]
        """

    def argmin(x, axis=None, keepdims=False):
        """Index of the first minimum (``int32``).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.argmin([4, 1, 3])).tolist()
            1
        """

    def var(x, axis=None, keepdims=False, ddof=0):
        """Variance with ``ddof`` delta degrees of freedom.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.var([1.0, 2.0, 3.0, 4.0])).tolist()
            1.25
            >>> ops.to_numpy(ops.var([1.0, 2.0, 3.0, 4.0], ddof=1)).astype(float).round(4).tolist()
            1.6667
        """

    def std(x, axis=None, keepdims=False, ddof=0):
        """Standard deviation.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.std([1.0, 3.0])).tolist()
            1.0
        """

    def logsumexp(x, axis=None, keepdims=False):
        """``log(sum(exp(x)))`` computed stably (shifted by the max).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.logsumexp([0.0, 0.0])).astype(float).round(4).tolist()
            0.6931
        """

    def all(x, axis=None, keepdims=False):
        """True where every element is truthy.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.all([[True, False], [True, True]], axis=1)).tolist()
            [False, True]
        """

    def any(x, axis=None, keepdims=False):
        """True where some element is truthy.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.any([[True, False], [False, False]], axis=1)).tolist()
            [True, False]
        """

    def cumsum(x, axis=None):
        """Cumulative sum (over the flattened array when axis is None).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.cumsum([1, 2, 3])).tolist()
            [1, 3, 6]
        """

    def cumprod(x, axis=None):
        """Cumulative product.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.cumprod([[1, 2], [3, 4]], axis=1)).tolist()
            [[1, 2], [3, 12]]
        """

    def count_nonzero(x, axis=None):
        """Number of non-zero elements (``int32``).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.count_nonzero([[0, 1], [2, 3]], axis=0)).tolist()
            [1, 2]
        """

    # --- shape --------------------------------------------------------------------------
    def reshape(x, newshape):
        """``x`` with a new shape (one entry may be -1).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.reshape(ops.arange(6), (2, -1))).tolist()
            [[0, 1, 2], [3, 4, 5]]
        """

    def transpose(x, axes=None):
        """Permute axes (reverse them when ``axes`` is None).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.transpose([[1, 2], [3, 4]])).tolist()
            [[1, 3], [2, 4]]
            >>> ops.shape(ops.transpose(ops.zeros((2, 3, 4)), (2, 0, 1)))
            (4, 2, 3)
        """

    def expand_dims(x, axis):
        """Insert a length-1 axis (``axis`` may be a tuple).

        Example:
            >>> from ember import ops
            >>> ops.shape(ops.expand_dims(ops.zeros((2, 3)), -1))
            (2, 3, 1)
        """

    def squeeze(x, axis=None):
        """Remove length-1 axes; ``ValueError`` if a named axis is not length 1.

        Example:
            >>> from ember import ops
            >>> ops.shape(ops.squeeze(ops.zeros((2, 1, 3))))
            (2, 3)
        """

    def concatenate(xs, axis=0):
        """Join a sequence of arrays along an existing axis (``axis=None`` flattens first).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.concatenate([[1, 2], [3]])).tolist()
            [1, 2, 3]
        """

    def stack(xs, axis=0):
        """Join a sequence of same-shape arrays along a new axis.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.stack([[1, 2], [3, 4]], axis=1)).tolist()
            [[1, 3], [2, 4]]
        """

    def split(x, indices_or_sections, axis=0):
        """List of sub-arrays; NumPy semantics (equal sections must divide the axis).

        Example:
            >>> from ember import ops
            >>> [ops.to_numpy(part).tolist() for part in ops.split(ops.arange(6), 3)]
            [[0, 1], [2, 3], [4, 5]]
            >>> [ops.to_numpy(part).tolist() for part in ops.split(ops.arange(5), [2])]
            [[0, 1], [2, 3, 4]]
        """

    def tile(x, repeats):
        """Repeat the whole array ``repeats`` times per axis.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.tile([1, 2], 2)).tolist()
            [1, 2, 1, 2]
        """

    def repeat(x, repeats, axis=None):
        """Repeat each element (``repeats`` an int or a sequence matching the axis).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.repeat([1, 2], 2)).tolist()
            [1, 1, 2, 2]
        """

    def pad(x, pad_width, mode="constant", constant_values=0):
        """Pad with NumPy's ``pad_width`` forms; modes ``constant``, ``reflect``, ``symmetric``, ``edge``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.pad([1, 2], (1, 2))).tolist()
            [0, 1, 2, 0, 0]
            >>> ops.to_numpy(ops.pad([1, 2], (1, 1), mode='reflect')).tolist()
            [2, 1, 2, 1]
        """

    def flip(x, axis=None):
        """Reverse the order of elements along ``axis`` (all axes when None).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.flip([[1, 2], [3, 4]], axis=1)).tolist()
            [[2, 1], [4, 3]]
        """

    def broadcast_to(x, shape):
        """``x`` broadcast to ``shape``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.broadcast_to([1, 2], (2, 2))).tolist()
            [[1, 2], [1, 2]]
        """

    def moveaxis(x, source, destination):
        """Move axes to new positions (ints or tuples).

        Example:
            >>> from ember import ops
            >>> ops.shape(ops.moveaxis(ops.zeros((2, 3, 4)), 0, -1))
            (3, 4, 2)
        """

    def swapaxes(x, axis1, axis2):
        """Interchange two axes.

        Example:
            >>> from ember import ops
            >>> ops.shape(ops.swapaxes(ops.zeros((2, 3, 4)), 0, 2))
            (4, 3, 2)
        """

    def ravel(x):
        """Flattened 1-D array.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.ravel([[1, 2], [3, 4]])).tolist()
            [1, 2, 3, 4]
        """

    # --- indexing -----------------------------------------------------------------------
    def getitem(x, key):
        """NumPy indexing ``x[key]``: ints, slices, None, Ellipsis, boolean masks, integer arrays.

        Out-of-range integer indices raise ``IndexError`` naming the index, axis and size.

        Example:
            >>> import builtins
            >>> from ember import ops
            >>> x = ops.reshape(ops.arange(6), (2, 3))
            >>> ops.to_numpy(ops.getitem(x, (builtins.slice(None), 1))).tolist()
            [1, 4]
            >>> ops.to_numpy(ops.getitem(x, (1, [0, 2]))).tolist()
            [3, 5]
        """

    def take(x, indices, axis=None):
        """Elements at ``indices`` along ``axis`` (flattened when None); negative indices wrap.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.take([10, 20, 30], [2, 0])).tolist()
            [30, 10]
            >>> ops.to_numpy(ops.take([[1, 2], [3, 4]], [1], axis=1)).tolist()
            [[2], [4]]
        """

    def take_along_axis(x, indices, axis):
        """NumPy's ``take_along_axis``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.take_along_axis([[10, 20], [30, 40]], [[1], [0]], axis=1)).tolist()
            [[20], [30]]
        """

    def gather(x, indices):
        """N-d gather: ``indices[..., k]`` indexes the first ``k`` axes of ``x`` (TF ``gather_nd``).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.gather([[1, 2], [3, 4]], [[1, 0], [0, 1]])).tolist()
            [3, 2]
        """

    def scatter(indices, updates, shape):
        """Zeros of ``shape`` with ``updates`` added at N-d ``indices`` (duplicates add).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.scatter([[0], [2]], [5.0, 7.0], (4,))).tolist()
            [5.0, 0.0, 7.0, 0.0]
        """

    def scatter_update(x, indices, updates):
        """Copy of ``x`` with the entries at N-d ``indices`` replaced by ``updates``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.scatter_update(ops.zeros(4), [[1], [3]], [5.0, 7.0])).tolist()
            [0.0, 5.0, 0.0, 7.0]
        """

    def scatter_add(x, indices, updates):
        """Copy of ``x`` with ``updates`` added at N-d ``indices`` (duplicates accumulate).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.scatter_add(ops.ones(3), [[0], [0]], [1.0, 2.0])).tolist()
            [4.0, 1.0, 1.0]
        """

    def slice(x, start_indices, shape):
        """Static slice of size ``shape`` starting at ``start_indices`` (Keras ``ops.slice``).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.slice(ops.reshape(ops.arange(9), (3, 3)), (1, 0), (2, 2))).tolist()
            [[3, 4], [6, 7]]
        """

    def slice_update(x, start_indices, updates):
        """Copy of ``x`` with the block at ``start_indices`` replaced by ``updates``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.slice_update(ops.zeros(4, dtype='int32'), (1,), ops.ones(2, dtype='int32'))).tolist()
            [0, 1, 1, 0]
        """

    def one_hot(indices, depth=None, dtype=None, axis=-1, *, num_classes=None):
        """One-hot encoding; out-of-range indices give an all-zero row.

        The class count is ``depth`` or, Keras's name, ``num_classes`` (exactly one of them).

        ``indices`` have an integer dtype, or a float dtype that is cast as Keras casts it (toward
        zero; NaN and infinities match no class); bool indices are a ``TypeError``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.one_hot([0, 2], 3)).tolist()
            [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
        """

    def top_k(x, k, sorted=True):
        """``(values, indices)`` of the ``k`` largest entries along the last axis.

        Example:
            >>> from ember import ops
            >>> values, indices = ops.top_k([1.0, 4.0, 3.0], 2)
            >>> ops.to_numpy(values).tolist(), ops.to_numpy(indices).tolist()
            ([4.0, 3.0], [1, 2])
        """

    def sort(x, axis=-1):
        """Sorted copy along ``axis``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.sort([[3, 1, 2]])).tolist()
            [[1, 2, 3]]
        """

    def argsort(x, axis=-1):
        """Indices that sort ``x`` along ``axis`` (stable, ``int32``).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.argsort([3, 1, 2])).tolist()
            [1, 2, 0]
        """

    def nonzero(x):
        """Tuple of ``int32`` index arrays of the non-zero elements (NumPy order).

        Example:
            >>> from ember import ops
            >>> [ops.to_numpy(i).tolist() for i in ops.nonzero([[0, 1], [2, 0]])]
            [[0, 1], [1, 0]]
        """

    def segment_sum(data, segment_ids, num_segments=None):
        """Sum of ``data`` rows per segment id (ids in ``[0, num_segments)``; empty segments are 0).

        Keeps the dtype of ``data``, except that bool data gives ``int32`` counts (as :func:`sum`).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.segment_sum([1.0, 2.0, 3.0], [0, 0, 1])).tolist()
            [3.0, 3.0]
        """

    def segment_max(data, segment_ids, num_segments=None):
        """Maximum of ``data`` rows per segment id (empty segments give the dtype's lowest value).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.segment_max([1.0, 5.0, 3.0], [0, 0, 1], num_segments=2)).tolist()
            [5.0, 3.0]
        """

    # --- products (also in ops.linalg) ------------------------------------------------
    def matmul(x1, x2):
        """Matrix product with NumPy's batching and 1-D rules.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.matmul([[1.0, 2.0], [3.0, 4.0]], [[1.0], [1.0]])).tolist()
            [[3.0], [7.0]]
        """

    def dot(x1, x2):
        """NumPy's ``dot``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.dot([1.0, 2.0], [3.0, 4.0])).tolist()
            11.0
        """

    def tensordot(x1, x2, axes=2):
        """NumPy's ``tensordot``.

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.tensordot([[1.0, 2.0], [3.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]], axes=2)).tolist()
            5.0
        """

    def einsum(subscripts, *operands):
        """Einstein summation (NumPy's subscript language, no ``...`` required support beyond NumPy's).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.einsum('ij,j->i', [[1.0, 2.0], [3.0, 4.0]], [1.0, 1.0])).tolist()
            [3.0, 7.0]
        """

    def outer(x1, x2):
        """Outer product of two vectors (inputs are flattened).

        Example:
            >>> from ember import ops
            >>> ops.to_numpy(ops.outer([1, 2], [3, 4])).tolist()
            [[3, 4], [6, 8]]
        """
