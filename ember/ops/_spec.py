"""The op protocol: every backend implements exactly these functions.

Each stub below fixes an op's name, signature (argument names and defaults) and
semantics. Backends live in ``ember/backends/<name>/{core,linalg,nn,stats,random}.py``
and must define a function of the same name and the same parameters for every
stub in the matching namespace; ``tests/backends/test_protocol.py`` enforces it
and :mod:`ember.ops` copies these docstrings onto the backend functions.

Conventions shared by every op:

* Inputs are native arrays of the active backend, ``ember.Tensor``s of the active
  backend, NumPy arrays, Python scalars or nested lists. A native array or Tensor of
  a *different* framework backend is a ``TypeError`` that names both backends and
  says how to convert (``ember.convert_to_tensor`` / ``Tensor.to_backend``).
* Outputs are native arrays of the active backend on its default device (or on
  the device of the inputs).
* NumPy is the reference for semantics: broadcasting, negative axes, ``axis`` given
  as an int or a tuple, ``keepdims``, empty arrays.
* Result dtypes follow :mod:`ember.dtypes` (same on every backend; Python scalars
  are weak). A Python int out of the range of the integer dtype it takes
  (``add(int8_array, 300)``, ``add(uint8_array, -1)``, ``full_like(int8_array, 300)``)
  is an ``OverflowError``, as in NumPy 2 and JAX. ``tests/ops/test_dtype_agreement.py`` checks every backend
  agrees. Reductions keep the input dtype (``sum`` of ``bool``/small ints gives
  ``int32``; ``mean``/``var``/``std`` of integers give ``floatx()``). Index outputs
  (``argmax``, ``argsort``, ``top_k`` indices, ``nonzero``) are ``int32``.
* ``dtype=None`` on a creation op means ``floatx()`` for floating data and
  ``int32`` for integer data (``arange(3)`` is ``int32``, ``arange(0.5, 3)`` is float).
* An invalid axis raises ``ValueError`` naming the argument, the axis and the rank.
"""

# ruff: noqa: ARG001  (stubs: the signature is the specification)

from __future__ import annotations

# --------------------------------------------------------------------------- core


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


# ------------------------------------------------------------------------- linalg


class linalg:
    """``ember.ops.linalg``: NumPy ``linalg`` semantics, batched over leading axes."""

    def matmul(x1, x2):
        """Matrix product."""

    def dot(x1, x2):
        """NumPy's ``dot``."""

    def tensordot(x1, x2, axes=2):
        """NumPy's ``tensordot``."""

    def einsum(subscripts, *operands):
        """Einstein summation."""

    def solve(a, b):
        """Solution of ``a @ x = b``."""

    def inv(x):
        """Matrix inverse."""

    def svd(x, full_matrices=True, compute_uv=True):
        """``(u, s, vh)`` or just ``s``; singular values descending."""

    def eigh(x):
        """``(eigenvalues ascending, eigenvectors)`` of a symmetric/Hermitian matrix."""

    def eig(x):
        """``(eigenvalues, eigenvectors)`` of a general square matrix (complex results)."""

    def eigvals(x):
        """Eigenvalues of a general square matrix (complex)."""

    def eigvalsh(x):
        """Eigenvalues of a symmetric matrix, ascending."""

    def det(x):
        """Determinant."""

    def slogdet(x):
        """``(sign, log|det|)``."""

    def norm(x, ord=None, axis=None, keepdims=False):
        """Vector or matrix norm, NumPy's ``ord`` values."""

    def qr(x, mode="reduced"):
        """``(q, r)``; ``mode`` is ``"reduced"`` or ``"complete"``."""

    def cholesky(x):
        """Lower-triangular Cholesky factor."""

    def lstsq(a, b, rcond=None):
        """Least-squares solution ``x`` of ``a @ x ~= b`` (solution only)."""

    def pinv(x):
        """Moore-Penrose pseudo-inverse."""

    def diag(x, k=0):
        """Diagonal of a matrix, or a matrix with vector ``x`` on its diagonal."""

    def diagonal(x, offset=0, axis1=0, axis2=1):
        """NumPy's ``diagonal``."""

    def trace(x, offset=0, axis1=0, axis2=1):
        """Sum along a diagonal."""


# ----------------------------------------------------------------------------- stats


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


# -------------------------------------------------------------------------------- nn


class nn:
    """``ember.ops.nn``: activations and neural-network primitives (channels-last)."""

    def relu(x):
        """``max(x, 0)``: integers keep their dtype, bool gives ``int32`` (weak-scalar rule).

        The other activations cast integer and bool inputs to ``floatx()``.
        """

    def relu6(x):
        """``min(max(x, 0), 6)``: integers keep their dtype, bool gives ``int32``."""

    def leaky_relu(x, negative_slope=0.2):
        """``x`` if positive else ``negative_slope * x`` (Keras default slope 0.2)."""

    def elu(x, alpha=1.0):
        """``x`` if positive else ``alpha * (exp(x) - 1)``."""

    def selu(x):
        """Scaled ELU with Klambauer et al.'s constants."""

    def gelu(x, approximate=True):
        """GELU; tanh approximation when ``approximate`` (Keras default), else exact erf form."""

    def silu(x):
        """``x * sigmoid(x)`` (swish)."""

    def sigmoid(x):
        """Logistic function, stable for large ``|x|``."""

    def hard_sigmoid(x):
        """``relu6(x + 3) / 6`` (Keras 3)."""

    def softplus(x):
        """``log(1 + exp(x))``, stable."""

    def softsign(x):
        """``x / (1 + |x|)``."""

    def tanh(x):
        """Hyperbolic tangent."""

    def lecun_tanh(x):
        """``1.7159 * tanh(0.666 * x)``."""

    def softmax(x, axis=-1):
        """Softmax, stable (shifted by the max)."""

    def log_softmax(x, axis=-1):
        """Log of softmax, stable."""

    def conv(inputs, kernel, strides=1, padding="valid", data_format="channels_last", dilation_rate=1):
        """N-d convolution (N = 1, 2, 3), cross-correlation as in Keras.

        ``inputs``: ``(batch, *spatial, in_channels)`` (channels_last) or
        ``(batch, in_channels, *spatial)``. ``kernel``: ``(*kernel_spatial,
        in_channels // groups, out_channels)``; ``groups`` is inferred as
        ``in_channels // kernel.shape[-2]``. ``strides``/``dilation_rate`` are ints
        or tuples; ``padding`` is ``"valid"`` or ``"same"`` (TF/Keras placement: extra
        padding on the right/bottom).
        """

    def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None, data_format="channels_last", dilation_rate=1):
        """N-d transposed convolution (gradient of :func:`conv` w.r.t. its input), Keras semantics.

        ``kernel``: ``(*kernel_spatial, out_channels, in_channels)``. Output size per
        spatial axis follows Keras's ``compute_conv_transpose_output_shape``.
        """

    def max_pool(inputs, pool_size, strides=None, padding="valid", data_format="channels_last"):
        """N-d max pooling (``strides`` defaults to ``pool_size``)."""

    def avg_pool(inputs, pool_size, strides=None, padding="valid", data_format="channels_last"):
        """N-d average pooling; with ``"same"`` padding, padded cells are excluded from the mean."""

    def moments(x, axes, keepdims=False):
        """``(mean, variance)`` over ``axes``."""

    def lstm(inputs, initial_h, initial_c, kernel, recurrent_kernel, bias=None, *, go_backwards=False,
             time_major=False):
        """A whole single-layer LSTM sequence in one op: ``(sequence_outputs, h, c)``.

        Weights in Keras's layout, gate order i, f, c, o along the last axis (torch's
        i, f, g, o): ``kernel`` ``(features, 4 * units)``, ``recurrent_kernel``
        ``(units, 4 * units)``, ``bias`` ``(4 * units,)`` or None. ``inputs`` is
        ``(batch, time, features)``, or ``(time, batch, features)`` with
        ``time_major``; ``initial_h``/``initial_c`` are ``(batch, units)``. Each step:
        ``z = x_t @ kernel + h @ recurrent_kernel + bias``; ``i, f, g, o = split(z, 4)``;
        ``c = sigmoid(f) * c + sigmoid(i) * tanh(g)``; ``h = sigmoid(o) * tanh(c)``
        (the activations are fixed). ``sequence_outputs`` holds every step's ``h`` in
        the layout of ``inputs``; with ``go_backwards`` the steps run from the last to
        the first and the outputs are in processing order (Keras's ``go_backwards``).
        ``h``/``c`` are the final states. Every array has one floating dtype.
        Differentiable with respect to every array argument.

        torch runs its fused LSTM kernel (``torch.lstm``: oneDNN on the CPU, cuDNN on
        CUDA); NumPy a NumPy loop with its own VJP rule; MLX the composite written
        with ``ember.ops`` (:mod:`ember.ops._composite`), which tapes and
        ``mx.compile`` see op by op.
        """

    def gru(inputs, initial_h, kernel, recurrent_kernel, bias=None, *, go_backwards=False, time_major=False):
        """A whole single-layer GRU sequence (Keras's ``reset_after=True`` variant): ``(sequence_outputs, h)``.

        Weights in Keras's layout, gate order z, r, h along the last axis: ``kernel``
        ``(features, 3 * units)``, ``recurrent_kernel`` ``(units, 3 * units)``, ``bias``
        ``(2, 3 * units)`` (row 0 the input bias, row 1 the recurrent bias) or None.
        Layouts, ``go_backwards`` and dtypes as for :func:`lstm`. Each step:
        ``x_z, x_r, x_h = split(x_t @ kernel + bias[0])``, ``r_z, r_r, r_h = split(h @
        recurrent_kernel + bias[1])``; ``z = sigmoid(x_z + r_z)``, ``r = sigmoid(x_r +
        r_r)``, ``h~ = tanh(x_h + r * r_h)``; ``h = z * h + (1 - z) * h~``. This is
        ``torch.nn.GRU``'s formulation (its gate order r, z, n is reordered inside).
        Differentiable with respect to every array argument.

        torch runs its fused GRU kernel (``torch.gru``; cuDNN on CUDA); NumPy and MLX run
        the composite of :mod:`ember.ops._composite`.
        """


# ---------------------------------------------------------------------------- random


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


NAMESPACES = {"core": core, "linalg": linalg, "stats": stats, "nn": nn, "random": random}


def op_names(namespace: str) -> list[str]:
    """Names of the ops the protocol requires in ``namespace``."""
    spec = NAMESPACES[namespace]
    return [name for name, value in vars(spec).items() if callable(value) and not name.startswith("_")]
