"""No stale bindings: what ``from ember.ops import matmul`` holds follows backend switches.

``ember.ops`` binds each op straight into its namespace so ``ops.add`` costs one Python
call over the backend's function. A name imported with ``from ember.ops import add`` is
that same object, kept by the importer for good; if it were the backend's own function,
after ``ember.set_backend("torch")`` it would go on computing with NumPy when given
NumPy arrays or lists, silently returning the old backend's arrays.

So the namespace binds *copies* of the backend's functions (same code, globals, closure
and defaults: exactly as fast as the original). When the backend changes, the copies
bound for the previous backend get new code that forwards every call to the active
backend's op of the same name. The backend's own functions are never touched, so
backend-internal code and :mod:`ember._tensor`'s per-backend tables are unaffected.

Example:
    >>> import ember
    >>> from ember import ops
    >>> ember.set_backend("numpy")
    >>> add = ops.add  # as ``from ember.ops import add`` would
    >>> with ember.using_backend("numpy"):
    ...     type(add([1.0], [2.0])).__name__
    'ndarray'
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

_SENTINEL = "__ember_follow_active_backend__"
_stale_codes: dict[tuple[str, str, int], types.CodeType] = {}
_forwarding: set[types.CodeType] = set()  # the values of _stale_codes (what a retired copy runs)
_live: list[tuple] = []  # (copy, its own code, forwarding code) for the active backend
_current_for: list[Any] = [None]  # the backend the live copies belong to
_bound_tables: list[dict] = [{}]  # the live copies as {namespace: {name: copy}}
_namespaces: dict[str, Any] = {}  # "core"/"nn"/... -> the ember.ops module (set by ember.ops)


def set_namespaces(modules: dict[str, Any]) -> None:
    """Called once by :mod:`ember.ops` with its namespace modules (forwarding looks ops up there)."""
    _namespaces.update(modules)


def _follow(namespace: str, name: str, args: tuple, kwargs: dict) -> Any:
    """Call the active backend's ``ember.ops`` function ``namespace.name``.

    The name still bound to a forwarding copy means the switch is half-way (another thread is
    inside ``ember.set_backend``): a clear RuntimeError instead of forwarding to itself until
    Python's recursion limit.
    """
    target = getattr(_namespaces[namespace], name)
    if getattr(target, "__code__", None) in _forwarding:
        qualified = name if namespace == "core" else f"{namespace}.{name}"
        raise RuntimeError(
            f"ember.ops.{qualified} was called while another thread is switching the backend (ember.set_backend): "
            "the active backend is one per process, so switch it only when no other thread is running ember code")
    return target(*args, **kwargs)


def _stale_code(namespace: str, name: str, n_free: int) -> types.CodeType:
    """Code that forwards ``(*args, **kwargs)`` to the active backend's op, for a function with ``n_free`` cells.

    A function's code can only be replaced by code with the same number of free variables,
    so the forwarding code references ``n_free`` dummy cells. The callee is a code constant
    (a partial of :func:`_follow`), so the code needs nothing from the function's globals.
    """
    key = (namespace, name, n_free)
    code = _stale_codes.get(key)
    if code is None:
        cells = [f"_cell{i}" for i in range(n_free)]
        lines = ["def _factory():"]
        lines += [f"    {cell} = None" for cell in cells]
        lines += ["    def forward(*args, **kwargs):"]
        if cells:
            lines += [f"        ({', '.join(cells)},)"]
        lines += [f"        follow = {_SENTINEL!r}", "        return follow(args, kwargs)", "    return forward"]
        namespace_dict: dict = {}
        exec("\n".join(lines), namespace_dict)  # noqa: S102  (fixed template, no user input)
        template = namespace_dict["_factory"]().__code__
        follow = functools.partial(_follow, namespace, name)
        consts = tuple(follow if c == _SENTINEL else c for c in template.co_consts)
        code = _stale_codes[key] = template.replace(co_consts=consts, co_name=name, co_qualname=name)
        _forwarding.add(code)
    return code


def _copy(function: Callable) -> Callable:
    if type(function) is not types.FunctionType:
        return function
    clone = types.FunctionType(function.__code__, function.__globals__, function.__name__,
                               function.__defaults__, function.__closure__)
    clone.__kwdefaults__ = function.__kwdefaults__
    clone.__dict__.update(function.__dict__)
    clone.__doc__ = function.__doc__
    clone.__qualname__ = function.__qualname__
    clone.__module__ = function.__module__
    clone.__wrapped__ = function  # type: ignore[attr-defined]  # what functools.wraps sets; inspect follows it
    return clone


def bind(backend: Any, tables: dict) -> dict:
    """``tables`` (what ``ember.ops`` binds for ``backend``) as copies; the previous backend's copies start forwarding.

    The copies are made once per backend: switching back restores their own code, so a
    function taken while a backend was active runs natively again whenever it is.
    """
    if _current_for[0] is backend:
        return _bound_tables[0]
    retire()
    cached = _per_backend.get(backend.name)
    if cached is None:
        cached = _per_backend[backend.name] = _copy_tables(tables)
    tables, clones = cached
    for clone, code, _ in clones:
        clone.__code__ = code
    _live[:] = clones
    _current_for[0] = backend
    _bound_tables[0] = tables
    return tables


_per_backend: dict[str, tuple[dict, list]] = {}


def _copy_tables(backend_tables: dict) -> tuple[dict, list]:
    copies: dict[int, Any] = {}
    clones = []
    tables = {}
    for namespace, table in backend_tables.items():
        bound = {}
        for name, function in table.items():
            clone = copies.get(id(function))
            if clone is None:
                clone = copies[id(function)] = _copy(function)
                if clone is not function:
                    stale = _stale_code(namespace, name, len(clone.__closure__ or ()))
                    clones.append((clone, function.__code__, stale))
            bound[name] = clone
        tables[namespace] = bound
    return tables, clones


def retire() -> None:
    """Make every live copy forward to whatever backend is active when it is called."""
    for clone, _, stale in _live:
        clone.__code__ = stale  # its defaults stay: the forwarding code takes (*args, **kwargs)
    _live.clear()
    _current_for[0] = None
    _bound_tables[0] = {}
