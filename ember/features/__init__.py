"""``ember.features``: feature preprocessing on every backend.

* :class:`PCA` (scikit-learn's attributes, solvers and sign convention),
  :func:`randomized_svd`, :func:`svd_flip`;
* scalers: :class:`StandardScaler` / :func:`standardize`, :class:`MinMaxScaler`,
  :class:`Normalizer` / :func:`normalize`;
* encoding and scattering: :func:`one_hot`, :func:`scatter` (sum/max/min/mean),
  :func:`segment_sum`, :func:`segment_mean`, :func:`segment_max`, :func:`segment_min`.

Transformers keep their fitted arrays in a ``state`` dict and are ``optree`` pytrees of
it (namespace ``"ember"``), registered for config serialization, so they can be saved
in a checkpoint and used on any backend (see :mod:`ember.features.transformer`).

Example:
    >>> import ember
    >>> from ember import features, ops
    >>> ember.set_backend("numpy")
    >>> x = [[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]]
    >>> pca = features.PCA(n_components=1).fit(features.standardize(x))
    >>> pca.n_components_, ops.shape(pca.transform(features.standardize(x)))
    (1, (3, 1))
"""

from __future__ import annotations

from ember.features.minmax_scaler import MinMaxScaler
from ember.features.normalizer import Normalizer, normalize
from ember.features.one_hot import one_hot
from ember.features.pca import PCA
from ember.features.randomized_svd import randomized_range_finder, randomized_svd, svd_flip
from ember.features.scatter import scatter
from ember.features.segment import segment_max, segment_mean, segment_min, segment_sum
from ember.features.standard_scaler import StandardScaler, standardize
from ember.features.transformer import NotFittedError, Transformer

__all__ = [
    "MinMaxScaler",
    "NotFittedError",
    "Normalizer",
    "PCA",
    "StandardScaler",
    "Transformer",
    "normalize",
    "one_hot",
    "randomized_range_finder",
    "randomized_svd",
    "scatter",
    "segment_max",
    "segment_mean",
    "segment_min",
    "segment_sum",
    "standardize",
    "svd_flip",
]
