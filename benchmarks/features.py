"""PCA fit speed: ``ember.features.PCA`` on each backend next to scikit-learn and a hand-written fit.

Run: ``python benchmarks/features.py`` (``--rows``, ``--features``, ``--repeat``,
``--solvers auto,randomized,full``). Data: ``rows x features`` float32 (default
100 000 x 256) with a decaying spectrum. For each solver it times, in alternation
within one process (never part of the test suite):

* scikit-learn's ``PCA(svd_solver=...)`` on the NumPy array (its ``"auto"`` is
  ``"covariance_eigh"`` for this shape, as Ember's);
* Ember's ``features.PCA`` on every installed backend (input already a native array
  of that backend; the fit includes input validation: the NaN check, the centring copy);
* for ``"auto"``, a hand-written covariance-eigh PCA in the same backend (centre,
  ``X.T @ X``, ``eigh``): the floor Ember's fit is judged against.

MLX's Linux CPU wheel links a reference BLAS (see DESIGN.md): compare MLX only with
raw MLX. On a busy machine multi-threaded BLAS thrashes: the table shows the median
and the minimum of the runs.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from ember import backends, features, ops


def _data(rows: int, cols: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scales = (1.0 / np.arange(1, cols + 1) ** 0.5).astype(np.float32)
    return (rng.standard_normal((rows, cols), dtype=np.float32) * scales + 3.0).astype(np.float32)


def _error(explained_variance: np.ndarray, exact: np.ndarray) -> str:
    """Largest error of the explained variances relative to the largest (float64 reference)."""
    k = len(explained_variance)
    return f"{np.max(np.abs(explained_variance - exact[:k])) / exact[0]:.1e}"


def _interleaved(fns: list[Callable[[], Any]], repeat: int, warmup: int = 1) -> list[list[float]]:
    for _ in range(warmup):
        for fn in fns:
            fn()
    runs: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, times in zip(fns, runs):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return runs


def _raw_covariance_pca(backend: str, native: Any) -> Callable[[], Any]:
    """Hand-written covariance-eigh PCA in the backend's own library."""
    rows = native.shape[0]
    if backend == "numpy":
        def fit():
            centred = native - native.mean(axis=0)
            return np.linalg.eigh(centred.T @ centred / (rows - 1))
        return fit
    if backend == "torch":
        import torch

        def fit():
            centred = native - native.mean(dim=0)
            return torch.linalg.eigh(centred.T @ centred / (rows - 1))
        return fit
    import mlx.core as mx

    def fit():
        centred = native - mx.mean(native, axis=0)
        values, vectors = mx.linalg.eigh(centred.T @ centred / (rows - 1), stream=mx.cpu)
        mx.eval(values, vectors)
        return values, vectors
    return fit


def _ember_fit(backend: str, native: Any, solver: str, k: int | None) -> Callable[[], Any]:
    def fit():
        with ember.using_backend(backend):
            pca = features.PCA(k, svd_solver=solver, random_state=0).fit(native)
            ops.to_numpy(pca.explained_variance_)  # forces evaluation (MLX is lazy)
            return pca
    return fit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--components", type=int, default=16, help="n_components of the randomized solver")
    parser.add_argument("--solvers", default="auto,randomized", help="comma-separated: auto,randomized,full")
    args = parser.parse_args()

    from sklearn import __version__ as sklearn_version
    from sklearn.decomposition import PCA as SklearnPCA

    x = _data(args.rows, args.features)
    centred = x.astype(np.float64) - x.astype(np.float64).mean(axis=0)
    exact = np.linalg.eigvalsh(centred.T @ centred / (args.rows - 1))[::-1]  # float64 reference
    del centred
    installed = [name for name in backends.BACKENDS if backends.is_installed(name)]
    natives = {}
    for name in installed:
        with ember.using_backend(name):
            natives[name] = ops.convert_to_tensor(x)
    print(f"PCA fit on {args.rows} x {args.features} float32; scikit-learn {sklearn_version}; "
          f"median (min) of {args.repeat} runs, ms\n")
    header = (f"{'solver':<12} {'implementation':<26} {'median':>10} {'min':>10} {'vs sklearn':>11} "
              f"{'vs raw':>8}  error*")
    print(header)
    print("-" * len(header))
    for solver in args.solvers.split(","):
        k = args.components if solver == "randomized" else None
        sk_model = SklearnPCA(k, svd_solver=solver, random_state=0)
        cases: list[tuple[str, Callable[[], Any]]] = [("scikit-learn (numpy)", functools.partial(sk_model.fit, x))]
        raw_index = {}
        for name in installed:
            cases.append((f"ember {name}", _ember_fit(name, natives[name], solver, k)))
            if solver == "auto":
                raw_index[len(cases)] = name
                cases.append((f"hand-written {name}", _raw_covariance_pca(name, natives[name])))
        runs = _interleaved([fn for _, fn in cases], args.repeat)
        medians = [statistics.median(r) * 1e3 for r in runs]
        for i, ((label, fn), times) in enumerate(zip(cases, runs)):
            median, best = medians[i], min(times) * 1e3
            vs_sklearn = f"{median / medians[0]:.2f}x"
            vs_raw, check = "", ""
            if label.startswith("ember"):
                backend = label.split()[1]
                raw = [j for j, name in raw_index.items() if name == backend]
                vs_raw = f"{median / medians[raw[0]]:.2f}x" if raw else ""
                check = _error(ops.to_numpy(fn().explained_variance_), exact)
            elif label.startswith("scikit"):
                check = _error(sk_model.explained_variance_, exact)
            print(f"{solver:<12} {label:<26} {median:>10.1f} {best:>10.1f} {vs_sklearn:>11} {vs_raw:>8}  {check}")
        print()
    print("* largest |explained_variance_ - exact| / largest variance, exact = float64 eigenvalues")


if __name__ == "__main__":
    main()
