"""Generate the API reference pages (``docs/api/*.md``) from Ember's public names.

Run ``python docs/gen_api.py`` after adding a public name (a name in a namespace's ``__all__``, or
an op: one of the protocol's in ``ember/backends/_spec/`` or any other function bound into an
``ember.ops`` namespace) and commit the pages it writes; ``tests/test_docs.py`` fails while a page is
missing or stale. ``python docs/gen_api.py --check`` only reports the difference.

The pages hold one mkdocstrings block per name; mkdocstrings reads the docstrings from the source
files without importing Ember, so building the site needs neither torch nor MLX. This script
imports Ember only to list the names (with the NumPy backend, which is always installed).

Example:
    >>> pages = api_pages()
    >>> 'heading: "ember.layers.Dense"' in pages["api/layers.md"]
    True
"""

from __future__ import annotations

import argparse
import importlib
import pathlib
import re
import sys
import types

DOCS = pathlib.Path(__file__).resolve().parent

# (page, namespace, title): every public namespace of Ember, in the order of the site's navigation.
NAMESPACES = (
    ("ember", "ember", "Top level"),
    ("layers", "ember.layers", "Layers"),
    ("models", "ember.models", "Models"),
    ("ops", "ember.ops", "Ops"),
    ("ops_linalg", "ember.ops.linalg", "Ops: linalg"),
    ("ops_nn", "ember.ops.nn", "Ops: nn"),
    ("ops_stats", "ember.ops.stats", "Ops: stats"),
    ("ops_random", "ember.ops.random", "Ops: random"),
    ("ops_image", "ember.ops.image", "Ops: image"),
    ("optimizers", "ember.optimizers", "Optimizers"),
    ("losses", "ember.losses", "Losses"),
    ("metrics", "ember.metrics", "Metrics"),
    ("callbacks", "ember.callbacks", "Callbacks"),
    ("wirings", "ember.wirings", "Wirings"),
    ("features", "ember.features", "Features"),
    ("data", "ember.data", "Data"),
    ("distribute", "ember.distribute", "Distributed training"),
    ("mixed_precision", "ember.mixed_precision", "Mixed precision"),
    ("initializers", "ember.initializers", "Initializers"),
    ("activations", "ember.activations", "Activations"),
    ("regularizers", "ember.regularizers", "Regularizers"),
    ("constraints", "ember.constraints", "Constraints"),
    ("saving", "ember.saving", "Saving"),
    ("dtypes", "ember.dtypes", "Dtypes"),
    ("dtype_policies", "ember.dtype_policies", "Dtype policies"),
    ("backends", "ember.backends", "Backends"),
    ("utils", "ember.utils", "Utilities"),
    ("config", "ember.config", "Config (Keras's global settings)"),
    ("backend", "ember.backend", "Backend (Keras's keras.backend names)"),
    ("tree", "ember.tree", "Tree"),
    ("quantizers", "ember.quantizers", "Quantizers"),
    ("causal", "ember.causal", "Causal context of spiking networks"),
    ("applications", "ember.applications", "Applications"),
)

# The namespaces the ops are bound into at run time; their docstrings live in the op protocol.
OP_SPECS = {"ember.ops": "core", "ember.ops.linalg": "linalg", "ember.ops.nn": "nn",
            "ember.ops.stats": "stats", "ember.ops.random": "random"}


_SPEC = "ember.backends._spec"


def public_names(namespace: str) -> list[str]:
    """The public names of ``namespace``: its ``__all__``; for an ops namespace every function and
    class bound into it (the protocol's ops and the ops Ember composes from them, read from the
    namespace itself, so a new op cannot go missing here); else every public function and class
    the module itself defines."""
    if namespace in OP_SPECS:
        from ember import backends

        backends.current()  # the ops are bound into their namespaces when a backend is selected
        module = importlib.import_module(namespace)
        return sorted(name for name, value in vars(module).items()
                      if not name.startswith("_") and callable(value) and not isinstance(value, types.ModuleType))
    module = importlib.import_module(namespace)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [name for name, value in vars(module).items()
                 if not name.startswith("_") and callable(value) and getattr(value, "__module__", None) == namespace]
    return sorted(names, key=lambda name: (name.lower(), name))


def protocol_names(namespace: str) -> list[str]:
    """The ops the protocol itself declares in an ops namespace (each backend implements them; their
    docstrings, examples included, live in ``ember/backends/_spec/``)."""
    from ember.backends._spec import op_names

    return sorted(op_names(OP_SPECS[namespace]))


def _target(namespace: str, name: str, value: object) -> str:
    """Where mkdocstrings reads ``namespace.name`` from: the module that defines it (re-exports and
    lazily loaded names are not followed statically), or the op protocol for an op."""
    if namespace in OP_SPECS:
        return _op_target(namespace, name, value)
    if isinstance(value, types.ModuleType):
        return value.__name__
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if isinstance(module, str) and module.startswith("ember") and qualname and "<" not in qualname:
        return f"{module}.{qualname}"
    return f"{_defining_module(name, value) or namespace}.{name}"


def _op_target(namespace: str, name: str, value: object) -> str:
    """Where an op's docstring lives: its protocol stub (the backends' functions, the composites of
    ``ember.ops.extra.composites`` bound for a backend without a kernel, and the top-level forwarders
    to ``ops.nn``/``ops.linalg``/``ops.stats`` ops carry that docstring), else the ``ember.ops.extra``
    module that defines it."""
    from ember.backends._spec import op_names
    from ember.ops.extra.composites import is_composite

    module = getattr(value, "__module__", None) or ""
    if module.startswith("ember.ops.extra.") and module != "ember.ops.extra.forward" and not is_composite(value):
        qualname = getattr(value, "__qualname__", "")
        if "<" in qualname:  # made by a factory: the docs, which read the source, cannot find it
            raise ValueError(f"{namespace}.{name} is {module}.{qualname}: define it with `def` at the top level "
                             f"of {module} so that the API reference can read its signature and docstring")
        return f"{module}.{qualname}"
    for spec in dict.fromkeys((OP_SPECS[namespace], *OP_SPECS.values())):
        if name in op_names(spec):
            return f"{_SPEC}.{spec}.{spec}.{name}"
    raise ValueError(f"{namespace}.{name}: neither a protocol op nor defined in ember.ops.extra ({module})")


def _defining_module(name: str, value: object) -> str | None:
    """The ``ember`` module whose source assigns ``name`` at top level (for constants)."""
    for module_name, module in sorted(sys.modules.items()):
        if not module_name.startswith("ember") or vars(module).get(name, _MISSING) is not value:
            continue
        path = getattr(module, "__file__", None)
        if path and re.search(rf"^{re.escape(name)}\s*[:=]", pathlib.Path(path).read_text(encoding="utf-8"), re.M):
            return module.__name__  # its home name (ember.losses.base is ember.training.losses.base)
    return None


_MISSING = object()


def _home_pages() -> dict[str, str]:
    """``{target: "namespace.name"}``: where an object re-exported by several namespaces is rendered in
    full (its first namespace after the top level, which only points there), so that every object
    has one primary anchor for cross-references."""
    homes: dict[str, str] = {}
    # An op is at home in the namespace whose protocol declares it (``ops.nn.relu``, not the top-level
    # ``ops.relu`` that forwards to it; ``ops.argmax``, not ``ops.stats.argmax``).
    for namespace, spec in OP_SPECS.items():
        for name in public_names(namespace):
            target = _target(namespace, name, _value(namespace, name))
            if target.startswith(f"{_SPEC}.{spec}.{spec}."):
                homes.setdefault(target, f"{namespace}.{name}")
    for _, namespace, _ in NAMESPACES[1:] + NAMESPACES[:1]:
        for name in public_names(namespace):
            homes.setdefault(_target(namespace, name, _value(namespace, name)), f"{namespace}.{name}")
    return homes


def _value(namespace: str, name: str) -> object:
    return getattr(importlib.import_module(namespace), name)


def _page(namespace: str) -> str | None:
    return next((page for page, ns, _ in NAMESPACES if ns == namespace), None)


def _home(namespace: str) -> str:
    """The module a namespace is (``ember.losses`` is the module ``ember.training.losses``): where
    mkdocstrings reads the namespace's own docstring, and its anchor."""
    return importlib.import_module(namespace).__name__


def _namespace_of(module: types.ModuleType) -> str | None:
    """The namespace with a page of its own that ``module`` is (by identity: ``ember.training.losses``
    is ``ember.losses``), or None."""
    return next((ns for _, ns, _ in NAMESPACES if importlib.import_module(ns) is module), None)


def _block(namespace: str, name: str, homes: dict[str, str]) -> str:
    value = _value(namespace, name)
    target = _target(namespace, name, value)
    home = homes.get(target, f"{namespace}.{name}")
    own = _namespace_of(value) if isinstance(value, types.ModuleType) else None
    if own is not None and own != namespace:
        # A namespace with a page of its own (ember.layers on the top-level page): one anchor, there.
        return (f"## `{namespace}.{name}`\n\nThe namespace [`{own}`]({_page(own)}.md#{value.__name__}); "
                "documented on its own page.")
    if home != f"{namespace}.{name}":
        home_namespace, home_name = home.rsplit(".", 1)
        same = _value(home_namespace, home_name) is value
        return (f"## `{namespace}.{name}`\n\n{'The same object as' if same else 'Forwards to'} "
                f"[`{home}`]({_page(home_namespace)}.md#{target}); documented there.")
    lines = [f"::: {target}", "    options:", f"      heading: \"{namespace}.{name}\"",
             f"      toc_label: \"{name}\""]
    if isinstance(value, types.ModuleType):
        lines.append("      members: false")
    elif isinstance(value, type) and _trains(value):
        # compile/fit/evaluate/predict/save/summary... come from TrainingAPI, which has no page of
        # its own: the model's page lists its inherited methods (Layer's too) with their docstrings.
        lines.append("      inherited_members: true")
    return "\n".join(lines)


def _trains(cls: type) -> bool:
    """A model class: its training API (``fit`` and the rest) is inherited from ``TrainingAPI``."""
    from ember.training.model_api import TrainingAPI

    return issubclass(cls, TrainingAPI)


# The backend packages and what each needs installed (read from source: the site builds without them).
BACKEND_PACKAGES = (("numpy", "nothing beyond Ember's core dependencies"),
                    ("torch", '`pip install "ember[torch]"`'),
                    ("mlx", '`pip install "ember[mlx]"` (`mlx[cpu]` on Linux)'))


def _backend_packages() -> list[str]:
    lines = ["## Backend packages", "",
             "Each implements the whole op protocol; `ember.set_backend(name)` selects one.", ""]
    for name, needs in BACKEND_PACKAGES:
        lines += [f"::: ember.backends.{name}", "    options:",
                  f"      heading: \"ember.backends.{name}\"", f"      toc_label: \"{name} backend\"",
                  "      members: false", "", f"Needs {needs}.", ""]
    return lines


def api_pages() -> dict[str, str]:
    """``{path relative to docs/: markdown}`` for every API page and the API index."""
    import ember

    with ember.using_backend("numpy"):
        pages = {}
        index = ["# API reference", "", "Every public name of every namespace, generated from the docstrings.", ""]
        homes = _home_pages()
        for page, namespace, title in NAMESPACES:
            names = public_names(namespace)
            body = [f"# {title}: `{namespace}`", "", f"::: {_home(namespace)}", "    options:", "      members: false",
                    "      show_root_heading: false", ""]
            body += [_block(namespace, name, homes) + "\n" for name in names]
            if namespace == "ember.backends":
                body += _backend_packages()
            pages[f"api/{page}.md"] = "\n".join(body)
            index.append(f"- [`{namespace}`]({page}.md): {len(names)} names")
        pages["api/index.md"] = "\n".join(index) + "\n"
    pages.update(tutorial_pages())
    return pages


def tutorial_pages() -> dict[str, str]:
    """One page per tutorial script (its source, included at build time) and the tutorials' index."""
    pages = {"tutorials/index.md": '--8<-- "tutorials/README.md"\n'}
    for script in sorted((DOCS.parent / "tutorials").glob("[0-9]*.py")):
        title = script.stem.replace("_", " ", 1)
        pages[f"tutorials/{script.stem}.md"] = (f"# Tutorial {title}\n\n"
                                                f"Run it: `python tutorials/{script.name} --help`.\n\n"
                                                f"```python\n--8<-- \"tutorials/{script.name}\"\n```\n")
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="report stale or missing pages, write nothing")
    args = parser.parse_args(argv)
    pages = api_pages()
    stale = [path for path, text in pages.items()
             if not (DOCS / path).exists() or (DOCS / path).read_text(encoding="utf-8") != text]
    existing = [p.relative_to(DOCS).as_posix() for folder in ("api", "tutorials") for p in (DOCS / folder).glob("*.md")]
    extra = sorted(path for path in existing if path not in pages)
    if args.check:
        for path in stale + extra:
            print(f"stale: docs/{path}")
        return 1 if stale or extra else 0
    for folder in ("api", "tutorials"):
        (DOCS / folder).mkdir(exist_ok=True)
    for path in extra:
        (DOCS / path).unlink()
    for path in stale:
        (DOCS / path).write_text(pages[path], encoding="utf-8")
    print(f"wrote {len(stale)} page(s), removed {len(extra)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(DOCS.parent))
    sys.exit(main())
