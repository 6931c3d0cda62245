"""A griffe extension for the docs build: one ``Args`` entry per parameter.

Some docstrings describe several parameters in one ``Args`` entry (``beta_initializer,
gamma_initializer: ...``, ``name, dtype: as for Metric``). Griffe's Google parser takes such an
entry as one parameter named ``beta_initializer, gamma_initializer``, which matches none of the
signature's, so its row in the parameters table has no type and reads "required". Splitting the
entry into one entry per name, each with the shared description, gives every row the type and
default of its parameter.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_SECTION = re.compile(r"^(\s*)(?:Args|Arguments|Parameters|Params|Keyword Args|Other Parameters):\s*$")
_SHARED = re.compile(r"^(\s+)(\w+(?:\s*,\s*\w+)+):(\s.*|)$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def split_entries(text: str) -> str:
    """``text`` with each ``a, b: description`` entry of its parameter sections written once per name."""
    lines, out = text.split("\n"), []
    index = 0
    while index < len(lines):
        line = lines[index]
        out.append(line)
        index += 1
        header = _SECTION.match(line)
        if not header:
            continue
        indent, entries = len(header[1]), None  # entries: the indentation of the section's entries
        while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > indent):
            if entries is None and lines[index].strip():
                entries = _indent(lines[index])
            entry = _SHARED.match(lines[index]) if _indent(lines[index]) == entries else None
            index += 1
            if not entry:
                out.append(lines[index - 1])
                continue
            body = []  # the description's continuation lines, indented deeper than the entry
            while index < len(lines) and lines[index].strip() and _indent(lines[index]) > len(entry[1]):
                body.append(lines[index])
                index += 1
            for name in re.split(r"\s*,\s*", entry[2]):
                out += [f"{entry[1]}{name}:{entry[3]}", *body]
    return "\n".join(out)


class SplitArgs(griffe.Extension):
    """Write shared ``Args`` entries once per parameter in every docstring griffe loads."""

    def on_instance(self, *, node: Any, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:
        if obj.docstring is not None and "," in obj.docstring.value:
            obj.docstring.value = split_entries(obj.docstring.value)
