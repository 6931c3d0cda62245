"""``Transformer``: the base of Ember's fitted feature transformers (PCA, scalers).

A transformer is split the way Ember splits a layer:

* its **configuration** (``n_components``, ``with_mean``, ...) is declared as annotated
  class attributes, becomes a frozen dataclass, and cannot be changed after
  construction (:meth:`Transformer.replace` makes a new one);
* its **fitted arrays** live in one ``state`` dict (``{"mean_": ..., "scale_": ...}``),
  set by ``fit`` (computed completely, then assigned whole: a failing ``fit`` leaves the
  previous state) or assigned whole by the user, e.g. after loading a checkpoint.

Every transformer is an ``optree`` pytree (namespace ``"ember"``) whose children are the
fitted arrays (one per ``state`` key, so ``optree.tree_flatten_with_path`` names them)
and whose metadata is the configuration, and it is registered for config serialization
as ``ember>ClassName``: a checkpoint stores ``get_config()`` plus the state arrays and
rebuilds it with ``from_config(config)`` and ``transformer.state = arrays`` on any backend.

Inputs may be NumPy arrays, nested lists, native arrays of the active backend or
``ember.Tensor``s; results are native arrays of the active backend. Fitted arrays made
on one backend are converted when used on another (``fit`` on NumPy, ``transform`` on
torch works). Attribute names (``mean_``, ``components_``, ...) are scikit-learn's.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

import numpy as np
import optree

from ember import backends, dtypes, ops
from ember._tensor import convert_to_tensor
from ember.serialization import register_serializable

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_: Any):  # informs type checkers and the docs only (as ember.layers.Layer's)
        return lambda cls: cls

PYTREE_NAMESPACE = "ember"


class NotFittedError(ValueError, AttributeError):
    """A transformer was used (``transform``, a fitted attribute) before ``fit``.

    Subclasses both ``ValueError`` and ``AttributeError``, like scikit-learn's, so
    ``hasattr(pca, "components_")`` is False on an unfitted PCA.

    Example:
        >>> from ember import features
        >>> pca = features.PCA(2)
        >>> hasattr(pca, "components_")
        False
        >>> try:
        ...     pca.transform([[1.0, 2.0, 3.0]])
        ... except features.NotFittedError:
        ...     print("fit first")
        fit first
    """


def fitted_attribute(key: str, doc: str) -> property:
    """A read-only property returning ``state[key]`` as an array of the active backend.

    Returns None when the fitted state holds no such entry (scikit-learn's ``None``
    attributes, e.g. ``StandardScaler(with_std=False).scale_``).

    Example:
        >>> import ember
        >>> from ember import features
        >>> ember.set_backend("numpy")
        >>> features.StandardScaler(with_std=False).fit([[1.0], [3.0]]).scale_ is None
        True
    """

    def get(self: Transformer) -> Any:
        state = self._fitted_state(f"reading {key}")
        return as_native(state[key]) if key in state else None

    return property(get, doc=doc)


def fitted_count(key: str, doc: str) -> property:
    """A read-only property returning the count ``state[key]`` (a 0-d int array) as a Python int.

    Example:
        >>> from ember import features
        >>> features.StandardScaler().fit([[1.0], [3.0], [5.0]]).n_samples_seen_
        3
    """

    def get(self: Transformer) -> int:
        return int(ops.to_numpy(self._get(key)))

    return property(get, doc=doc)


def as_native(value: Any) -> Any:
    """``value`` (NumPy, list, any backend's array or ``Tensor``) as a native array of the active backend.

    Unlike ``ops.convert_to_tensor``, arrays of another backend are converted (through
    NumPy): fitted states move between backends this way.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.features.transformer import as_native
        >>> ember.set_backend("numpy")
        >>> type(as_native([1.0, 2.0])).__name__
        'ndarray'
    """
    if ops.is_array(value):
        return value
    return ops.convert_to_tensor(convert_to_tensor(value))


def _immutable_setattr(self: Any, name: str, value: Any) -> None:
    if name == "state":
        object.__setattr__(self, name, value)  # the property's validated setter
        return
    raise AttributeError(
        f"{type(self).__name__} is immutable: create a new one with "
        f"transformer.replace({name}=...), or assign a whole fitted state with transformer.state = {{...}}"
    )


# Every subclass is a frozen dataclass too (__init_subclass__ makes it one).
@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Transformer:
    """Base class: immutable configuration, fitted arrays in a replaceable ``state`` dict.

    Subclasses declare config fields as annotations, validate them in ``__post_init__``,
    list the state keys ``fit`` always produces in ``_required_state`` (and those it
    may produce in ``_optional_state``), and implement ``_fit(x) -> state`` and
    ``transform``.

    Example:
        >>> import ember, optree
        >>> from ember import features, ops
        >>> scaler = features.StandardScaler().fit([[0.0, 1.0], [2.0, 3.0]])
        >>> sorted(scaler.state)
        ['mean_', 'n_features_in_', 'n_samples_seen_', 'scale_', 'var_']
        >>> leaves, treedef = optree.tree_flatten(scaler, namespace="ember")
        >>> copy = optree.tree_unflatten(treedef, leaves)
        >>> ops.to_numpy(copy.transform([[1.0, 2.0]])).tolist()
        [[0.0, 0.0]]
    """

    _required_state: ClassVar[tuple[str, ...]] = ()
    _optional_state: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)
        cls.__setattr__ = _immutable_setattr  # type: ignore[method-assign]  # after the frozen dataclass set its own

        if cls.__module__.startswith("ember."):
            register_serializable("ember")(cls)
        optree.register_pytree_node(
            cls,
            lambda obj: obj._tree_flatten(),
            lambda meta, children, cls=cls: cls._tree_unflatten(meta, children),
            namespace=PYTREE_NAMESPACE,
        )

    # --- configuration ------------------------------------------------------------------
    def _fail(self, message: str, error: type[Exception] = ValueError) -> NoReturn:
        raise error(f"{type(self).__name__}: {message}")

    def _config_items(self) -> tuple:
        return tuple((f.name, getattr(self, f.name)) for f in dataclasses.fields(self))

    def get_config(self) -> dict:
        """The constructor arguments (JSON-compatible), not the fitted state."""
        return {name: list(value) if isinstance(value, tuple) else value for name, value in self._config_items()}

    @classmethod
    def from_config(cls, config: dict) -> Transformer:
        """An unfitted transformer rebuilt from :meth:`get_config`'s output."""
        if not isinstance(config, dict):
            raise TypeError(f"{cls.__name__}.from_config: expected a dict, received {type(config).__name__}")
        return cls(**config)

    def replace(self, **changes: Any) -> Transformer:
        """A new, unfitted transformer with some config fields changed."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise TypeError(f"{type(self).__name__}.replace: unknown field(s) {sorted(unknown)}; "
                            f"fields are {sorted(known)}")
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={value!r}" for name, value in self._config_items())
        return f"{type(self).__name__}({args})"

    # --- state ----------------------------------------------------------------------------
    @property
    def state(self) -> dict | None:
        """The fitted arrays by name (a copy of the dict; None before ``fit``)."""
        state = self.__dict__.get("_state")
        return None if state is None else dict(state)

    @state.setter
    def state(self, value: dict | None) -> None:
        if value is not None:
            if not isinstance(value, dict):
                self._fail(f"state must be a dict of arrays or None, received {type(value).__name__}", TypeError)
            missing = [key for key in self._required_state if key not in value]
            unknown = [key for key in value if key not in self._required_state + self._optional_state]
            if missing or unknown:
                self._fail(f"state needs the keys {list(self._required_state)} (optional: "
                           f"{list(self._optional_state)}); missing {missing}, unknown {unknown}")
            value = dict(value)
        object.__setattr__(self, "_state", value)

    @property
    def is_fitted(self) -> bool:
        """True once ``fit`` has run (or a state was assigned)."""
        return self.__dict__.get("_state") is not None

    def _fitted_state(self, what: str) -> dict:
        state = self.__dict__.get("_state")
        if state is None:
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet: call fit(x) before {what}"
            )
        return state

    def _get(self, key: str) -> Any:
        """``state[key]`` as a native array of the active backend."""
        return as_native(self._fitted_state(f"reading {key}")[key])

    def _tree_flatten(self) -> tuple:
        state = self.__dict__.get("_state")
        if state is None:
            return (), (self._config_items(), None), ()
        keys = tuple(sorted(state))
        return tuple(state[key] for key in keys), (self._config_items(), keys), keys

    @classmethod
    def _tree_unflatten(cls, meta: tuple, children: tuple) -> Transformer:
        config, keys = meta
        obj = cls(**dict(config))
        # No validation: tree_map may put any leaf (shapes, None, ...) in place of arrays.
        object.__setattr__(obj, "_state", None if keys is None else dict(zip(keys, children)))
        return obj

    # --- fitting API ----------------------------------------------------------------------
    def _fit(self, x: Any) -> dict:
        raise NotImplementedError(f"{type(self).__name__} must implement _fit(x) -> state")

    def fit(self, x: Any, y: Any = None) -> Transformer:
        """Fit to ``x`` of shape ``(n_samples, n_features)``; returns ``self`` (``y`` is ignored)."""
        state = self._fit(x)
        object.__setattr__(self, "_state", state)
        return self

    def transform(self, x: Any) -> Any:
        """``x`` transformed with the fitted state."""
        raise NotImplementedError(f"{type(self).__name__} must implement transform(x)")

    def fit_transform(self, x: Any, y: Any = None) -> Any:
        """``fit(x)`` then ``transform(x)``."""
        return self.fit(x).transform(x)

    n_features_in_ = fitted_count("n_features_in_",
                                  "Number of features seen by ``fit`` (every state holds it as a 0-d int array).")

    def check_input(self, x: Any, method: str, fitted: bool = True, min_samples: int = 1) -> Any:
        """``x`` as a finite floating 2-D native array; clear errors otherwise (see :func:`check_array`).

        With ``fitted`` (the default) the transformer must be fitted and ``x`` must have
        ``n_features_in_`` columns.
        """
        if fitted:
            self._fitted_state(f"calling {method}()")
        n_features = self.n_features_in_ if fitted else None
        return check_array(x, f"{type(self).__name__}.{method}", n_features=n_features, min_samples=min_samples,
                           expected=type(self).__name__)


# ------------------------------------------------------------------------------- input checks


def working_dtype(dtype: str) -> str:
    """The dtype features are computed in for input ``dtype``.

    float32/float64 are kept; float16/bfloat16 are computed in float32; integers and
    bools in ``floatx()`` (float32 when ``floatx()`` is a half type). On MLX with the
    GPU as default device float64 becomes float32 (MLX has no float64 on the GPU).

    Example:
        >>> import ember
        >>> from ember.features.transformer import working_dtype
        >>> ember.set_backend("numpy")
        >>> working_dtype("float64"), working_dtype("bfloat16"), working_dtype("int64")
        ('float64', 'float32', 'float32')
    """
    if dtype in ("float32", "float64"):
        work = dtype
    elif dtypes.is_complex(dtype):
        raise TypeError(f"complex inputs are not supported, received dtype {dtype}")
    elif dtype in ("float16", "bfloat16"):
        work = "float32"
    else:
        work = dtypes.floatx() if dtypes.floatx() in ("float32", "float64") else "float32"
    if work == "float64" and backends.get_backend() == "mlx":
        if ops.get_device() == "gpu":
            work = "float32"
    return work


def as_float(x: Any, where: str) -> Any:
    """``x`` as a native floating array of the active backend (see :func:`working_dtype`).

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.features.transformer import as_float
        >>> ember.set_backend("numpy")
        >>> ops.dtype(as_float([1, 2], "demo"))
        'float32'
    """
    if x is None:
        raise TypeError(f"{where}: expected an array, received None")
    try:
        native = ops.convert_to_tensor(x)
    except TypeError as error:
        raise TypeError(f"{where}: {error}") from None
    except ValueError as error:  # ragged nested lists and the like
        raise ValueError(f"{where}: cannot convert the input to an array ({error})") from None
    try:
        work = working_dtype(ops.dtype(native))
    except TypeError as error:
        raise TypeError(f"{where}: {error}") from None
    return native if ops.dtype(native) == work else ops.cast(native, work)


def check_finite(x: Any, where: str, argument: str = "x") -> None:
    """``ValueError`` naming ``where`` when ``x`` holds NaN or infinity.

    Example:
        >>> import ember, numpy as np
        >>> from ember.features.transformer import check_finite
        >>> ember.set_backend("numpy")
        >>> check_finite(np.array([1.0, np.inf]), "demo")
        Traceback (most recent call last):
        ...
        ValueError: demo: input x contains infinity; remove or impute non-finite values first
    """
    if bool(ops.to_numpy(ops.all(ops.isfinite(x)))):
        return
    kind = "NaN" if bool(ops.to_numpy(ops.any(ops.isnan(x)))) else "infinity"
    raise ValueError(f"{where}: input {argument} contains {kind}; remove or impute non-finite values first")


def check_array(x: Any, where: str, n_features: int | None = None, min_samples: int = 1,
                expected: str | None = None, argument: str = "x") -> Any:
    """Validate a data matrix and return it as a finite floating 2-D native array.

    Args:
        x: NumPy array, nested lists, native array or ``ember.Tensor``.
        where: ``"PCA.fit"``-style prefix for error messages.
        n_features: required number of columns (the count seen by ``fit``).
        min_samples: smallest allowed number of rows.
        expected: the name used in the feature-count message (``"PCA"``).
        argument: the argument's name in messages.

    Raises:
        TypeError: not array-like, complex, or an array of another backend.
        ValueError: not 2-D, too few rows, wrong column count, NaN or infinity.

    Example:
        >>> import ember
        >>> from ember.features.transformer import check_array
        >>> ember.set_backend("numpy")
        >>> check_array([[1, 2]], "demo").dtype
        dtype('float32')
        >>> check_array([1.0, 2.0], "demo")  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        ValueError: demo: expected a 2-D array (n_samples, n_features), received shape (2,);
        reshape 1-D data with x.reshape(-1, 1) (one feature) or x.reshape(1, -1) (one sample)
    """
    x = as_float(x, where)
    shape = ops.shape(x)
    if len(shape) != 2:
        raise ValueError(
            f"{where}: expected a 2-D array (n_samples, n_features), received shape {shape}"
            + ("; reshape 1-D data with x.reshape(-1, 1) (one feature) or x.reshape(1, -1) (one sample)"
               if len(shape) == 1 else "")
        )
    if shape[0] < min_samples:
        raise ValueError(f"{where}: needs at least {min_samples} sample(s), received shape {shape}")
    if shape[1] < 1:
        raise ValueError(f"{where}: needs at least 1 feature, received shape {shape}")
    if n_features is not None and shape[1] != n_features:
        raise ValueError(f"{where}: {argument} has {shape[1]} features, but {expected or where} "
                         f"was fitted with {n_features} features")
    check_finite(x, where, argument)
    return x


def int_scalar(value: int) -> Any:
    """A 0-d int64 native array for a count kept in a fitted state (``n_samples_seen_``).

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.features.transformer import int_scalar
        >>> ember.set_backend("numpy")
        >>> ops.dtype(int_scalar(150)), int(ops.to_numpy(int_scalar(150)))
        ('int64', 150)
    """
    return ops.convert_to_tensor(np.asarray(value, dtype=np.int64), dtype="int64")
