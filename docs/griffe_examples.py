"""A griffe extension for the docs build: Ember's docstrings title their doctests ``Example:``
(what the style guide and the tests ask for); griffe's Google parser reads only ``Examples:`` as a
section of runnable examples (``Example:`` becomes a plain admonition whose ``>>>`` lines render as
quoted text). Renaming the heading while loading makes every example render as a code block.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_HEADING = re.compile(r"^(\s*)Example:[ \t]*$", re.M)


class ExamplesSection(griffe.Extension):
    """Read ``Example:`` as ``Examples:`` in every docstring griffe loads."""

    def on_instance(self, *, node: Any, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:
        if obj.docstring is not None and "Example:" in obj.docstring.value:
            obj.docstring.value = _HEADING.sub(r"\1Examples:", obj.docstring.value)
