"""Helpers shared by the backend packages (no framework imports here)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, overload

from ember.backends import _spec

# ``ember.ops.stats`` also offers these core ops under the same names (the same functions).
STATS_ALIASES = ("max", "min", "sum", "cumsum", "argmax", "argmin", "sort", "argsort")


def build_op_tables(backend_name: str, modules: dict[str, ModuleType]) -> dict[str, dict[str, Callable]]:
    """Collect a backend's functions per namespace, in the protocol's order.

    Docstrings come from the protocol so ``help(ember.ops.add)`` reads the same on
    every backend. An op of ``_spec.COMPOSABLE`` the backend lacks is left out (``ember.ops``
    binds its composite); any other op the backend lacks is bound to a function that
    raises ``NotImplementedError`` naming the op and backend (the protocol test fails on it).
    """
    tables: dict[str, dict[str, Callable]] = {}
    for namespace, spec in _spec.NAMESPACES.items():
        module = modules[namespace]
        composable = _spec.COMPOSABLE.get(namespace, frozenset())
        table = {}
        for name in _spec.op_names(namespace):
            function = getattr(module, name, None)
            if function is None and name in composable:
                continue
            if function is None:
                function = _missing(backend_name, namespace, name)
            elif getattr(function, "__doc__", None) is None:
                try:
                    function.__doc__ = getattr(spec, name).__doc__
                except (AttributeError, TypeError):
                    pass
            table[name] = function
        tables[namespace] = table
    for name in STATS_ALIASES:
        tables["stats"].setdefault(name, tables["core"][name])
    return tables


def cached_op_tables(backend_name: str, modules: dict[str, ModuleType]) -> Callable[[], dict[str, dict[str, Callable]]]:
    """A backend package's ``op_tables()``: :func:`build_op_tables` of ``modules``, built on the first call.

    Example:
        >>> from ember.backends import _common
        >>> from ember.backends.numpy import core, linalg, nn, random, stats
        >>> op_tables = _common.cached_op_tables(
        ...     "numpy", {"core": core, "linalg": linalg, "nn": nn, "stats": stats, "random": random})
        >>> op_tables() is op_tables(), op_tables()["core"]["add"] is core.add
        (True, True)
    """
    built: list[dict[str, dict[str, Callable]]] = []

    def op_tables() -> dict[str, dict[str, Callable]]:
        if not built:
            built.append(build_op_tables(backend_name, modules))
        return built[0]

    return op_tables


def core_ops_by_name(module_name: str, op_modules: tuple[ModuleType, ...]) -> Callable[[str], Any]:
    """A backend ``core`` module's ``__getattr__``: a protocol core op from the first of ``op_modules`` defining it.

    Every backend splits its core namespace the same way (``_creation``, ``_elementwise``, ...), so
    ``core.<op>`` and the op tables find an op there without an export list written in ``core``.

    Example:
        >>> from ember.backends import _common
        >>> from ember.backends.numpy import _elementwise, _reduce
        >>> getattr_ = _common.core_ops_by_name("demo.core", (_elementwise, _reduce))
        >>> getattr_("sum") is _reduce.sum
        True
        >>> getattr_("not_an_op")
        Traceback (most recent call last):
        ...
        AttributeError: module 'demo.core' has no attribute 'not_an_op'
    """
    op_names = frozenset(_spec.op_names("core"))

    def __getattr__(name: str) -> Any:
        if name in op_names:
            for module in op_modules:
                function = vars(module).get(name)
                if function is not None:
                    return function
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__


def named_op(op: Callable, name: str) -> Callable:
    """``op`` named ``name`` (``__name__`` and ``__qualname__``): an op a factory made, named as the protocol's.

    Example:
        >>> from ember.backends._common import named_op
        >>> named_op(lambda x: x, "identity").__qualname__
        'identity'
    """
    op.__name__ = op.__qualname__ = name
    return op


def _missing(backend_name: str, namespace: str, name: str) -> Callable:
    qualified = name if namespace == "core" else f"{namespace}.{name}"

    def missing(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"ember.ops.{qualified} is not implemented on the {backend_name} backend")

    missing.__name__ = name
    return missing


def tensor_native(x: Any, backend_name: str) -> Any:
    """The native array inside an ``ember.Tensor`` of ``backend_name``; TypeError for another backend."""
    if x.backend != backend_name:
        raise TypeError(
            f"received an ember.Tensor on backend {x.backend!r} but the active backend is "
            f"{backend_name!r}; convert it explicitly with tensor.to_backend({backend_name!r})"
        )
    return x._native


def foreign_array_error(x: Any, backend_name: str) -> TypeError:
    """The error for a native array of another framework passed to ``backend_name``'s ops."""
    module = type(x).__module__.split(".")[0]
    owner = {"torch": "torch", "mlx": "mlx", "numpy": "numpy"}.get(module, module)
    return TypeError(
        f"received a {owner} array ({type(x).__module__}.{type(x).__name__}) but the active "
        f"backend is {backend_name!r}; convert it explicitly with "
        f"ember.convert_to_tensor(x) or switch with ember.set_backend({owner!r})"
    )


def normalize_axis(axis: int, ndim: int, argument: str = "axis") -> int:
    """``axis`` as a non-negative int; ValueError naming the argument, the axis and the rank."""
    if not isinstance(axis, int) or isinstance(axis, bool):
        try:
            axis = int(axis.__index__())
        except AttributeError:
            raise TypeError(f"{argument}: expected an int, received {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise ValueError(f"{argument}={axis} is out of range for an array of rank {ndim}")
    return axis % ndim


@overload
def normalize_axes(axis: None, ndim: int, argument: str = "axis") -> None: ...
@overload
def normalize_axes(axis: Any, ndim: int, argument: str = "axis") -> tuple[int, ...]: ...
def normalize_axes(axis: Any, ndim: int, argument: str = "axis") -> tuple[int, ...] | None:
    """``axis`` (None, int or sequence) as a sorted tuple of non-negative ints, or None."""
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        axes = tuple(normalize_axis(a, ndim, argument) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{argument}={tuple(axis)} repeats an axis")
        return axes
    return (normalize_axis(axis, ndim, argument),)


class UntrackedTargetError(ValueError):
    """``GradientTape.gradient`` on a target the tape did not see computed (same message on every backend).

    TensorFlow's rule, applied on every backend: a gradient is only taken of a value computed
    inside the tape's ``with`` block by operations the tape records. A value computed before
    the tape began or after it ended (even from a watched source, even where the backend could
    technically differentiate it, as torch can), or by code the tape cannot see (a direct
    NumPy/MLX call on plain arrays, ``float()``), raises this instead of giving a gradient
    that may be wrong or ``None`` that may be wrong.
    """

    def __init__(self, position: int, backend: str) -> None:
        self.position = position
        self.backend = backend
        super().__init__(
            f"GradientTape.gradient: target {position} was not computed inside this tape's `with` block by "
            "operations the tape records (it was computed before the tape began, after it ended, or by "
            "code the tape cannot see, such as NumPy or mlx.core functions called on plain arrays), so "
            "whether it depends on the sources is unknown; no gradient is returned rather than a possibly "
            "wrong one. Compute it inside the tape with ember.ops functions or ember.Tensor operators "
            f"(backend: {backend})"
        )


def broadcast_error(op: str, *operands: Any) -> ValueError:
    """The error every backend raises for operands that do not broadcast together, e.g.
    ``add: operands could not be broadcast together with shapes [(2, 3), (4,)]``."""
    shapes = [tuple(int(d) for d in getattr(o, "shape", ())) for o in operands]
    return ValueError(f"{op}: operands could not be broadcast together with shapes {shapes}")


def one_hot_depth(depth: Any, num_classes: Any) -> int:
    """The class count of ``one_hot``, given as ``depth`` or (Keras's name) ``num_classes``."""
    if (depth is None) == (num_classes is None):
        raise ValueError(f"one_hot: give the class count once, as depth or num_classes; received depth={depth!r}, "
                         f"num_classes={num_classes!r}")
    return int(depth if num_classes is None else num_classes)


def check_dense_shapes(inputs: tuple, kernel: tuple, bias: tuple | None) -> None:
    """A ValueError naming the argument when ``nn.dense``'s operand shapes do not fit (shared by
    the native kernels and the composite, so the errors read the same on every backend).

    Example:
        >>> check_dense_shapes((8, 4), (4, 3), (3,))
        >>> check_dense_shapes((8, 5), (4, 3), None)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: nn.dense: the last axis of inputs (5) must equal the kernel's first (4): ...
    """
    if len(kernel) != 2:
        raise ValueError(f"nn.dense: kernel must have shape (features, units), received {tuple(kernel)}")
    if len(inputs) == 0:
        raise ValueError("nn.dense: inputs must have at least one axis (features), received a scalar")
    if inputs[-1] != kernel[0]:
        raise ValueError(f"nn.dense: the last axis of inputs ({inputs[-1]}) must equal the kernel's first "
                         f"({kernel[0]}): inputs {tuple(inputs)}, kernel {tuple(kernel)}")
    if bias is not None and tuple(bias) != (kernel[1],):
        raise ValueError(f"nn.dense: bias must have shape (units,) = {(kernel[1],)}, received {tuple(bias)}")
