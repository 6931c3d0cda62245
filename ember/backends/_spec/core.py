"""The op protocol for the top-level ``ember.ops`` namespace (creation, elementwise math, reductions, shapes, indexing): one stub per op (see :mod:`ember.backends._spec`)."""

# ruff: noqa: ARG001  (stubs: the signature is the specification)

from __future__ import annotations


class core:
    """Top-level ``ember.ops`` namespace."""

    # --- conversion, dtype, device -------------------------------------------------
    def convert_to_tensor(x, dtype=None, device=None):
        """Return ``x`` as a native array of the active backend.

        Same object when it already is one with the requested dtype and device.
        bfloat16 NumPy arrays (ml_dtypes) convert losslessly.
        """

    def asarray(x, dtype=None, device=None):
        """Alias of :func:`convert_to_tensor`."""

    def to_numpy(x):
        """A ``numpy.ndarray`` with the values of ``x`` (bfloat16 as ``ml_dtypes.bfloat16``)."""

    def is_array(x):
        """True if ``x`` is a native array of this backend."""

    def cast(x, dtype):
        """``x`` converted to Ember dtype ``dtype`` (a name or any dtype-like)."""

    def dtype(x):
        """Ember dtype name of ``x`` (``"float32"``, ``"bfloat16"``, ...)."""

    def shape(x):
        """Shape of ``x`` as a tuple of Python ints."""

    def ndim(x):
        """Number of dimensions of ``x``."""

    def size(x):
        """Number of elements of ``x`` as a Python int."""

    def get_device(x=None):
        """Device string of ``x`` (``"cpu"``, ``"cuda:0"``, ``"mps"``, ``"gpu"``), or the default device."""

    def to_device(x, device):
        """``x`` moved to ``device``; ``ValueError`` naming the device and the valid ones if unknown."""

    def stop_gradient(x):
        """``x`` with no gradient flowing back through it."""

    # --- creation -----------------------------------------------------------------------
    def zeros(shape, dtype=None, device=None):
        """Array of zeros; ``shape`` is an int or a tuple."""

    def ones(shape, dtype=None, device=None):
        """Array of ones."""

    def full(shape, fill_value, dtype=None, device=None):
        """Array filled with ``fill_value`` (dtype inferred from it when ``dtype`` is None)."""

    def zeros_like(x, dtype=None):
        """Zeros with the shape (and dtype unless given) of ``x``."""

    def ones_like(x, dtype=None):
        """Ones with the shape (and dtype unless given) of ``x``."""

    def full_like(x, fill_value, dtype=None):
        """``fill_value`` with the shape (and dtype unless given) of ``x``."""

    def eye(N, M=None, k=0, dtype=None, device=None):
        """2-D array with ones on the ``k``-th diagonal."""

    def arange(start, stop=None, step=1, dtype=None, device=None):
        """Evenly spaced values in ``[start, stop)``; NumPy semantics (``dtype="bool"``: the numbers cast)."""

    def linspace(start, stop, num=50, endpoint=True, dtype=None, device=None):
        """``num`` evenly spaced values from ``start`` to ``stop``."""

    # --- elementwise unary ----------------------------------------------------------
    def negative(x):
        """``-x``."""

    def abs(x):
        """Absolute value (modulus for complex)."""

    def sign(x):
        """-1, 0 or 1 by the sign of ``x`` (same dtype)."""

    def sqrt(x):
        """Square root (integers are first cast to ``floatx()``)."""

    def rsqrt(x):
        """``1 / sqrt(x)``."""

    def square(x):
        """``x * x``; bool counts as 0/1 and gives ``int32`` (as :func:`sum`)."""

    def reciprocal(x):
        """``1 / x`` (integers cast to ``floatx()``)."""

    def exp(x):
        """Exponential; integer inputs are cast to ``floatx()`` (as for every transcendental op)."""

    def log(x):
        """Natural logarithm."""

    def log1p(x):
        """``log(1 + x)``, accurate for small ``x``."""

    def expm1(x):
        """``exp(x) - 1``, accurate for small ``x``."""

    def log2(x):
        """Base-2 logarithm."""

    def log10(x):
        """Base-10 logarithm."""

    def sin(x):
        """Sine."""

    def cos(x):
        """Cosine."""

    def tan(x):
        """Tangent."""

    def arcsin(x):
        """Inverse sine."""

    def arccos(x):
        """Inverse cosine."""

    def arctan(x):
        """Inverse tangent."""

    def sinh(x):
        """Hyperbolic sine."""

    def cosh(x):
        """Hyperbolic cosine."""

    def tanh(x):
        """Hyperbolic tangent."""

    def arcsinh(x):
        """Inverse hyperbolic sine."""

    def arccosh(x):
        """Inverse hyperbolic cosine."""

    def arctanh(x):
        """Inverse hyperbolic tangent."""

    def erf(x):
        """Gauss error function."""

    def erfinv(x):
        """Inverse of the error function on (-1, 1)."""

    def round(x, decimals=0):
        """Round half to even (NumPy's rule) to ``decimals`` places."""

    def floor(x):
        """Largest integer value not greater than ``x`` (same dtype)."""

    def ceil(x):
        """Smallest integer value not less than ``x`` (same dtype)."""

    def isnan(x):
        """Boolean mask of NaNs (all False for integers)."""

    def isinf(x):
        """Boolean mask of infinities."""

    def isfinite(x):
        """Boolean mask of finite values."""

    def logical_not(x):
        """Boolean not."""

    def real(x):
        """Real part (identity for real dtypes)."""

    def imag(x):
        """Imaginary part (zeros for real dtypes)."""

    def conj(x):
        """Complex conjugate (identity for real dtypes)."""

    # --- elementwise binary ---------------------------------------------------------
    def add(x1, x2):
        """``x1 + x2`` with broadcasting."""

    def subtract(x1, x2):
        """``x1 - x2``; two bools are a ``TypeError`` (use :func:`logical_xor`)."""

    def multiply(x1, x2):
        """``x1 * x2``."""

    def divide(x1, x2):
        """True division; integer inputs give ``floatx()``."""

    def floor_divide(x1, x2):
        """``x1 // x2`` (NumPy semantics, rounds toward -inf); two bools give ``int32``."""

    def mod(x1, x2):
        """``x1 % x2`` with the sign of ``x2`` (NumPy semantics); two bools give ``int32``."""

    def power(x1, x2):
        """``x1 ** x2``; two bools give ``int32``.

        An integer or bool ``x1`` with a negative Python int exponent is a ``ValueError``
        (NumPy's rule; cast ``x1`` to a float dtype first).
        """

    def maximum(x1, x2):
        """Element-wise maximum (NaN propagates)."""

    def minimum(x1, x2):
        """Element-wise minimum (NaN propagates)."""

    def arctan2(x1, x2):
        """Quadrant-aware ``arctan(x1 / x2)``."""

    def equal(x1, x2):
        """``x1 == x2`` (bool)."""

    def not_equal(x1, x2):
        """``x1 != x2`` (bool)."""

    def less(x1, x2):
        """``x1 < x2`` (bool)."""

    def less_equal(x1, x2):
        """``x1 <= x2`` (bool)."""

    def greater(x1, x2):
        """``x1 > x2`` (bool)."""

    def greater_equal(x1, x2):
        """``x1 >= x2`` (bool)."""

    def logical_and(x1, x2):
        """Boolean and."""

    def logical_or(x1, x2):
        """Boolean or."""

    def logical_xor(x1, x2):
        """Boolean exclusive or."""

    def isclose(x1, x2, rtol=1e-05, atol=1e-08, equal_nan=False):
        """NumPy's ``isclose``."""

    def clip(x, x_min, x_max):
        """``x`` limited to ``[x_min, x_max]``; either bound (or both) may be None.

        Result dtype ``result_type(x, x_min, x_max)`` with weak Python scalars
        (``int32`` with ``2.5`` gives ``float32``, ``int8`` with ``2`` stays ``int8``); a bool
        result becomes ``int32`` (as Keras).
        """

    def where(condition, x1=None, x2=None):
        """``x1`` where ``condition`` else ``x2``; with one argument, :func:`nonzero`."""

    # --- reductions -------------------------------------------------------------------
    def sum(x, axis=None, keepdims=False):
        """Sum over ``axis`` (int, tuple or None for all)."""

    def mean(x, axis=None, keepdims=False):
        """Arithmetic mean."""

    def prod(x, axis=None, keepdims=False):
        """Product."""

    def max(x, axis=None, keepdims=False):
        """Maximum; ``ValueError`` on an empty reduction."""

    def min(x, axis=None, keepdims=False):
        """Minimum; ``ValueError`` on an empty reduction."""

    def argmax(x, axis=None, keepdims=False):
        """Index of the first maximum (``int32``); over the flattened array when axis is None."""

    def argmin(x, axis=None, keepdims=False):
        """Index of the first minimum (``int32``)."""

    def var(x, axis=None, keepdims=False, ddof=0):
        """Variance with ``ddof`` delta degrees of freedom."""

    def std(x, axis=None, keepdims=False, ddof=0):
        """Standard deviation."""

    def logsumexp(x, axis=None, keepdims=False):
        """``log(sum(exp(x)))`` computed stably (shifted by the max)."""

    def all(x, axis=None, keepdims=False):
        """True where every element is truthy."""

    def any(x, axis=None, keepdims=False):
        """True where some element is truthy."""

    def cumsum(x, axis=None):
        """Cumulative sum (over the flattened array when axis is None)."""

    def cumprod(x, axis=None):
        """Cumulative product."""

    def count_nonzero(x, axis=None):
        """Number of non-zero elements (``int32``)."""

    # --- shape --------------------------------------------------------------------------
    def reshape(x, newshape):
        """``x`` with a new shape (one entry may be -1)."""

    def transpose(x, axes=None):
        """Permute axes (reverse them when ``axes`` is None)."""

    def expand_dims(x, axis):
        """Insert a length-1 axis (``axis`` may be a tuple)."""

    def squeeze(x, axis=None):
        """Remove length-1 axes; ``ValueError`` if a named axis is not length 1."""

    def concatenate(xs, axis=0):
        """Join a sequence of arrays along an existing axis (``axis=None`` flattens first)."""

    def stack(xs, axis=0):
        """Join a sequence of same-shape arrays along a new axis."""

    def split(x, indices_or_sections, axis=0):
        """List of sub-arrays; NumPy semantics (equal sections must divide the axis)."""

    def tile(x, repeats):
        """Repeat the whole array ``repeats`` times per axis."""

    def repeat(x, repeats, axis=None):
        """Repeat each element (``repeats`` an int or a sequence matching the axis)."""

    def pad(x, pad_width, mode="constant", constant_values=0):
        """Pad with NumPy's ``pad_width`` forms; modes ``constant``, ``reflect``, ``symmetric``, ``edge``."""

    def flip(x, axis=None):
        """Reverse the order of elements along ``axis`` (all axes when None)."""

    def broadcast_to(x, shape):
        """``x`` broadcast to ``shape``."""

    def moveaxis(x, source, destination):
        """Move axes to new positions (ints or tuples)."""

    def swapaxes(x, axis1, axis2):
        """Interchange two axes."""

    def ravel(x):
        """Flattened 1-D array."""

    # --- indexing -----------------------------------------------------------------------
    def getitem(x, key):
        """NumPy indexing ``x[key]``: ints, slices, None, Ellipsis, boolean masks, integer arrays.

        Out-of-range integer indices raise ``IndexError`` naming the index, axis and size.
        """

    def take(x, indices, axis=None):
        """Elements at ``indices`` along ``axis`` (flattened when None); negative indices wrap."""

    def take_along_axis(x, indices, axis):
        """NumPy's ``take_along_axis``."""

    def gather(x, indices):
        """N-d gather: ``indices[..., k]`` indexes the first ``k`` axes of ``x`` (TF ``gather_nd``)."""

    def scatter(indices, updates, shape):
        """Zeros of ``shape`` with ``updates`` added at N-d ``indices`` (duplicates add)."""

    def scatter_update(x, indices, updates):
        """Copy of ``x`` with the entries at N-d ``indices`` replaced by ``updates``."""

    def scatter_add(x, indices, updates):
        """Copy of ``x`` with ``updates`` added at N-d ``indices`` (duplicates accumulate)."""

    def slice(x, start_indices, shape):
        """Static slice of size ``shape`` starting at ``start_indices`` (Keras ``ops.slice``)."""

    def slice_update(x, start_indices, updates):
        """Copy of ``x`` with the block at ``start_indices`` replaced by ``updates``."""

    def one_hot(indices, depth, dtype=None, axis=-1):
        """One-hot encoding; out-of-range indices give an all-zero row.

        ``indices`` must have an integer dtype (float or bool indices are a ``TypeError``).
        """

    def top_k(x, k, sorted=True):
        """``(values, indices)`` of the ``k`` largest entries along the last axis."""

    def sort(x, axis=-1):
        """Sorted copy along ``axis``."""

    def argsort(x, axis=-1):
        """Indices that sort ``x`` along ``axis`` (stable, ``int32``)."""

    def nonzero(x):
        """Tuple of ``int32`` index arrays of the non-zero elements (NumPy order)."""

    def segment_sum(data, segment_ids, num_segments=None):
        """Sum of ``data`` rows per segment id (ids in ``[0, num_segments)``; empty segments are 0).

        Keeps the dtype of ``data``, except that bool data gives ``int32`` counts (as :func:`sum`).
        """

    def segment_max(data, segment_ids, num_segments=None):
        """Maximum of ``data`` rows per segment id (empty segments give the dtype's lowest value)."""

    # --- products (also in ops.linalg) ------------------------------------------------
    def matmul(x1, x2):
        """Matrix product with NumPy's batching and 1-D rules."""

    def dot(x1, x2):
        """NumPy's ``dot``."""

    def tensordot(x1, x2, axes=2):
        """NumPy's ``tensordot``."""

    def einsum(subscripts, *operands):
        """Einstein summation (NumPy's subscript language, no ``...`` required support beyond NumPy's)."""

    def outer(x1, x2):
        """Outer product of two vectors (inputs are flattened)."""
