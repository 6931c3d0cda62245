"""The demo's data: scikit-learn's handwritten digits, scaled to [0, 1], split by class.

Example:
    >>> from ember.demo.data import load_data
    >>> x_train, y_train, x_test, y_test = load_data()
    >>> len(x_train) + len(x_test)
    1797
"""

from __future__ import annotations

import numpy as np

SEED = 0
TEST_FRACTION = 0.2


def stratified_split(labels: np.ndarray, test_fraction: float = TEST_FRACTION,
                     seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """Seeded train/test indices that keep each class's share (``round(fraction * count)`` to test).

    Example:
        >>> train, test = stratified_split(np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1]), 0.5)
        >>> sorted(np.bincount(np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1])[test]).tolist())
        [2, 3]
        >>> len(set(train) | set(test))
        10
    """
    rng = np.random.default_rng(seed)
    train, test = [], []
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        cut = int(round(test_fraction * len(members)))
        test.append(members[:cut])
        train.append(members[cut:])
    return rng.permutation(np.concatenate(train)), rng.permutation(np.concatenate(test))


def load_data(test_fraction: float = TEST_FRACTION, seed: int = SEED) -> tuple[np.ndarray, ...]:
    """scikit-learn's digits (1797 8x8 images) scaled to [0, 1], split with :func:`stratified_split`.

    Returns:
        ``(x_train, y_train, x_test, y_test)``: float32 ``(n, 64)`` images and int32 labels.

    Raises:
        ImportError: scikit-learn is missing; the message names the extra to install.

    Example:
        >>> x_train, y_train, x_test, y_test = load_data()
        >>> x_train.shape, x_test.shape, float(x_train.max())
        ((1438, 64), (359, 64), 1.0)
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise ImportError('the demo trains on scikit-learn\'s digits data set, and scikit-learn is not installed: '
                          'pip install "ember[examples]" (the data and plotting libraries of the demo and the '
                          'tutorials) or pip install scikit-learn') from None
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)  # pixel values are 0..16
    y = digits.target.astype(np.int32)
    train, test = stratified_split(y, test_fraction, seed)
    return x[train], y[train], x[test], y[test]
