"""Ember's dtype names and the promotion rules every backend follows.

Ember names dtypes with plain strings (``"float32"``), the same on every backend.
Each backend maps these names to its native dtype objects.

Promotion rules (identical on NumPy, PyTorch and MLX):

* Two arrays of the same dtype give that dtype.
* Categories are ordered ``bool < integer < floating < complex``; the higher
  category wins. An integer or bool array combined with a float array gives that
  float dtype (``int64 + float16 -> float16``), as in JAX.
* Within a category the wider type wins. ``uint8`` with a signed integer gives
  the smallest signed type that holds both (``uint8 + int8 -> int16``).
  ``float16 + bfloat16 -> float32``. ``float64 + complex64 -> complex128``.
* Python scalars are *weak*: they never widen an array. ``float32_array + 1.5``
  stays ``float32``; ``int32_array + 1.5`` becomes ``floatx()`` (``float32``);
  ``bool_array + 1`` becomes ``int32``.
* Scalars alone give ``int32`` (Python int), ``floatx()`` (Python float),
  ``bool`` or ``complex64``.

Example:
    >>> from ember import dtypes
    >>> dtypes.result_type("int32", "float16")
    'float16'
    >>> dtypes.result_type("int32", 2.5)
    'float32'
    >>> dtypes.result_type("uint8", "int8")
    'int16'
"""

from __future__ import annotations

from typing import Any

import numpy as np

FLOATING = ("float16", "bfloat16", "float32", "float64")
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
INTEGER = SIGNED + UNSIGNED
COMPLEX = ("complex64", "complex128")
ALL = ("bool",) + INTEGER + FLOATING + COMPLEX

bool_ = "bool"
uint8, uint16, uint32, uint64 = UNSIGNED
int8, int16, int32, int64 = SIGNED
float16, bfloat16, float32, float64 = FLOATING
complex64, complex128 = COMPLEX

_BITS = {
    "bool": 1, "int8": 8, "int16": 16, "int32": 32, "int64": 64,
    "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64,
    "float16": 16, "bfloat16": 16, "float32": 32, "float64": 64,
    "complex64": 64, "complex128": 128,
}
_CATEGORY = {name: 0 for name in ("bool",)}
_CATEGORY.update({name: 1 for name in INTEGER})
_CATEGORY.update({name: 2 for name in FLOATING})
_CATEGORY.update({name: 3 for name in COMPLEX})

_floatx = "float32"
DEFAULT_INT = "int32"

# Aliases users may type; anything else is an error listing the valid names.
_ALIASES = {
    "float": "float32", "double": "float64", "half": "float16", "int": "int32",
    "long": "int64", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "f16": "float16", "complex": "complex64", "bool_": "bool",
}


def floatx() -> str:
    """Return the default float dtype name (``"float32"`` unless changed)."""
    return _floatx


def set_floatx(dtype: str) -> None:
    """Set the default float dtype used by creation ops, initializers and layers.

    Args:
        dtype: one of ``"float16"``, ``"bfloat16"``, ``"float32"``, ``"float64"``.

    Raises:
        ValueError: if ``dtype`` is not a floating dtype name.
    """
    global _floatx
    name = standardize_dtype(dtype)
    if name not in FLOATING:
        raise ValueError(f"set_floatx: expected one of {FLOATING}, received {dtype!r}")
    _floatx = name


def standardize_dtype(dtype: Any, argument: str = "dtype") -> str:
    """Return Ember's name for ``dtype``.

    Accepts Ember names, aliases, Python types (``float``, ``int``, ``bool``),
    NumPy dtypes, and native dtypes of any backend (``torch.float32``,
    ``mlx.core.float32``) without importing those libraries.

    Raises:
        TypeError: if ``dtype`` is not a recognisable dtype; the message lists
            the valid names and names ``argument``.
    """
    if isinstance(dtype, str):
        if dtype in _BITS:
            return dtype
        if dtype in _ALIASES:
            return _ALIASES[dtype]
        raise TypeError(f"{argument}: unknown dtype {dtype!r}; expected one of {ALL}")
    if dtype is None:
        return _floatx
    if dtype is float:
        return _floatx
    if dtype is int:
        return DEFAULT_INT
    if dtype is bool:
        return "bool"
    if dtype is complex:
        return "complex64"
    # torch.float32 -> 'torch.float32', mlx.core.float32 -> 'mlx.core.float32'
    text = str(dtype)
    tail = text.rsplit(".", 1)[-1]
    if tail in _BITS:
        return tail
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = None
    if name in _BITS:
        return name
    raise TypeError(f"{argument}: unknown dtype {dtype!r}; expected one of {ALL}")


def is_float(dtype: Any) -> bool:
    """True for ``float16``, ``bfloat16``, ``float32`` and ``float64``."""
    return standardize_dtype(dtype) in FLOATING


def is_integer(dtype: Any) -> bool:
    """True for signed and unsigned integer dtypes (not ``bool``)."""
    return standardize_dtype(dtype) in INTEGER


def is_complex(dtype: Any) -> bool:
    """True for ``complex64`` and ``complex128``."""
    return standardize_dtype(dtype) in COMPLEX


# The promotion lattice: each dtype's direct successors. "float" is an abstract node above
# every integer type, so ``uint64 + int64`` has a join (float64 once made concrete) and
# ``int64 + float16`` is float16. Joins in a lattice are associative and commutative, so
# ``result_type`` gives the same answer in any argument order.
_SUCCESSORS = {
    "bool": ("uint8", "int8"),
    "uint8": ("uint16", "int16"), "uint16": ("uint32", "int32"), "uint32": ("uint64", "int64"),
    "uint64": ("float",),
    "int8": ("int16",), "int16": ("int32",), "int32": ("int64",), "int64": ("float",),
    "float": ("float16", "bfloat16"),
    "float16": ("float32",), "bfloat16": ("float32",), "float32": ("float64", "complex64"),
    "float64": ("complex128",), "complex64": ("complex128",), "complex128": (),
}


def _upper_set(name: str) -> frozenset:
    seen = {name}
    stack = [name]
    while stack:
        for nxt in _SUCCESSORS[stack.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return frozenset(seen)


_UPPER = {name: _upper_set(name) for name in _SUCCESSORS}


def _join(a: str, b: str) -> str:
    common = _UPPER[a] & _UPPER[b]
    (least,) = [c for c in common if common <= _UPPER[c]]
    return least


_JOIN = {(a, b): _join(a, b) for a in _SUCCESSORS for b in _SUCCESSORS}


def _promote_pair(a: str, b: str) -> str:
    return _JOIN[(a, b)]


def _scalar_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, complex):
        return "complex"
    return None


def _with_weak(array_dtype: str, kind: str) -> str:
    category = _CATEGORY[array_dtype]
    if kind == "bool":
        return array_dtype
    if kind == "int":
        return DEFAULT_INT if category == 0 else array_dtype
    if kind == "float":
        return _floatx if category < 2 else array_dtype
    # complex scalar
    if category == 3:
        return array_dtype
    return "complex128" if array_dtype == "float64" else "complex64"


def result_type(*args: Any) -> str:
    """The dtype that combining ``args`` gives under Ember's promotion rules.

    Args:
        *args: dtype names (or anything :func:`standardize_dtype` accepts) for
            arrays, and Python scalars (``1``, ``2.5``, ``True``, ``1j``), which
            are weak and never widen an array dtype.

    Returns:
        The Ember dtype name of the result.
    """
    strong = None
    weak = []
    for arg in args:
        kind = _scalar_kind(arg)
        if kind is not None:
            weak.append(kind)
            continue
        name = standardize_dtype(arg)
        strong = name if strong is None else _promote_pair(strong, name)
    if strong is None:
        order = ("bool", "int", "float", "complex")
        top = max(weak, key=order.index) if weak else "float"
        return {"bool": "bool", "int": DEFAULT_INT, "float": _floatx, "complex": "complex64"}[top]
    if strong == "float":
        strong = "float64"
    for kind in weak:
        strong = _with_weak(strong, kind)
    return strong


class finfo:
    """Machine limits of a floating dtype (``bits``, ``eps``, ``max``, ``min``, ``tiny``).

    Example:
        >>> from ember import dtypes
        >>> dtypes.finfo("bfloat16").bits
        16
    """

    def __init__(self, dtype: Any):
        name = standardize_dtype(dtype)
        if name not in FLOATING + COMPLEX:
            raise TypeError(f"finfo: expected a floating dtype, received {name!r}")
        if name == "bfloat16":
            import ml_dtypes

            info = ml_dtypes.finfo(ml_dtypes.bfloat16)
        else:
            info = np.finfo(to_numpy_dtype(name))
        self.dtype = name
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = float(info.tiny)
        self.resolution = float(info.resolution)

    def __repr__(self) -> str:
        return f"finfo(dtype={self.dtype}, eps={self.eps}, max={self.max}, tiny={self.tiny})"


class iinfo:
    """Machine limits of an integer dtype (``bits``, ``min``, ``max``).

    Example:
        >>> from ember import dtypes
        >>> dtypes.iinfo("int8").max
        127
    """

    def __init__(self, dtype: Any):
        name = standardize_dtype(dtype)
        if name not in INTEGER:
            raise TypeError(f"iinfo: expected an integer dtype, received {name!r}")
        info = np.iinfo(name)
        self.dtype = name
        self.bits = int(info.bits)
        self.min = int(info.min)
        self.max = int(info.max)

    def __repr__(self) -> str:
        return f"iinfo(dtype={self.dtype}, min={self.min}, max={self.max})"


def to_numpy_dtype(dtype: Any) -> np.dtype:
    """NumPy dtype for an Ember dtype name (bfloat16 via ``ml_dtypes``)."""
    name = standardize_dtype(dtype)
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


_NON_NUMERIC_KINDS = {"U": "strings", "S": "bytes", "O": "Python objects", "V": "structured records",
                      "M": "datetimes", "m": "timedeltas"}


def check_numeric_labels(value: Any, owner: str, argument: str = "y") -> None:
    """``TypeError`` naming ``owner``, ``argument``, the dtype and the fix when ``value`` is host
    data (a NumPy array, a list or a scalar) of strings, bytes or Python objects.

    Backends reject such data each in their own words; training code calls this first so that
    string labels give the same message on every backend. Native arrays of a backend are numeric
    by construction and pass without a copy.

    Example:
        >>> import numpy as np
        >>> check_numeric_labels(np.array([0, 2, 1]), "fit")
        >>> check_numeric_labels(["cat", "dog"], "fit")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: fit: y holds strings (dtype <U3), but labels must be numbers; encode them as integers first, ...
    """
    if isinstance(value, np.ndarray):
        kind = value.dtype.kind
    elif isinstance(value, (list, tuple, str, bytes, np.generic)):
        try:
            value = np.asarray(value)
        except ValueError:  # ragged nesting: the conversion that follows reports it
            return
        kind = value.dtype.kind
    else:
        return
    if kind in _NON_NUMERIC_KINDS:
        raise TypeError(
            f"{owner}: {argument} holds {_NON_NUMERIC_KINDS[kind]} (dtype {value.dtype}), but labels must be "
            f"numbers; encode them as integers first, e.g. with a StringLookup layer or "
            f"numpy.unique({argument}, return_inverse=True)[1]")
