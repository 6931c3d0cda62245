"""A griffe extension for the docs build: the constructors of Ember's declarative layers.

``Layer`` is a ``typing.dataclass_transform`` base (PEP 681): its ``__init_subclass__`` makes every
declarative subclass a frozen dataclass at run time, so ``Dense(units, activation=None, ...)`` is
generated from the class's annotated fields. Griffe reads source without running it, and its own
dataclass support only knows classes decorated with ``@dataclass``; without this extension every
layer would show ``Layer.__init__``'s parameters, and the ``Args`` table of its docstring would list
each field without a type and as "required". This extension gives such a class the ``__init__`` the
dataclass machinery writes: every field of the dataclasses in its MRO, keyword-only ones last.

A class keeps the ``__init__`` it inherits when a class between it and the transform base defines
one (a Keras-style layer, ``Model``): neither is made a dataclass at run time.
``tests/test_api_reference.py`` compares the result with ``inspect.signature`` of every public class.
"""

from __future__ import annotations

from typing import Any

import griffe


def _decorated(cls: griffe.Class, name: str) -> bool:
    """Whether ``cls`` carries the decorator ``name`` (``dataclass``, ``dataclass_transform``), called or not."""
    for decorator in cls.decorators:
        value = decorator.value
        function = value.function if isinstance(value, griffe.ExprCall) else value
        if str(getattr(function, "canonical_path", function)).rsplit(".", 1)[-1] == name:
            return True
    return False


def _keywords(value: Any) -> dict[str, Any]:
    """The keyword arguments of a ``dataclasses.field(...)`` call (empty for a plain default)."""
    if isinstance(value, griffe.ExprCall) and str(value.function).rsplit(".", 1)[-1] == "field":
        return {argument.name: argument.value for argument in value.arguments
                if isinstance(argument, griffe.ExprKeyword)}
    return {}


def _fields(cls: griffe.Class) -> list[griffe.Parameter | str]:
    """The ``__init__`` parameters that the fields declared in ``cls``'s own body make; the name alone
    for a field declared with ``init=False`` (it drops a parameter an ancestor's field made)."""
    parameters: list[griffe.Parameter | str] = []
    for member in cls.members.values():
        if not isinstance(member, griffe.Attribute) or member.annotation is None:
            continue
        if "instance-attribute" not in member.labels:  # a ClassVar, a property
            continue
        keywords = _keywords(member.value)
        if str(keywords.get("init", True)) == "False":
            parameters.append(member.name)
            continue
        kind = griffe.ParameterKind("keyword-only" if str(keywords.get("kw_only")) == "True"
                                    else "positional or keyword")
        if keywords:
            default = keywords.get("default")
            if "default_factory" in keywords:
                default = griffe.ExprCall(function=keywords["default_factory"], arguments=[])
        else:
            default = member.value
        parameters.append(griffe.Parameter(member.name, annotation=member.annotation, kind=kind,
                                           default=default, docstring=member.docstring))
    return parameters


class DataclassTransform(griffe.Extension):
    """Give each undecorated subclass of a ``dataclass_transform`` base its generated ``__init__``."""

    def __init__(self) -> None:
        super().__init__()
        self._generated: set[str] = set()

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for cls in self._classes(pkg):
            self._set_init(cls)

    def _classes(self, obj: griffe.Object) -> list[griffe.Class]:
        found = []
        for member in obj.members.values():
            if isinstance(member, griffe.Class):
                found.append(member)
            if isinstance(member, (griffe.Class, griffe.Module)):
                found += self._classes(member)
        return found

    def _set_init(self, cls: griffe.Class) -> None:
        if "__init__" in cls.members or _decorated(cls, "dataclass_transform"):
            return
        try:
            mro = cls.mro()
        except (ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            return
        between = set()  # the paths of the classes from cls up to the transform base: declarative too
        for parent in mro:  # nearest first: the transform base, or an __init__ written by hand, wins
            if _decorated(parent, "dataclass_transform"):
                break
            if "__init__" in parent.members and parent.path not in self._generated:
                return
            between.add(parent.path)
        else:
            return
        parameters: dict[str, griffe.Parameter] = {}
        for owner in [*reversed(mro), cls]:
            if owner is cls or owner.path in between or _decorated(owner, "dataclass"):
                for parameter in _fields(owner):
                    if isinstance(parameter, str):
                        parameters.pop(parameter, None)
                    else:
                        parameters[parameter.name] = parameter  # a redeclared field keeps its place
        ordered = sorted(parameters.values(), key=lambda p: p.kind is griffe.ParameterKind.keyword_only)
        self_parameter = griffe.Parameter("self", kind=griffe.ParameterKind("positional or keyword"))
        init = griffe.Function("__init__", lineno=0, endlineno=0, parent=cls,
                               parameters=griffe.Parameters(self_parameter, *ordered), returns="None")
        cls.set_member("__init__", init)
        cls.labels.add("dataclass")
        self._generated.add(cls.path)
