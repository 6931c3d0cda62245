"""``python -m ember doctor``: problems with this installation that a user can fix.

Each check returns :class:`Finding` rows: a level (``"ok"``, ``"warning"`` for something
slow or missing but optional, ``"problem"`` for something that stops Ember from working
as configured), what was found, and how to fix it. Checked:

* each backend's library (a missing one names its extra);
* the backend choice: ``EMBER_BACKEND``/``EMBER_ML_BACKEND`` and the config file name
  installed backends and parse;
* an NVIDIA GPU on the machine that torch cannot see (a CPU-only torch build, or a
  driver problem);
* the Linux ``mlx[cpu]`` wheel, which bundles the reference (netlib) BLAS
  (``mlx_cpu.libs/libblas*.so``): found in the wheel's file list, reported with the fix and
  a float32 matmul timed on MLX against NumPy as the measured cost.

Example:
    >>> from ember import doctor
    >>> rows = doctor.diagnose(time_blas=False)
    >>> {row.level for row in rows} <= {"ok", "problem", "warning"}
    True
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import sys
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ember import backends, ops


class Finding(NamedTuple):
    """One row of the doctor's report."""

    level: str  # "ok", "warning" or "problem"
    topic: str
    message: str
    fix: str = ""


def diagnose(time_blas: bool = True) -> list[Finding]:
    """Every check's findings, in a fixed order (see the module docstring)."""
    return [*_libraries(), *_selection(), *_gpu(), *_mlx_blas(time_blas)]


def _libraries() -> list[Finding]:
    rows = []
    for name in backends.BACKENDS:
        if backends.is_installed(name):
            rows.append(Finding("ok", name, f"{name} is installed"))
        else:
            rows.append(Finding("warning", name, f"the {name} backend is not installed",
                                f'pip install "ember[{name}]"'))
    return rows


def _selection() -> list[Finding]:
    rows = []
    for variable in backends.ENV_VARS:
        value = os.environ.get(variable)
        if not value:
            continue
        if value.lower() not in backends.BACKENDS:
            rows.append(Finding("problem", variable, f"{variable}={value!r} is not a backend",
                                f"set it to one of {', '.join(backends.BACKENDS)} or unset it"))
        elif not backends.is_installed(value.lower()):
            rows.append(Finding("problem", variable, f"{variable}={value!r} names a backend that is not installed",
                                f'pip install "ember[{value.lower()}]" or unset {variable}'))
    try:
        configured = backends._configured_backend()
    except ValueError as error:
        rows.append(Finding("problem", "config", str(error),
                            f"fix or delete {backends.config_path()}, or run: python -m ember config backend NAME"))
    else:
        if configured is not None and not backends.is_installed(configured):
            rows.append(Finding("problem", "config", f"{backends.config_path()} selects {configured!r}, which is "
                                f"not installed", f'pip install "ember[{configured}]" or run: '
                                f"python -m ember config backend NAME"))
    return rows


def _nvidia_present() -> bool:
    return os.path.exists("/dev/nvidia0") or shutil.which("nvidia-smi") is not None


def _gpu() -> list[Finding]:
    if not backends.is_installed("torch") or not _nvidia_present():
        return []
    info = backends.load("torch").build_info()
    if info["cuda_available"]:
        return [Finding("ok", "gpu", "torch sees the NVIDIA GPU")]
    if info["cuda_build"] is None:
        return [Finding("problem", "gpu", "this machine has an NVIDIA GPU but the installed torch is a CPU-only build",
                        "install a CUDA build of torch (the selector on pytorch.org gives the pip command)")]
    return [Finding("problem", "gpu", f"torch was built for CUDA {info['cuda_build']} but sees no GPU",
                    "check the NVIDIA driver (nvidia-smi) and CUDA_VISIBLE_DEVICES")]


def _median_seconds(run: Callable[[], object], repeats: int = 5) -> float:
    run()  # warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def mlx_blas_ratio(size: int = 256) -> float:
    """Median time of a float32 ``size`` x ``size`` matmul on MLX over the same on NumPy."""
    a = np.random.default_rng(0).standard_normal((size, size)).astype(np.float32)
    with backends.using_backend("numpy"):
        x = ops.convert_to_tensor(a)
        numpy_time = _median_seconds(lambda: ops.to_numpy(ops.matmul(x, x)))
    with backends.using_backend("mlx"):
        y = ops.convert_to_tensor(a)
        mlx_time = _median_seconds(lambda: ops.to_numpy(ops.matmul(y, y)))
    return mlx_time / max(numpy_time, 1e-9)


def reference_blas_files() -> list[str]:
    """Reference (netlib) BLAS libraries shipped inside the installed ``mlx-cpu`` wheel, if any."""
    try:
        files = importlib.metadata.files("mlx-cpu") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    return [str(f) for f in files if os.path.basename(str(f)).startswith(("libblas", "libcblas"))]


def _mlx_blas(time_blas: bool = True) -> list[Finding]:
    if not backends.is_installed("mlx") or not sys.platform.startswith("linux"):
        return []
    bundled = reference_blas_files()
    measured = f" (measured here: a 384x384 float32 matmul takes {mlx_blas_ratio(384):.1f}x NumPy's time)" \
        if time_blas else ""
    if not bundled:
        return [Finding("ok", "mlx blas", f"MLX does not bundle the reference BLAS{measured}")]
    return [Finding("warning", "mlx blas",
                    f"MLX links the reference (unoptimised) BLAS of the Linux mlx[cpu] wheel ({bundled[0]}): "
                    f"Ember measured its matmuls 16-50x slower than torch's on the same machine{measured}",
                    "on this machine prefer torch for CPU work (python -m ember config backend torch), or build "
                    "MLX from source against an optimised BLAS (see MLX's build-from-source guide)")]


def format_report(rows: list[Finding]) -> str:
    """The findings as aligned lines, with a fix under each one that has one."""
    lines = []
    for row in rows:
        lines.append(f"[{row.level:<7}] {row.topic}: {row.message}")
        if row.fix:
            lines.append(f"          fix: {row.fix}")
    problems = sum(row.level == "problem" for row in rows)
    warnings = sum(row.level == "warning" for row in rows)
    lines.append(f"{problems} problem(s), {warnings} warning(s)")
    return "\n".join(lines)
