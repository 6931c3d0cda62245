"""Every numeric bound in the suite states its reason: none is tuned to the machine it was written on.

A literal tolerance (``rtol=1e-5`` in an ``assert_allclose``, ``allclose``, ``isclose`` or
``pytest.approx`` call, or in a dict of ``rtol``/``atol`` keys) must carry a comment, on the
statement's own lines or in the comment block right above it, that says where the figure comes from
(the derivation, or the named reason such as "exact: integer arithmetic"). Bounds shared by many
tests live in ``tests/tolerances.py``, derived once; using one of its names needs no comment.
Zero bounds (exact comparisons) need no reason.
"""

from __future__ import annotations

import ast
import io
import pathlib
import tokenize

TESTS = pathlib.Path(__file__).resolve().parent
CHECKED_CALLS = {"assert_allclose", "allclose", "isclose", "approx", "assert_array_almost_equal",
                 "assert_almost_equal"}
BOUND_NAMES = {"rtol", "atol", "rel", "abs", "decimal"}


def _number(node: ast.expr) -> float | None:
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _comment_lines(source: str) -> set[int]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {token.start[0] for token in tokens if token.type == tokenize.COMMENT}


def _literal_bounds(node: ast.AST) -> list[tuple[str, float]]:
    """The non-zero literal bounds ``node`` sets: keywords of a checked call, or keys of a dict."""
    pairs: list[tuple[str, ast.expr]] = []
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in CHECKED_CALLS:
            pairs = [(k.arg, k.value) for k in node.keywords if k.arg in BOUND_NAMES]
    elif isinstance(node, ast.Dict):
        pairs = [(k.value, v) for k, v in zip(node.keys, node.values)
                 if isinstance(k, ast.Constant) and k.value in BOUND_NAMES]
    return [(name, number) for name, value in pairs if (number := _number(value))]


def _innermost_statements(tree: ast.AST) -> dict[int, ast.stmt]:
    """Each expression's innermost enclosing statement (by node id), in one walk down the tree."""
    enclosing: dict[int, ast.stmt] = {}

    def visit(node: ast.AST, statement: ast.stmt | None) -> None:
        if isinstance(node, ast.stmt):
            statement = node
        elif statement is not None:
            enclosing[id(node)] = statement
        for child in ast.iter_child_nodes(node):
            visit(child, statement)

    visit(tree, None)
    return enclosing


def unexplained_bounds(source: str) -> list[tuple[int, list[tuple[str, float]]]]:
    """``(line, bounds)`` of each literal bound in ``source`` without a comment that explains it.

    Example:
        >>> unexplained_bounds("np.testing.assert_allclose(a, b, rtol=1e-5)\\n")
        [(1, [('rtol', 1e-05)])]
        >>> unexplained_bounds("# float32 matmul of 8 terms\\nassert_allclose(a, b, rtol=1e-5)\\n")
        []
    """
    tree = ast.parse(source)
    comments = _comment_lines(source)
    lines = source.splitlines()
    statements = _innermost_statements(tree)
    found = []
    for node in ast.walk(tree):
        bounds = _literal_bounds(node)
        if not bounds:
            continue
        statement = statements.get(id(node))
        first, last = (statement.lineno, statement.end_lineno) if statement else (node.lineno, node.end_lineno)
        commented_inside = any(line in comments for line in range(first, last + 1))
        commented_above = first - 1 in comments and lines[first - 2].lstrip().startswith("#")
        if not (commented_inside or commented_above):
            found.append((node.lineno, bounds))
    return found


def test_every_literal_tolerance_in_the_suite_has_a_reason():
    missing = [f"{path.relative_to(TESTS.parent)}:{line}: {bounds}"
               for path in sorted(TESTS.rglob("*.py"))
               for line, bounds in unexplained_bounds(path.read_text(encoding="utf-8"))]
    assert not missing, ("literal tolerances without a stated reason (derive the bound in a comment "
                         "beside it, or use a name from tests/tolerances.py):\n" + "\n".join(missing))


def test_the_check_sees_bounds_in_dicts_and_approx_and_ignores_exact_ones():
    source = ("TOL = {'rtol': 1e-6, 'atol': 0}\n"
              "assert x == pytest.approx(1.0, rel=1e-3)\n"
              "np.testing.assert_allclose(a, b, rtol=0, atol=0)\n"
              "np.testing.assert_allclose(a, b, **FLOAT32)\n"
              "np.testing.assert_allclose(\n    a,\n    b,  # 8-term float32 sum\n    rtol=1e-5)\n")
    assert unexplained_bounds(source) == [(1, [("rtol", 1e-6)]), (2, [("rel", 1e-3)])]
