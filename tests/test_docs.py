"""The documentation: every public name has a docstring with an ``Example:`` that runs on every
installed backend and a page in the API reference, the generated pages are current, and the site
builds offline in strict mode (a broken cross-reference fails it) without torch or MLX importable.

A new public name fails ``test_every_public_name_has_an_example_and_a_page`` until its docstring has
an example and ``python docs/gen_api.py`` has written its page.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import os
import pathlib
import re
import subprocess
import sys
import types

import pytest

import ember
from ember import ops
from ember.backends._spec import NAMESPACES as OP_SPECS
from tests.helpers import needs, optional_import

yaml = optional_import("yaml")  # PyYAML, with the [docs] extra: reads mkdocs.yml; None on a core-only install

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
import gen_api  # noqa: E402  (docs/ is not a package)

# The namespaces whose every public name needs an example (the list); in the others (the
# rest of gen_api.NAMESPACES) every public class does.
CHECKED = ("ember", "ember.layers", "ember.models", "ember.ops", "ember.ops.linalg", "ember.ops.nn",
           "ember.ops.stats", "ember.ops.random", "ember.optimizers", "ember.losses", "ember.metrics",
           "ember.callbacks")


def _is_constant(value) -> bool:
    """Module-level data (``EPSILON``, ``ALL_OBJECTS``): documented on its page, no example of its own."""
    return not (callable(value) or isinstance(value, types.ModuleType))


ALL_NAMESPACES = tuple(namespace for _, namespace, _ in gen_api.NAMESPACES)


def _documented_objects(namespaces=CHECKED):
    """``(qualified name, object)`` of every public name of ``namespaces`` that is not a constant;
    for an ops namespace, the protocol's ops, each as its stub (the backends' functions carry the
    same docstring). The ops composed in ``ember.ops.extra`` are not held to an example here."""
    out = []
    for namespace in namespaces:
        if namespace in gen_api.OP_SPECS:
            spec = OP_SPECS[gen_api.OP_SPECS[namespace]]
            out += [(f"{namespace}.{name}", vars(spec)[name]) for name in gen_api.protocol_names(namespace)]
            continue
        module = importlib.import_module(namespace)
        for name in gen_api.public_names(namespace):
            value = getattr(module, name)
            if not _is_constant(value):
                out.append((f"{namespace}.{name}", value))
    return out


def test_api_pages_are_current():
    pages = gen_api.api_pages()
    stale = [path for path, text in pages.items()
             if not (gen_api.DOCS / path).exists() or (gen_api.DOCS / path).read_text(encoding="utf-8") != text]
    assert not stale, f"run `python docs/gen_api.py` and commit: stale or missing {stale}"


def test_every_public_name_has_an_example_and_a_page():
    pages = gen_api.api_pages()
    lines = [line.strip() for text in pages.values() for line in text.splitlines()]
    headings = {line.split('"')[1] for line in lines if line.startswith("heading:")}
    headings |= {line.strip("#` ") for line in lines if line.startswith("## `")}  # re-exports: a pointer
    missing_page, missing_example = [], []
    for namespace in CHECKED:
        for name in gen_api.public_names(namespace):
            if f"{namespace}.{name}" not in headings:
                missing_page.append(f"{namespace}.{name}")
    for qualified, value in _documented_objects(ALL_NAMESPACES):
        needs_example = qualified.rsplit(".", 1)[0] in CHECKED or inspect.isclass(value)  # every public class
        if needs_example and "Example:" not in (inspect.getdoc(value) or ""):
            missing_example.append(qualified)
    assert not missing_page, f"no API page (run `python docs/gen_api.py`): {missing_page}"
    assert not missing_example, f"no `Example:` in the docstring: {missing_example}"


def test_ops_carry_the_protocol_docstrings(backend):
    """``help(ops.add)`` shows the protocol's docstring, example included, on every backend (ops that
    two namespaces share, such as ``ops.dot`` and ``ops.linalg.dot``, are one function)."""
    for namespace in gen_api.OP_SPECS:
        module = ops if namespace == "ember.ops" else getattr(ops, namespace.rsplit(".", 1)[1])
        for name in gen_api.protocol_names(namespace):
            assert "Example:" in (getattr(module, name).__doc__ or ""), f"{namespace}.{name}"


def test_examples_run_on_every_backend(backend):
    """Each example runs with ``backend`` active (re-selected before every docstring, as some pin one)."""
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    failures = []
    for qualified, value in _documented_objects(ALL_NAMESPACES):
        module = inspect.getmodule(value)
        for test in finder.find(value, qualified, globs=dict(vars(module)) if module else {}):
            ember.set_backend(backend)
            result = runner.run(test, out=lambda text: failures.append(text))
            assert result.failed == 0 or failures, qualified
    ember.set_backend(backend)
    assert not failures, "".join(failures[:3])


@needs("yaml")
def test_make_docs_writes_the_site_outside_the_sources():
    # mkdocs refuses a site_dir inside docs_dir; the build tests pass --site-dir, so check the config.
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    site, docs = (ROOT / config["site_dir"]).resolve(), (ROOT / config["docs_dir"]).resolve()
    assert docs not in site.parents and site != docs, (site, docs)


@needs("yaml")
def test_every_page_is_in_the_site_navigation():
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)

    def paths(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from paths(item)
        elif isinstance(node, dict):
            for item in node.values():
                yield from paths(item)

    nav = set(paths(config["nav"]))
    assert set(gen_api.api_pages()) <= nav, sorted(set(gen_api.api_pages()) - nav)
    absent = sorted(path for path in nav if not (gen_api.DOCS / path).exists())
    assert not absent, absent


# "seven runnable scripts", "9 tutorials": a count, in words or digits, of tutorials or scripts (not a path
# such as "2 tutorials/08_data_parallel.py").
_NUMBER_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
                 "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")
_COUNTED = re.compile(r"\b(\d+|" + "|".join(_NUMBER_WORDS) + r")\s+(?:[\w-]+\s+){0,2}(?:tutorials|scripts)\b(?!/)",
                      re.IGNORECASE)


def test_pages_that_count_the_tutorials_count_them_right():
    """A page that says how many tutorials there are says the number in ``tutorials/`` (better: no number)."""
    count = len(list((ROOT / "tutorials").glob("[0-9][0-9]_*.py")))
    pages = [*ROOT.glob("*.md"), ROOT / "tutorials" / "README.md",
             *(path for path in (ROOT / "docs").rglob("*.md") if "site" not in path.relative_to(ROOT).parts)]
    wrong = []
    for page in pages:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if "tutorial" not in line.lower():
                continue
            for match in _COUNTED.finditer(line):
                said = match.group(1).lower()
                value = int(said) if said.isdigit() else _NUMBER_WORDS.index(said) + 1
                if value != count:
                    wrong.append(f"{page.relative_to(ROOT)}:{number}: {match.group(0)!r}")
    assert not wrong, f"there are {count} tutorials; these lines say otherwise: {wrong}"


@needs("mkdocs", "mkdocstrings", "material")
@pytest.mark.slow
def test_site_builds_offline_in_strict_mode_without_torch_or_mlx(tmp_path):
    """``make docs``'s build, with ``import torch`` and ``import mlx`` made to fail."""
    blockers = tmp_path / "blockers"
    for name in ("torch", "mlx"):
        (blockers / name).mkdir(parents=True)
        (blockers / name / "__init__.py").write_text(f"raise ImportError('{name} is hidden from the docs build')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blockers), str(ROOT)]), "NO_MKDOCS_2_WARNING": "1",
           "EMBER_BACKEND": "numpy"}
    check = subprocess.run([sys.executable, "docs/gen_api.py", "--check"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    # Not --quiet: it drops the warnings that strict mode counts.
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                            str(tmp_path / "site")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    page = (tmp_path / "site" / "api" / "ops" / "index.html").read_text(encoding="utf-8")
    assert "ember.ops.add" in page and "Example" in page
    assert '<span class="gp">&gt;&gt;&gt; </span>' in page  # examples render as code, not quoted text
    assert (tmp_path / "site" / "api" / "backends" / "index.html").exists()
    _check_rendered_api(tmp_path / "site" / "api")


def _check_rendered_api(api: pathlib.Path) -> None:
    """The built API pages (tests/test_api_reference.py checks what feeds them, without a build)."""
    html = {page.parent.name: page.read_text(encoding="utf-8") for page in api.glob("*/index.html")}
    # Every op has an entry: its heading (an object's, or a pointer's to where a re-export or forwarder is).
    for page, namespace, _ in gen_api.NAMESPACES:
        if namespace in gen_api.OP_SPECS:
            missing = [name for name in gen_api.public_names(namespace) if f"{namespace}.{name}\n" not in html[page]
                       and f"<code>{namespace}.{name}</code>" not in html[page]]
            assert not missing, (namespace, missing)
    # The model pages hold the inherited training API, each method with its docstring.
    models = html["models"]
    for cls in ("ember.models.model.Model", "ember.models.sequential.Sequential"):
        for method in ("compile", "fit", "evaluate", "predict", "save", "summary"):
            start = models.index(f'id="{cls}.{method}"')
            entry = models[start:models.find('class="doc doc-heading"', start + 100)]  # to the next heading
            assert "<p>" in entry.partition('<div class="doc doc-contents')[2], f"{cls}.{method}"
    # No Sphinx role is left as text: each became a link, or inline code where nothing is documented.
    roles = [(page, match[0]) for page, text in html.items()
             for match in re.finditer(r":(?:class|func|meth|mod|attr|data|exc|obj|const):<code>[^<]*", text)]
    assert not roles, roles[:10]
    assert 'href="../regularizers/#ember.regularizers"><code>ember.regularizers</code></a>' in html["layers"]
    # A layer's parameters show their types and defaults (from the constructor its fields make).
    dense = html["layers"].split('id="ember.layers.core.dense.Dense"', 1)[1].split("</table>", 1)[0]
    row = dense.split("<code>use_bias</code>", 1)[1].split("</tr>", 1)[0]
    assert ">bool<" in row and "<code>True</code>" in row and "required" not in row, row
    assert "units: int" in re.sub(r"<[^>]+>", "", dense)  # the constructor's signature


@needs("mkdocs", "mkdocstrings", "material")
def test_strict_build_fails_on_a_broken_cross_reference(tmp_path):
    """The site's strict mode turns a link to a missing page or an unknown API name into a failure."""
    docs = tmp_path / "docs"
    docs.mkdir()
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = config.split("\nnav:", 1)[0].replace("docs_dir: docs", f"docs_dir: {docs}")
    config = config.replace('paths: ["."]', f'paths: ["{ROOT}"]')
    config = config.replace('base_path: ["."]', f'base_path: ["{ROOT}"]')
    config = config.replace("- docs/griffe_", f"- {ROOT}/docs/griffe_")  # the griffe extensions
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    for text in ("See [the guide](missing.md).", "See [Dense][ember.layers.NoSuchLayer]."):
        (docs / "index.md").write_text(f"# Page\n\n{text}\n", encoding="utf-8")
        build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                                str(tmp_path / "site")], cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=300)
        assert build.returncode != 0, text
        assert "missing.md" in build.stderr or "NoSuchLayer" in build.stderr, build.stderr[-2000:]
