"""ImageNet input preprocessing and prediction decoding, as ``keras.applications.imagenet_utils``.

``preprocess_input`` takes a NumPy array (returns a new float NumPy array: unlike Keras, a float
input is never modified in place) or a backend tensor (returns one, computed with ``ember.ops``).
``decode_predictions`` needs ImageNet's class index (``imagenet_class_index.json``), which Keras
downloads; Ember makes no network calls, so it reads a local copy: the ``class_index`` argument
(a path, or the loaded dict), else Keras's cache (``$KERAS_HOME/models`` or ``~/.keras/models``).

Example:
    >>> import numpy as np
    >>> from ember.applications import imagenet_utils
    >>> pixels = np.array([[[0.0, 127.5, 255.0]]])
    >>> imagenet_utils.preprocess_input(pixels, mode="tf")
    array([[[-1.,  0.,  1.]]])
    >>> imagenet_utils.preprocess_input(pixels, mode="caffe").round(3).tolist()
    [[[151.061, 10.721, -123.68]]]
    >>> index = {str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}
    >>> scores = np.zeros((1, 1000)); scores[0, 7] = 0.9; scores[0, 3] = 0.1
    >>> imagenet_utils.decode_predictions(scores, top=2, class_index=index)
    [[('n00000007', 'class_7', 0.9), ('n00000003', 'class_3', 0.1)]]
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from ember import global_settings, ops
from ember.dtypes import floatx

MODES = ("caffe", "tf", "torch")
CAFFE_MEAN = (103.939, 116.779, 123.68)  # BGR
TORCH_MEAN = (0.485, 0.456, 0.406)
TORCH_STD = (0.229, 0.224, 0.225)
CLASS_INDEX_FILE = "imagenet_class_index.json"
CLASS_INDEX_URL = "https://storage.googleapis.com/download.tensorflow.org/data/imagenet_class_index.json"
IMAGENET_CLASSES = 1000


def _data_format(data_format: str | None) -> str:
    data_format = global_settings.image_data_format() if data_format is None else data_format
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"preprocess_input: data_format should be 'channels_last' or 'channels_first'; "
                         f"received data_format={data_format!r}")
    return data_format


def _channel_shape(data_format: str) -> tuple:
    """Where a per-channel constant broadcasts: the last axis, or the third from the end."""
    return (3,) if data_format == "channels_last" else (3, 1, 1)


def preprocess_input(x: Any, data_format: str | None = None, mode: str = "caffe") -> Any:
    """Scale a batch (or one image) of RGB pixels in [0, 255] as an ImageNet model expects.

    Args:
        x: a 3-D or 4-D NumPy array or backend tensor with 3 channels.
        data_format: ``"channels_last"`` or ``"channels_first"`` (default: the global image data format).
        mode: ``"caffe"`` (RGB to BGR, minus ImageNet's channel means, unscaled), ``"tf"`` (to
            [-1, 1]) or ``"torch"`` (to [0, 1], then ImageNet's channel mean and standard deviation).

    Returns:
        The preprocessed images (float), a new array of the input's kind.

    Raises:
        ValueError: an unknown ``mode`` or ``data_format``.
    """
    if mode not in MODES:
        raise ValueError(f"preprocess_input: mode should be one of {MODES}; received mode={mode!r}")
    data_format = _data_format(data_format)
    if isinstance(x, np.ndarray) or np.isscalar(x) or isinstance(x, (list, tuple)):
        array = np.asarray(x)
        if not np.issubdtype(array.dtype, np.floating):
            array = array.astype(floatx())
        return _preprocess(array, data_format, mode, np.flip, lambda v, ref: np.asarray(v, ref.dtype))
    tensor = ops.convert_to_tensor(x)
    if "float" not in str(ops.dtype(tensor)):
        tensor = ops.cast(tensor, floatx())
    return _preprocess(tensor, data_format, mode, lambda v, axis: ops.flip(v, axis=axis),
                       lambda v, ref: ops.convert_to_tensor(np.asarray(v), dtype=ops.dtype(ref)))


def _preprocess(x: Any, data_format: str, mode: str, flip: Any, constant: Any) -> Any:
    if mode == "tf":
        return x / constant(127.5, x) - constant(1.0, x)
    shape = _channel_shape(data_format)
    if mode == "torch":
        mean = constant(np.reshape(TORCH_MEAN, shape), x)
        std = constant(np.reshape(TORCH_STD, shape), x)
        return (x / constant(255.0, x) - mean) / std
    channel_axis = -1 if data_format == "channels_last" else -3
    return flip(x, channel_axis) - constant(np.reshape(CAFFE_MEAN, shape), x)


def _class_index_path() -> str | None:
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    path = os.path.join(home, "models", CLASS_INDEX_FILE)
    return path if os.path.isfile(path) else None


def load_class_index(class_index: Any = None) -> dict:
    """ImageNet's class index ``{"0": [wordnet_id, name], ...}``: ``class_index`` (a dict or a path), else Keras's
    cache.

    Raises:
        FileNotFoundError: no path given and none in Keras's cache (the message says where to get it).
        ValueError: the file or dict does not hold 1000 classes.
    """
    if isinstance(class_index, dict):
        index = class_index
    else:
        path = _class_index_path() if class_index is None else os.fspath(class_index)
        if path is None or not os.path.isfile(path):
            where = "no class_index path was given and Keras's cache has none" if class_index is None else \
                f"no such file: {path!r}"
            raise FileNotFoundError(
                f"decode_predictions needs ImageNet's class index ({CLASS_INDEX_FILE}): {where}. Ember makes no "
                f"network calls: download it yourself from {CLASS_INDEX_URL} and pass its path as "
                f"decode_predictions(preds, class_index='<path>') (or put it in ~/.keras/models/, where Keras "
                f"caches it).")
        with open(path, encoding="utf-8") as handle:
            index = json.load(handle)
    if not isinstance(index, dict) or any(str(i) not in index for i in range(IMAGENET_CLASSES)):
        raise ValueError(f"decode_predictions: the class index should map '0'..'999' to [wordnet_id, name] "
                         f"(ImageNet's {CLASS_INDEX_FILE}); received {type(index).__name__} with "
                         f"{len(index) if isinstance(index, dict) else 0} entries")
    return index


def decode_predictions(preds: Any, top: int = 5, class_index: Any = None) -> list:
    """The ``top`` classes of each row of ImageNet predictions, best first.

    Args:
        preds: predictions of shape ``(samples, 1000)`` (NumPy array or backend tensor).
        top: how many classes per sample.
        class_index: the path of ``imagenet_class_index.json`` or the loaded dict; default: Keras's cache.

    Returns:
        One list per sample of ``(wordnet_id, class_name, score)`` tuples.

    Raises:
        ValueError: ``preds`` is not of shape ``(samples, 1000)``.
        FileNotFoundError: no class index available (see :func:`load_class_index`).
    """
    scores = np.asarray(preds if isinstance(preds, np.ndarray) else ops.to_numpy(ops.convert_to_tensor(preds)))
    if scores.ndim != 2 or scores.shape[1] != IMAGENET_CLASSES:
        raise ValueError(f"decode_predictions expects a batch of predictions (a 2D array of shape (samples, "
                         f"{IMAGENET_CLASSES})); received an array of shape {scores.shape}")
    index = load_class_index(class_index)
    results = []
    for row in scores:
        best = row.argsort()[-top:][::-1]
        found = [(*index[str(i)], row[i].item()) for i in best]
        found.sort(key=lambda entry: entry[2], reverse=True)
        results.append([tuple(entry) for entry in found])
    return results
