"""A griffe extension for the docs build: Sphinx cross-reference roles in docstrings become links.

Ember's docstrings name other objects the Sphinx way (``:class:`Dense```, ``:func:`~ember.ops.add```,
``:meth:`Layer.get_config```, ``:mod:`ember.layers.layer```), which the Markdown site would print as
is. While loading, this extension resolves each role's target as Sphinx does (in the class and the
modules the docstring belongs to, following their imports, then as an absolute path) and rewrites
the role as an mkdocs-autorefs cross-reference to the path the object is documented under: its
defining module's (``ember.layers.core.dense.Dense``), or, for a name bound only at run time such as
an op, the path the API pages (``docs/api/*.md``, written by ``gen_api.py``) document it under.

The reference is optional (mkdocs-autorefs' ``<autoref ... optional>``, what mkdocstrings itself
writes for type annotations): a link where the site documents the target, inline code where it
does not (a private helper, an undocumented method), never a broken link. A target that does not
resolve at all is inline code too. The text shown is Sphinx's: the target as written, its last
part for ``~a.b.C``, or the explicit title of ``:class:`title <a.b.C>```.
"""

from __future__ import annotations

import html
import pathlib
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const):`(?P<text>[^`]+)`")
_API = pathlib.Path(__file__).resolve().parent / "api"


def documented_paths(api: pathlib.Path = _API) -> dict[str, str]:
    """``{public name: documented path}`` from the API pages: each ``::: path`` block with its
    ``heading: "public name"``, and each pointer entry (``## `public name` `` linking to another's)."""
    paths: dict[str, str] = {}
    for page in sorted(api.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r'^::: (\S+)\n    options:\n      heading: "([^"]+)"', text, re.M):
            paths[match[2]] = match[1]
        for match in re.finditer(r"^## `([^`]+)`\n\n[^\n]*?\]\([^)#]*#([^)]+)\)", text, re.M):
            paths[match[1]] = match[2]
    return paths


def _member(obj: griffe.Object, name: str) -> griffe.Object | None:
    """``obj``'s member ``name`` (an inherited one for a class), aliases followed; None if unknown."""
    member = (obj.all_members if isinstance(obj, griffe.Class) else obj.members).get(name)
    try:
        return member.final_target if isinstance(member, griffe.Alias) else member
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


class SphinxRoles(griffe.Extension):
    """Rewrite ``:role:`target``` in every docstring of the loaded package as a cross-reference."""

    def __init__(self) -> None:
        super().__init__()
        self._documented = documented_paths()

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._rewrite(pkg, pkg, set())

    def _rewrite(self, obj: griffe.Object, root: griffe.Module, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None and ":`" in obj.docstring.value:
            obj.docstring.value = ROLE.sub(lambda match: self._reference(obj, root, match["text"]),
                                           obj.docstring.value)
        for member in obj.members.values():
            if isinstance(member, griffe.Object):  # not an alias: its target's docstring is rewritten there
                self._rewrite(member, root, seen)

    def _reference(self, owner: griffe.Object, root: griffe.Module, text: str) -> str:
        titled = re.fullmatch(r"(?s)(.*?)\s*<([^<>]+)>", text)
        title, target = (titled[1], titled[2]) if titled else (None, text)
        short = target.startswith("~")
        target = target.lstrip("~.").removesuffix("()")
        shown = title or (target.rsplit(".", 1)[-1] if short else target)
        path = self.resolve(owner, root, target)
        if path is None:
            return f"``{shown}``"
        return (f'<autoref identifier="{html.escape(path)}" optional>'
                f"<code>{html.escape(shown)}</code></autoref>")

    def resolve(self, owner: griffe.Object, root: griffe.Module, target: str) -> str | None:
        """The documented path of ``target`` as named in ``owner``'s docstring, or None."""
        parts = target.split(".")
        scopes = []
        scope: griffe.Object | None = owner
        while scope is not None:
            if scope.is_class or scope.is_module:
                scopes.append(scope)
            scope = scope.parent
        for scope in scopes:
            found = _member(scope, parts[0])
            if found is not None and (path := self._walk(found, parts[1:])) is not None:
                return path
        if parts[0] == root.name:
            return self._walk(root, parts[1:])
        return self._documented.get(target)

    def _walk(self, obj: griffe.Object, parts: list[str]) -> str | None:
        """The documented path of ``obj``'s member ``parts`` (a name bound at run time, such as an
        op of ``ember.ops``, through the API pages)."""
        for index, part in enumerate(parts):
            member = _member(obj, part)
            if member is None:
                return self._documented.get(".".join([obj.path, *parts[index:]]))
            obj = member
        return self._documented.get(obj.path, obj.path)
