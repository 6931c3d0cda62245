"""The command line: ``python -m ember info`` reports backends, versions and devices."""

from __future__ import annotations

import subprocess
import sys

from ember import backends
from ember.__main__ import backend_report


def test_info_lists_every_backend_with_version_and_devices():
    result = subprocess.run([sys.executable, "-m", "ember", "info"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    for name in backends.BACKENDS:
        assert name in result.stdout
    for row in backend_report():
        if row["installed"]:
            assert row["version"] in result.stdout
            assert row["default"] in row["devices"].split(", ")


def test_unknown_command_fails_with_usage():
    result = subprocess.run([sys.executable, "-m", "ember", "nonsense"], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "invalid choice" in result.stderr
