"""What the API reference, ``help()`` and IDEs show: real constructor signatures, typed parameter tables,
the inherited training API on the model pages, every op, and Sphinx roles turned into cross-references.

The site itself is built once, by ``tests/test_docs.py``'s strict build, which also checks the rendered
pages; these tests read what feeds it (the generated pages, and the docstrings as griffe loads them
with the site's extensions from ``mkdocs.yml``) and cost a few seconds.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
import re
import sys
import types

import pytest

import ember
from ember import layers, ops

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
import gen_api  # noqa: E402  (docs/ is not a package)

# The namespaces whose every public class must report its constructor's signature.
CLASS_NAMESPACES = ("ember.layers", "ember.models", "ember.optimizers", "ember.losses", "ember.metrics",
                    "ember.callbacks")
TRAINING_API = ("compile", "fit", "evaluate", "predict", "save", "summary")


def _public_classes(namespaces=CLASS_NAMESPACES):
    out = []
    for namespace in namespaces:
        module = importlib.import_module(namespace)
        out += [(f"{namespace}.{name}", getattr(module, name)) for name in gen_api.public_names(namespace)
                if inspect.isclass(getattr(module, name))]
    return out


def _without_self(signature: inspect.Signature) -> inspect.Signature:
    return signature.replace(parameters=list(signature.parameters.values())[1:])


def test_classes_report_their_constructor_signature():
    """``inspect.signature(layers.Dense)`` (what ``help``, IDEs and Jupyter show) is ``__init__``'s, not
    the ``(*args, **kwargs)`` of the layers' metaclass ``__call__``."""
    checked, wrong = 0, []
    for qualified, cls in _public_classes():
        if cls.__init__ is object.__init__:
            continue  # no constructor of its own: inspect reports (), as for any such class
        expected = _without_self(inspect.signature(cls.__init__))
        if inspect.signature(cls) != expected:
            wrong.append(f"{qualified}{inspect.signature(cls)} != {expected}")
        checked += 1
    assert not wrong, wrong
    assert checked > 200, checked
    assert list(inspect.signature(layers.Dense).parameters)[:3] == ["units", "activation", "use_bias"]
    assert "layers" in inspect.signature(ember.models.Sequential).parameters
    assert list(inspect.signature(ember.Model).parameters)[:2] == ["inputs", "outputs"]


def test_a_layer_objects_signature_is_still_its_call():
    dense = layers.Dense(2)
    assert inspect.signature(dense) == inspect.signature(dense.__call__)
    assert "units" not in inspect.signature(dense).parameters


def test_ops_pages_list_every_op_of_the_real_namespaces():
    """Every function or class bound into an ``ember.ops`` namespace has an entry, whether a protocol op,
    an op composed in ``ember.ops.extra`` or a top-level forwarder to an ``ops.nn`` op."""
    pages = gen_api.api_pages()
    headings = {line.strip().split('"')[1] for text in pages.values() for line in text.splitlines()
                if line.strip().startswith("heading:")}
    headings |= {line.strip("#` ") for text in pages.values() for line in text.splitlines() if line.startswith("## `")}
    with ember.using_backend("numpy"):
        for namespace in gen_api.OP_SPECS:
            module = ops if namespace == "ember.ops" else getattr(ops, namespace.rsplit(".", 1)[1])
            bound = [name for name in dir(module) if not name.startswith("_")
                     and callable(getattr(module, name)) and not isinstance(getattr(module, name), types.ModuleType)]
            missing = sorted(f"{namespace}.{name}" for name in bound if f"{namespace}.{name}" not in headings)
            assert not missing, missing
    assert {"ember.ops.relu", "ember.ops.bitwise_and", "ember.ops.nanmean", "ember.ops.random.gamma"} <= headings


def test_gen_api_check_fails_when_an_op_has_no_entry(monkeypatch, capsys):
    def new_op(x):
        """An op added to the namespace after the pages were written."""
        return x

    new_op.__module__, new_op.__qualname__ = "ember.ops.extra.math", "zz_new_op"
    with ember.using_backend("numpy"):
        monkeypatch.setitem(vars(ops), "zz_new_op", new_op)
        assert gen_api.main(["--check"]) == 1
        assert "stale: docs/api/ops.md" in capsys.readouterr().out
        # An op made by a factory has no place in the source the site reads: said, not a broken page.
        new_op.__qualname__ = "factory.<locals>.op"
        with pytest.raises(ValueError, match="define it with `def` at the top level"):
            gen_api.api_pages()


def test_model_pages_document_the_inherited_training_api():
    pages = gen_api.api_pages()
    for name in ("ember.models.Model", "ember.models.Sequential"):
        block = pages["api/models.md"].split(f'heading: "{name}"', 1)[1].split(":::", 1)[0]
        assert "inherited_members: true" in block, name


# ---------------------------------------------------------------------------------------------------
# The docstrings as the site's build reads them: griffe, with the extensions listed in mkdocs.yml.


@pytest.fixture(scope="module")
def loaded():
    """``ember`` loaded by griffe with the site's extensions (static analysis, as mkdocstrings does)."""
    griffe = pytest.importorskip("griffe")
    yaml = pytest.importorskip("yaml")
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    mkdocstrings = next(plugin["mkdocstrings"] for plugin in config["plugins"]
                        if isinstance(plugin, dict) and "mkdocstrings" in plugin)
    extensions = mkdocstrings["handlers"]["python"]["options"]["extensions"]
    assert any("griffe_roles" in extension for extension in extensions), extensions
    loader = griffe.GriffeLoader(search_paths=[str(ROOT)],
                                 extensions=griffe.load_extensions(*(str(ROOT / e) for e in extensions)))
    loader.load("ember")
    return loader.modules_collection


def _static(collection, cls):
    return collection[f"{cls.__module__}.{cls.__qualname__}"]


def test_the_docs_read_each_constructor_as_python_builds_it(loaded):
    """The parameters the site shows for a class (names, kinds, types, which have defaults) are those of
    ``inspect.signature``: declarative layers get the dataclass constructor their fields make."""
    wrong = []
    for qualified, cls in _public_classes():
        if cls.__init__ is object.__init__:
            continue
        static = [(p.name, p.kind.value, None if p.annotation is None else str(p.annotation),
                   p.default is not None and p.kind.value not in ("variadic positional", "variadic keyword"))
                  for p in _static(loaded, cls).parameters][1:]
        runtime = [(p.name, p.kind.description, None if p.annotation is p.empty else str(p.annotation),
                    p.default is not p.empty) for p in inspect.signature(cls).parameters.values()]
        if static != runtime:
            wrong.append(f"{qualified}: docs {static} != {runtime}")
    assert not wrong, "\n".join(wrong[:5])


def test_every_parameter_in_a_layer_table_has_its_type(loaded):
    """No row of a class's parameters table lacks the type its field declares (the table takes the
    type and default from the signature, matched by name)."""
    untyped = []
    for qualified, cls in _public_classes(("ember.layers",)):
        obj = _static(loaded, cls)
        declared = {p.name for p in obj.parameters if p.annotation is not None}
        for section in obj.docstring.parsed if obj.docstring else []:
            if section.kind.value == "parameters":
                untyped += [f"{qualified}: {p.name}" for p in section.value
                            if p.annotation is None and p.name not in declared]
    assert not untyped, untyped


def test_model_pages_hold_the_training_api_with_docstrings(loaded):
    for cls in (ember.models.Model, ember.models.Sequential):
        members = _static(loaded, cls).all_members
        for name in TRAINING_API:
            assert name in members and members[name].docstring, f"{cls.__name__}.{name}"


def test_sphinx_roles_become_cross_references(loaded):
    role = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const):`")
    left = []

    def walk(obj):
        if obj.docstring is not None and role.search(obj.docstring.value):
            left.append(obj.path)
        for member in obj.members.values():
            if not member.is_alias:
                walk(member)

    walk(loaded["ember"])
    assert not left, left[:10]
    dense = loaded["ember.layers.core.dense.Dense"].docstring.value
    assert '<autoref identifier="ember.regularizers" optional><code>ember.regularizers</code></autoref>' in dense
    assert ('<autoref identifier="ember.layers.core.dense.Dense.weight_specs" optional><code>weight_specs</code>'
            in dense)  # relative to the class
    layer = loaded["ember.layers.layer.Layer"].docstring.value
    # ~ shows the last part; the path is where the site documents the object (its defining module's).
    assert ('<autoref identifier="ember.dtype_policies.DTypePolicy" optional><code>DTypePolicy</code>'
            in layer)


def test_roles_resolve_through_the_api_pages_and_degrade_to_code(loaded):
    from griffe_roles import SphinxRoles, documented_paths

    documented = documented_paths()
    pages = gen_api.api_pages()
    headings = {line.strip().split('"')[1] for text in pages.values() for line in text.splitlines()
                if line.strip().startswith("heading:")}
    assert headings <= set(documented), sorted(headings - set(documented))[:5]
    roles, owner, root = SphinxRoles(), loaded["ember.layers.core.dense.Dense"], loaded["ember"]
    # An op is bound at run time: its path comes from the API pages (the protocol's stub).
    assert roles.resolve(owner, root, "ember.ops.add") == "ember.backends._spec.core.core.add"
    assert roles.resolve(owner, root, "ember.ops.relu") == "ember.backends._spec.nn.nn.relu"
    assert roles.resolve(owner, root, "ember.layers.Dense") == "ember.layers.core.dense.Dense"
    assert roles.resolve(owner, root, "Layer.get_config") == "ember.layers.layer.Layer.get_config"
    assert roles.resolve(owner, root, "no_such_thing") is None
    assert roles._reference(owner, root, "no_such_thing") == "``no_such_thing``"
    assert roles._reference(owner, root, "the base <ember.layers.Layer>") == (
        '<autoref identifier="ember.layers.layer.Layer" optional><code>the base</code></autoref>')


def test_shared_args_entries_are_split_per_parameter():
    pytest.importorskip("griffe")
    from griffe_args import split_entries

    text = ("Scale.\n\nArgs:\n    axis: the axis, as in\n        x, y: not an entry.\n"
            "    beta, gamma: the offset\n        and scale.\n    units, ...: as for LSTMCell.\n"
            "\nExample:\n    >>> f(a, b)\n")
    assert split_entries(text) == (
        "Scale.\n\nArgs:\n    axis: the axis, as in\n        x, y: not an entry.\n"
        "    beta: the offset\n        and scale.\n    gamma: the offset\n        and scale.\n"
        "    units, ...: as for LSTMCell.\n\nExample:\n    >>> f(a, b)\n")
