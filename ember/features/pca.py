"""``PCA``: principal component analysis on every backend, scikit-learn compatible.

The fitted attributes, their meaning, the solver rule and the sign convention are
scikit-learn's (``sklearn.decomposition.PCA``, version 1.9), so results can be compared
with it directly:

* ``svd_solver="auto"``: ``"covariance_eigh"`` when ``n_features <= 1000`` and
  ``n_samples >= 10 * n_features``; else ``"full"`` when ``max(shape) <= 500``; else
  ``"randomized"`` when ``1 <= n_components < 0.8 * min(shape)``; else ``"full"``.
* signs: every solver ends with ``svd_flip(u, vh, u_based_decision=False)``, so the
  largest-magnitude entry of each row of ``components_`` is positive (scikit-learn's
  ``_fit_full`` and ``_fit_truncated`` both use the ``vh``-row-based decision since 1.5).
* ``explained_variance_`` uses ``n_samples - 1`` degrees of freedom;
  ``explained_variance_ratio_`` divides by the total variance of the data (all
  components), also for the randomized solver.

The linear algebra is ``ops.linalg.svd`` (``"full"``), ``ops.linalg.eigh`` of the
covariance matrix (``"covariance_eigh"``; the data is centred before the product, which is
more accurate in float32 than scikit-learn's centring of ``x.T @ x`` afterwards) and
:func:`ember.features.randomized_svd` (``"randomized"``). Computation is in the input's
float dtype (float32 stays float32); integers use ``floatx()``; on MLX with the GPU as
default device float64 inputs are computed in float32 (MLX has no float64 on the GPU).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, TypeGuard

import numpy as np

from ember import ops
from ember.features.randomized_svd import randomized_svd, svd_flip
from ember.features.transformer import Transformer, check_array, fitted_attribute, fitted_count, int_scalar

SOLVERS = ("auto", "full", "covariance_eigh", "randomized")


def _is_int(value: Any) -> TypeGuard[int | np.integer]:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


class PCA(Transformer):
    """Principal component analysis: project data onto its directions of largest variance.

    Args:
        n_components: components to keep: None keeps ``min(n_samples, n_features)``; an
            int ``k >= 1``; a float in ``(0, 1)`` keeps the fewest components whose
            explained variance ratio sums above it (``"full"``/``"covariance_eigh"`` only).
        whiten: scale the projections to unit variance (``transform`` divides by
            ``sqrt(explained_variance_)``).
        svd_solver: ``"auto"``, ``"full"``, ``"covariance_eigh"`` or ``"randomized"``
            (see the module docstring for the ``"auto"`` rule).
        random_state: int seed of the randomized solver's Gaussian test matrix (drawn by
            NumPy, so the same on every backend), or None for a fresh one.
        iterated_power: power iterations of the randomized solver; ``"auto"`` is 7 when
            ``n_components < 0.1 * min(shape)``, else 4.
        n_oversamples: extra random directions of the randomized solver.

    Fitted attributes (arrays of the active backend): ``components_`` ``(k, n_features)``,
    ``explained_variance_``, ``explained_variance_ratio_``, ``singular_values_`` ``(k,)``,
    ``mean_`` ``(n_features,)``, ``noise_variance_`` (scalar), and the ints
    ``n_components_``, ``n_samples_``, ``n_features_in_``.

    Example:
        >>> import ember, numpy as np
        >>> from ember import features, ops
        >>> ember.set_backend("numpy")
        >>> x = np.array([[2.0, 0.0], [0.0, 1.0], [-2.0, 0.0], [0.0, -1.0]])
        >>> pca = features.PCA(n_components=1).fit(x)
        >>> ops.to_numpy(pca.components_).tolist(), ops.to_numpy(pca.explained_variance_ratio_).round(6).tolist()
        ([[1.0, 0.0]], [0.8])
        >>> ops.to_numpy(pca.transform([[1.0, 5.0]])).tolist()
        [[1.0]]
    """

    _required_state = ("components_", "explained_variance_", "explained_variance_ratio_", "singular_values_",
                       "mean_", "noise_variance_", "n_samples_", "n_features_in_")

    n_components: int | float | None = None
    whiten: bool = dataclasses.field(default=False, kw_only=True)
    svd_solver: str = dataclasses.field(default="auto", kw_only=True)
    random_state: int | None = dataclasses.field(default=None, kw_only=True)
    iterated_power: int | str = dataclasses.field(default="auto", kw_only=True)
    n_oversamples: int = dataclasses.field(default=10, kw_only=True)

    components_ = fitted_attribute("components_", "Principal axes ``(n_components_, n_features)``, rows "
                                   "sorted by decreasing explained variance.")
    explained_variance_ = fitted_attribute("explained_variance_", "Variance along each component (ddof=1).")
    explained_variance_ratio_ = fitted_attribute("explained_variance_ratio_",
                                                 "Fraction of the total variance along each component.")
    singular_values_ = fitted_attribute("singular_values_", "Singular values of the centred data.")
    mean_ = fitted_attribute("mean_", "Per-feature mean of the training data.")
    noise_variance_ = fitted_attribute("noise_variance_", "Probabilistic-PCA noise variance (0-d).")

    def __post_init__(self) -> None:
        k = self.n_components
        if isinstance(k, bool) or not (k is None or _is_int(k) or isinstance(k, float)):
            self._fail(f"n_components must be None, an int >= 1 or a float in (0, 1), received {k!r}", TypeError)
        if _is_int(k) and k < 1 or isinstance(k, float) and not 0.0 < k < 1.0:
            self._fail(f"n_components must be None, an int >= 1 or a float in (0, 1), received {k!r}")
        if _is_int(k):
            object.__setattr__(self, "n_components", int(k))
        if self.svd_solver not in SOLVERS:
            self._fail(f"svd_solver must be one of {SOLVERS}, received {self.svd_solver!r}"
                       + ("; use 'randomized' for a truncated SVD" if self.svd_solver == "arpack" else ""))
        if not isinstance(self.whiten, bool):
            self._fail(f"whiten must be a bool, received {self.whiten!r}", TypeError)
        if self.random_state is not None and not _is_int(self.random_state):
            self._fail(f"random_state must be None or an int seed, received {self.random_state!r}", TypeError)
        if self.iterated_power != "auto" and not (_is_int(self.iterated_power) and self.iterated_power >= 0):
            self._fail(f"iterated_power must be 'auto' or an int >= 0, received {self.iterated_power!r}")
        if not (_is_int(self.n_oversamples) and self.n_oversamples >= 0):
            self._fail(f"n_oversamples must be an int >= 0, received {self.n_oversamples!r}")

    # --- fitted integers ---------------------------------------------------------------
    @property
    def n_components_(self) -> int:
        """Number of components kept."""
        return int(ops.shape(self._get("components_"))[0])

    n_samples_ = fitted_count("n_samples_", "Number of samples in the training data.")

    # --- fitting ---------------------------------------------------------------------
    def solver_for(self, shape: tuple[int, int]) -> str:
        """The solver ``fit`` uses for data of ``shape`` (resolves ``"auto"`` as scikit-learn).

        Example:
            >>> from ember.features import PCA
            >>> PCA().solver_for((10_000, 50)), PCA(10).solver_for((800, 900)), PCA().solver_for((300, 40))
            ('covariance_eigh', 'randomized', 'full')
        """
        if self.svd_solver != "auto":
            return self.svd_solver
        n, p = shape
        k = min(shape) if self.n_components is None else self.n_components
        if p <= 1_000 and n >= 10 * p:
            return "covariance_eigh"
        if max(shape) <= 500:
            return "full"
        if _is_int(k) and 1 <= k < 0.8 * min(shape):
            return "randomized"
        return "full"

    def _fit_arrays(self, x: Any) -> tuple[dict, Any, Any]:
        """``(state, u, s)``: the fitted state plus the left singular vectors (None when the
        solver does not compute them) and singular values, for ``fit_transform``."""
        x = self.check_input(x, "fit", fitted=False, min_samples=2)
        n, p = ops.shape(x)
        rank = min(n, p)
        solver = self.solver_for((n, p))
        k = self.n_components
        if _is_int(k) and k > rank:
            self._fail(f"n_components={k} must be between 1 and min(n_samples, n_features)={rank} "
                       f"(the largest possible rank of data of shape {(n, p)}) with svd_solver={solver!r}")
        if k is None:
            k = rank
        mean = ops.mean(x, axis=0)
        centred = ops.subtract(x, mean)
        u = None
        if solver == "randomized":
            if isinstance(k, float):
                self._fail(f"n_components={k} (a variance fraction) needs svd_solver='full' or "
                           f"'covariance_eigh', received svd_solver='randomized'")
            total_var = ops.divide(ops.sum(ops.square(centred)), n - 1)
            u, s, vh = randomized_svd(centred, k, n_oversamples=self.n_oversamples, n_iter=self.iterated_power,
                                      flip_sign=False, random_state=self.random_state)
            variance = ops.divide(ops.square(s), n - 1)
            ratio = ops.divide(variance, total_var)
            noise = (ops.divide(ops.subtract(total_var, ops.sum(variance)), rank - k) if k < rank
                     else ops.zeros((), dtype=ops.dtype(x)))
        else:
            if solver == "full":
                u, s, vh = ops.linalg.svd(centred, full_matrices=False)
                variance = ops.divide(ops.square(s), n - 1)
            else:  # covariance_eigh: eigenvectors of the (p, p) covariance, descending
                covariance = ops.divide(ops.matmul(ops.transpose(centred), centred), n - 1)
                eigenvalues, eigenvectors = ops.linalg.eigh(covariance)
                variance = ops.maximum(ops.flip(eigenvalues, axis=0), 0.0)  # clip round-off negatives
                vh = ops.transpose(ops.flip(eigenvectors, axis=1))
                s = ops.sqrt(ops.multiply(variance, n - 1))
            ratio = ops.divide(variance, ops.sum(variance))
            if isinstance(k, float):
                # Fewest components whose cumulative ratio exceeds k (searchsorted side="right").
                cumulative = np.cumsum(ops.to_numpy(ratio))
                k = min(int(np.searchsorted(cumulative, k, side="right")) + 1, rank)
            noise = (ops.mean(ops.getitem(variance, slice(k, None))) if k < rank
                     else ops.zeros((), dtype=ops.dtype(x)))
        # Sign convention of scikit-learn >= 1.5: decided on the rows of vh, for every solver.
        u, vh = svd_flip(u, vh, u_based_decision=False)
        first = slice(0, k)
        state = {
            "components_": ops.getitem(vh, (first,)),
            "explained_variance_": ops.getitem(variance, first),
            "explained_variance_ratio_": ops.getitem(ratio, first),
            "singular_values_": ops.getitem(s, first),
            "mean_": mean,
            "noise_variance_": ops.cast(noise, ops.dtype(x)),
            "n_samples_": int_scalar(n),
            "n_features_in_": int_scalar(p),
        }
        return state, (None if u is None else ops.getitem(u, (slice(None), first))), state["singular_values_"]

    def _fit(self, x: Any) -> dict:
        return self._fit_arrays(x)[0]

    def fit_transform(self, x: Any, y: Any = None) -> Any:
        """Fit to ``x`` and return its projection ``(n_samples, n_components_)``.

        With the ``"full"`` and ``"randomized"`` solvers the projection is ``u * s``
        from the decomposition itself (``u * sqrt(n_samples - 1)`` when whitening), as
        scikit-learn; with ``"covariance_eigh"`` it is ``transform(x)``.
        """
        state, u, s = self._fit_arrays(x)
        object.__setattr__(self, "_state", state)
        if u is None:
            return self.transform(x)
        if self.whiten:
            return ops.multiply(u, math.sqrt(self.n_samples_ - 1))
        return ops.multiply(u, s)

    # --- transforms --------------------------------------------------------------------
    def _whiten_scale(self) -> Any:
        """``sqrt(explained_variance_)`` clipped below at the dtype's eps (rank-deficient data)."""
        scale = ops.sqrt(self._get("explained_variance_"))
        return ops.maximum(scale, float(np.finfo(ops.dtype(scale)).eps))

    def transform(self, x: Any) -> Any:
        """Project ``x`` ``(n_samples, n_features)`` onto the components: ``(x - mean_) @ components_.T``.

        Raises:
            NotFittedError: before ``fit``.
            ValueError: a feature count other than ``fit``'s, NaN or infinity, not 2-D.
        """
        x = self.check_input(x, "transform")
        components = self._get("components_")
        projected = ops.matmul(ops.subtract(x, self._get("mean_")), ops.transpose(components))
        if self.whiten:
            projected = ops.divide(projected, self._whiten_scale())
        return projected

    def inverse_transform(self, x: Any) -> Any:
        """Map projections ``(n_samples, n_components_)`` back to feature space (undoing whitening).

        Raises:
            NotFittedError: before ``fit``.
            ValueError: ``x`` without ``n_components_`` columns, NaN or infinity, not 2-D.
        """
        self._fitted_state("calling inverse_transform()")
        components = self._get("components_")
        k = ops.shape(components)[0]
        x = check_array(x, "PCA.inverse_transform")
        if ops.shape(x)[1] != k:
            self._fail(f"inverse_transform expects {k} columns (n_components_), received shape {ops.shape(x)}")
        if self.whiten:
            components = ops.multiply(ops.expand_dims(ops.sqrt(self._get("explained_variance_")), 1), components)
        return ops.add(ops.matmul(x, components), self._get("mean_"))
