"""``ember.tree``: Keras's nested-structure utilities (``keras.tree``), on optree.

Lists, tuples, namedtuples and dicts are nodes; everything else, ``None`` included, is a leaf
(Keras's rule). Dict leaves come in sorted-key order, as optree and Keras give them.

Example:
    >>> from ember import tree
    >>> tree.flatten({"b": [1, 2], "a": (3, None)})
    [3, None, 1, 2]
    >>> tree.map_structure(lambda v: v * 10, [1, (2, 3)])
    [10, (20, 30)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optree

__all__ = [
    "MAP_TO_NONE", "assert_same_paths", "assert_same_structure", "flatten", "flatten_with_path", "is_nested",
    "lists_to_tuples", "map_shape_structure", "map_structure", "map_structure_up_to", "pack_sequence_as",
    "traverse",
]


class MAP_TO_NONE:  # noqa: N801  (Keras's name)
    """Returned by a :func:`traverse` function to replace a sub-structure with None.

    Example:
        >>> from ember import tree
        >>> tree.traverse(lambda v: tree.MAP_TO_NONE if v == 2 else None, [1, 2])
        [1, None]
    """


def _is_leaf(value: Any, none_is_leaf: bool = True) -> bool:
    return optree.tree_is_leaf(value, none_is_leaf=none_is_leaf)


def _mismatch() -> ValueError:
    return ValueError("Structures don't have the same nested structure.")


def is_nested(structure: Any) -> bool:
    """Whether ``structure`` is a list, tuple, namedtuple or dict (not a leaf).

    Example:
        >>> from ember import tree
        >>> tree.is_nested([1]), tree.is_nested(1), tree.is_nested(None)
        (True, False, False)
    """
    return not _is_leaf(structure)


def flatten(structure: Any) -> list:
    """The leaves of ``structure``, depth first (dicts by sorted key).

    Example:
        >>> from ember import tree
        >>> tree.flatten([1, (2, [3])])
        [1, 2, 3]
    """
    return optree.tree_leaves(structure, none_is_leaf=True)


def flatten_with_path(structure: Any) -> list[tuple[tuple, Any]]:
    """``[(path, leaf), ...]``: each leaf with the keys/indices leading to it.

    Example:
        >>> from ember import tree
        >>> tree.flatten_with_path({"a": [5, 6]})
        [(('a', 0), 5), (('a', 1), 6)]
    """
    paths, leaves, _ = optree.tree_flatten_with_path(structure, none_is_leaf=True)
    return list(zip(paths, leaves))


def map_structure(func: Callable, *structures: Any, none_is_leaf: bool = True) -> Any:
    """``func`` applied leaf by leaf across ``structures`` of the same structure.

    Raises:
        ValueError: no structure, or structures that differ.

    Example:
        >>> from ember import tree
        >>> tree.map_structure(lambda a, b: a + b, (1, [2]), (10, [20]))
        (11, [22])
    """
    if not structures:
        raise ValueError("Must provide at least one structure")

    def checked(*leaves: Any) -> Any:
        if not all(_is_leaf(leaf, none_is_leaf) for leaf in leaves):
            raise _mismatch()
        return func(*leaves)

    return optree.tree_map(checked if len(structures) > 1 else func, *structures, none_is_leaf=none_is_leaf)


def map_structure_up_to(shallow_structure: Any, func: Callable, *structures: Any) -> Any:
    """``func`` applied to the sub-structures of ``structures`` at the leaves of ``shallow_structure``.

    Example:
        >>> from ember import tree
        >>> tree.map_structure_up_to([None, None], len, [[1, 2], (3,)])
        [2, 1]
    """
    if not structures:
        raise ValueError("Must provide at least one structure")

    def at_shallow_leaf(shallow: Any, *values: Any) -> Any:
        if not _is_leaf(shallow):
            raise _mismatch()
        return func(*values)

    return optree.tree_map(at_shallow_leaf, shallow_structure, *structures, none_is_leaf=True)


def assert_same_structure(a: Any, b: Any, check_types: Any = None) -> None:
    """Raise ValueError unless ``a`` and ``b`` have the same nesting (``check_types`` is accepted for
    Keras's signature: the node types are always compared, as Keras 3 does).

    Example:
        >>> from ember import tree
        >>> tree.assert_same_structure([1, (2,)], [5, (6,)])
    """
    def check(x: Any, y: Any) -> None:
        if not (_is_leaf(x) and _is_leaf(y)):
            raise _mismatch()

    optree.tree_map(check, a, b, none_is_leaf=True)


def assert_same_paths(a: Any, b: Any) -> None:
    """Raise ValueError (naming the differing paths) unless ``a`` and ``b`` have the same leaf paths.

    Example:
        >>> from ember import tree
        >>> tree.assert_same_paths({"x": 1}, {"x": [0]})
        Traceback (most recent call last):
        ...
        ValueError: `a` and `b` don't have the same paths.
        Paths in `a` missing in `b`:
        {('x',)}
        Paths in `b` missing in `a`:
        {('x', 0)}
    """
    a_paths = set(optree.tree_paths(a, none_is_leaf=True))
    b_paths = set(optree.tree_paths(b, none_is_leaf=True))
    if a_paths == b_paths:
        return
    message = "`a` and `b` don't have the same paths."
    if a_paths - b_paths:
        message += f"\nPaths in `a` missing in `b`:\n{a_paths - b_paths}"
    if b_paths - a_paths:
        message += f"\nPaths in `b` missing in `a`:\n{b_paths - a_paths}"
    raise ValueError(message)


def pack_sequence_as(structure: Any, flat_sequence: Any) -> Any:
    """``flat_sequence`` arranged in ``structure``'s nesting.

    Example:
        >>> from ember import tree
        >>> tree.pack_sequence_as([0, (0, 0)], [7, 8, 9])
        [7, (8, 9)]
    """
    spec = optree.tree_structure(structure, none_is_leaf=True)
    if spec.num_leaves != len(flat_sequence):
        raise ValueError(f"pack_sequence_as: the structure has {spec.num_leaves} leaves, the flat sequence "
                         f"{len(flat_sequence)} elements")
    return optree.tree_unflatten(spec, list(flat_sequence))


def traverse(func: Callable, structure: Any, top_down: bool = True) -> Any:
    """Visit every sub-structure depth first (parents first when ``top_down``); where ``func`` returns
    something other than None it replaces that sub-structure (:class:`MAP_TO_NONE`: replaced by None;
    top down, the traversal then skips its children).

    Example:
        >>> from ember import tree
        >>> seen = []
        >>> tree.traverse(seen.append, [(1, 2), 3])
        [(1, 2), 3]
        >>> seen
        [[(1, 2), 3], (1, 2), 1, 2, 3]
    """
    if not callable(func):
        raise TypeError(f"traverse: func must be callable, received {type(func).__name__}")

    def children_traversed() -> Any:
        children, spec = optree.tree_flatten(structure, is_leaf=lambda x: x is not structure, none_is_leaf=True)
        if spec.num_nodes == 1 and spec.num_leaves == 1:
            return structure
        return optree.tree_unflatten(spec, [traverse(func, child, top_down) for child in children])

    if top_down:
        result = func(structure)
        if result is None:
            return children_traversed()
    else:
        traversed = children_traversed()
        result = func(traversed)
        if result is None:
            return traversed
    return None if result is MAP_TO_NONE else result


def lists_to_tuples(structure: Any) -> Any:
    """``structure`` with every list made a tuple.

    Example:
        >>> from ember import tree
        >>> tree.lists_to_tuples([1, [2, {"a": [3]}]])
        (1, (2, {'a': (3,)}))
    """
    return traverse(lambda node: tuple(node) if isinstance(node, list) else None, structure, top_down=False)


def map_shape_structure(func: Callable, structure: Any) -> Any:
    """:func:`map_structure` where a list or tuple of ints and Nones (a shape) is one leaf.

    Example:
        >>> from ember import tree
        >>> tree.map_shape_structure(len, {"a": (None, 3), "b": [(2,)]})
        {'a': 2, 'b': [1]}
    """
    def is_shape(value: Any) -> bool:
        return isinstance(value, (list, tuple)) and all(isinstance(d, (int, type(None))) for d in value)

    return optree.tree_map(func, structure, is_leaf=is_shape, none_is_leaf=True)
