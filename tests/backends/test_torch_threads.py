"""torch's CPU thread count: Ember's default when the user set none, ``EMBER_NUM_THREADS`` and
``OMP_NUM_THREADS`` respected, reported by ``python -m ember info``."""

from __future__ import annotations

import importlib
import io
import subprocess
import sys

import pytest

from ember.__main__ import print_info

torch = pytest.importorskip("torch")  # a core-only install skips the file
threads = importlib.import_module("ember.backends.torch.threads")  # imports torch: after the skip


@pytest.fixture
def restore_threads():
    """torch's thread count and Ember's recorded choice, restored after the test."""
    saved = torch.get_num_threads(), threads._choice
    yield
    torch.set_num_threads(saved[0])
    threads._choice = saved[1]


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, (1, "default")),
    ({"OMP_NUM_THREADS": "3"}, (None, "OMP_NUM_THREADS")),
    ({"MKL_NUM_THREADS": "3"}, (None, "MKL_NUM_THREADS")),
    ({"EMBER_NUM_THREADS": "3"}, (3, "EMBER_NUM_THREADS")),
    ({"EMBER_NUM_THREADS": " 2 ", "OMP_NUM_THREADS": "1"}, (2, "EMBER_NUM_THREADS")),  # Ember's own wins
    ({"OMP_NUM_THREADS": "", "EMBER_NUM_THREADS": ""}, (1, "default")),  # empty: not set
])
def test_the_first_rule_that_applies_decides(environ, expected):
    assert tuple(threads.choose(environ, cpus=2)) == expected


def test_the_default_is_half_the_cpus_from_one_to_four():
    assert [threads.default_threads(cpus) for cpus in (1, 2, 3, 4, 6, 8, 16, 128)] == [1, 1, 1, 2, 3, 4, 4, 4]


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_a_bad_ember_num_threads_names_the_variable_and_the_value(value):
    with pytest.raises(ValueError, match=rf"EMBER_NUM_THREADS must be a positive integer.*received "
                                         rf"EMBER_NUM_THREADS='{value}'"):
        threads.choose({"EMBER_NUM_THREADS": value}, cpus=4)


def test_configure_sets_torch_and_describe_reports_who_set_it(restore_threads, monkeypatch):
    monkeypatch.setattr(threads, "usable_cpus", lambda: 4)
    assert threads.configure({}) == (2, "default")
    assert torch.get_num_threads() == 2
    assert threads.describe() == {"threads": 2, "source": "default"}
    threads.configure({"EMBER_NUM_THREADS": "3"})
    assert threads.describe() == {"threads": 3, "source": "EMBER_NUM_THREADS"}
    torch.set_num_threads(1)  # the user's own call after Ember's wins, and info says so
    assert threads.describe() == {"threads": 1, "source": "torch.set_num_threads"}


def test_omp_num_threads_is_left_to_torch(restore_threads):
    torch.set_num_threads(3)
    assert threads.configure({"OMP_NUM_THREADS": "3"}) == (None, "OMP_NUM_THREADS")
    assert threads.describe() == {"threads": 3, "source": "OMP_NUM_THREADS"}


def test_info_prints_the_count_and_its_rule(restore_threads):
    threads.configure({"EMBER_NUM_THREADS": "2"})
    out = io.StringIO()
    print_info(out)
    assert "torch CPU threads: 2 (set by EMBER_NUM_THREADS)" in out.getvalue()


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, None),  # Ember's default for this machine's CPUs
    ({"EMBER_NUM_THREADS": "1", "OMP_NUM_THREADS": "2"}, 1),  # (OMP_NUM_THREADS alone: tested in-process)
])
def test_a_new_process_gets_its_count_when_the_backend_loads(environ, expected, monkeypatch):
    for variable in ("EMBER_NUM_THREADS", *threads.USER_VARS):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in environ.items():
        monkeypatch.setenv(variable, value)
    code = "import torch; from ember import backends; backends.load('torch'); print(torch.get_num_threads())"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == (threads.default_threads(threads.usable_cpus()) if expected is None else expected)
