"""``image_dataset_from_directory``: a folder of images as a labelled, batched dataset, without TensorFlow.

Keras 3's signature and semantics (``keras.utils.image_dataset_from_directory``): labels from
the sub-folders (or a list, or none), ``validation_split``/``subset``, ``image_size``,
``batch_size``, ``shuffle``/``seed``, ``color_mode``, ``crop_to_aspect_ratio`` and
``pad_to_aspect_ratio``. Returns a :class:`~ember.training.data.file_dataset.FileDataset`
(an ``ember.data.Dataset``: ``fit`` takes it; ``class_names``, ``file_paths``; see there for
the order with a seed, and ``.prefetch``). Keras's files are ``.bmp``, ``.gif`` (first frame),
``.jpeg``, ``.jpg`` and ``.png``.

Decoding is Pillow's (the ``[image]`` extra), converted as Keras's Pillow path does ("L" for
grayscale, kept when already 8/16/32-bit grayscale; "RGB"; "RGBA"), to float32.

Resizing (on float32 pixels, so nothing is rounded to 8 bits):

* ``"bilinear"`` and ``"nearest"``: computed here in NumPy as ``keras.ops.image.resize`` does
  (half-pixel centres, no antialiasing; nearest is floor((i + 0.5) * in / out)), so the pixels
  equal Keras's;
* ``"bicubic"`` -> Pillow ``BICUBIC``, ``"area"`` -> Pillow ``BOX``, ``"lanczos3"`` ->
  Pillow ``LANCZOS`` (a = 3), each on every channel in Pillow's float mode. Pillow
  antialiases when it shrinks (its filter widens with the scale), Keras does not: shrunk
  images differ from Keras's with these three;
* ``"lanczos5"``, ``"gaussian"``, ``"mitchellcubic"`` (TensorFlow kernels Pillow lacks):
  NotImplementedError naming the supported ones.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np

from ember.training.data.directory_datasets import build_datasets, check_common_arguments, index_files
from ember.training.data.folder_index import check_split_arguments
from ember.validation import check_positive_int

ALLOWLIST_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")
COLOR_CHANNELS = {"grayscale": 1, "rgb": 3, "rgba": 4}
NUMPY_INTERPOLATIONS = ("bilinear", "nearest")
PILLOW_FILTERS = {"bicubic": "BICUBIC", "area": "BOX", "lanczos3": "LANCZOS"}
TENSORFLOW_ONLY = ("lanczos5", "gaussian", "mitchellcubic")
CALLER = "image_dataset_from_directory"


def _pil() -> Any:
    try:
        from PIL import Image  # the optional [image] extra
    except ImportError:
        raise ImportError(f'{CALLER} needs Pillow: pip install "ember[image]"') from None
    return Image


def decode(path: str, channels: int) -> np.ndarray:
    """The image at ``path`` as a float32 ``(height, width, channels)`` array (Keras's Pillow conversion)."""
    image_module = _pil()
    with image_module.open(path) as image:
        if channels == 1:
            converted = image if image.mode in ("L", "I;16", "I") else image.convert("L")
        else:
            mode = "RGBA" if channels == 4 else "RGB"
            converted = image if image.mode == mode else image.convert(mode)
        pixels = np.asarray(converted, dtype=np.float32)
    return pixels[..., None] if pixels.ndim == 2 else pixels


def _linear_weights(out_size: int, in_size: int) -> np.ndarray:
    """``(out, in)`` half-pixel linear interpolation weights (torch/Keras ``align_corners=False``)."""
    source = np.maximum((np.arange(out_size) + 0.5) * (in_size / out_size) - 0.5, 0.0)
    low = np.minimum(np.floor(source).astype(np.int64), in_size - 1)
    high = np.minimum(low + 1, in_size - 1)
    fraction = source - low
    weights = np.zeros((out_size, in_size))
    np.add.at(weights, (np.arange(out_size), low), 1.0 - fraction)
    np.add.at(weights, (np.arange(out_size), high), fraction)
    return weights


def _nearest_weights(out_size: int, in_size: int) -> np.ndarray:
    """``(out, in)`` one-hot rows picking ``floor((i + 0.5) * in / out)`` (torch's ``nearest-exact``)."""
    source = np.minimum(np.floor((np.arange(out_size) + 0.5) * (in_size / out_size)).astype(np.int64), in_size - 1)
    return np.eye(in_size)[source]


def _resize_pillow(pixels: np.ndarray, size: tuple[int, int], interpolation: str) -> np.ndarray:
    image_module = _pil()
    resample = getattr(image_module.Resampling, PILLOW_FILTERS[interpolation])
    channels = [np.asarray(image_module.fromarray(np.ascontiguousarray(pixels[..., c])).resize(
        (size[1], size[0]), resample=resample), dtype=np.float32) for c in range(pixels.shape[-1])]
    return np.stack(channels, axis=-1)


def resize(pixels: np.ndarray, size: tuple[int, int], interpolation: str) -> np.ndarray:
    """``(height, width, channels)`` float32 ``pixels`` resized to ``size`` (see the module docstring).

    Example:
        >>> resize(np.array([[[0.0], [2.0]]], "float32"), (1, 4), "bilinear")[..., 0].tolist()
        [[0.0, 0.5, 1.5, 2.0]]
    """
    height, width = pixels.shape[:2]
    if (height, width) == tuple(size):
        return pixels.astype(np.float32)
    if interpolation in NUMPY_INTERPOLATIONS:
        weights = _linear_weights if interpolation == "bilinear" else _nearest_weights
        rows, cols = weights(size[0], height), weights(size[1], width)
        return np.einsum("ah,hwc,bw->abc", rows, pixels.astype(np.float64), cols).astype(np.float32)
    return _resize_pillow(pixels.astype(np.float32), size, interpolation)


def crop_to_aspect(pixels: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """The largest centred window of ``pixels`` with the aspect ratio of ``size`` (Keras's ``smart_resize`` crop)."""
    height, width = pixels.shape[:2]
    crop_height = max(min(height, int(float(width * size[0]) / size[1])), 1)
    crop_width = max(min(width, int(float(height * size[1]) / size[0])), 1)
    top, left = int(float(height - crop_height) / 2), int(float(width - crop_width) / 2)
    return pixels[top:top + crop_height, left:left + crop_width]


def pad_to_aspect(pixels: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``pixels`` padded with zeros, equally on both sides, toward the aspect ratio of ``size`` (Keras's rule)."""
    height, width = pixels.shape[:2]
    top = int(float(max(height, int(float(width * size[0]) / size[1])) - height) / 2)
    left = int(float(max(width, int(float(height * size[1]) / size[0])) - width) / 2)
    return np.pad(pixels, ((top, top), (left, left), (0, 0)))


def load_image(path: str, size: tuple[int, int], channels: int, interpolation: str, crop: bool, pad: bool,
               data_format: str) -> np.ndarray:
    """One file, decoded, cropped or padded to the aspect ratio if asked, resized, float32."""
    pixels = decode(path, channels)
    if crop:
        pixels = crop_to_aspect(pixels, size)
    elif pad:
        pixels = pad_to_aspect(pixels, size)
    pixels = resize(pixels, size, interpolation)
    return np.transpose(pixels, (2, 0, 1)) if data_format == "channels_first" else pixels


def _image_size(image_size: Any) -> tuple[int, int]:
    if isinstance(image_size, int) and not isinstance(image_size, bool):
        image_size = (image_size, image_size)
    if not isinstance(image_size, (list, tuple)) or len(image_size) != 2:
        raise ValueError(f"{CALLER}: image_size must be (height, width), two positive ints, received {image_size!r}")
    return (check_positive_int(CALLER, "image_size", image_size[0]),
            check_positive_int(CALLER, "image_size", image_size[1]))


def image_dataset_from_directory(directory: Any, labels: Any = "inferred", label_mode: str | None = "int",
                                 class_names: list | None = None, color_mode: str = "rgb",
                                 batch_size: int | None = 32, image_size: Any = (256, 256), shuffle: bool = True,
                                 seed: int | None = None, validation_split: float | None = None,
                                 subset: str | None = None, interpolation: str = "bilinear",
                                 follow_links: bool = False, crop_to_aspect_ratio: bool = False,
                                 pad_to_aspect_ratio: bool = False, data_format: str | None = None,
                                 verbose: bool = True) -> Any:
    """Images in ``directory`` (one sub-folder per class) as batches of ``(images, labels)``.

    Args:
        directory: the folder; with ``labels="inferred"``, one sub-folder per class.
        labels: ``"inferred"``, None (images only) or one int label per file, in the sorted order
            of the paths.
        label_mode: ``"int"`` (int32 ``(batch,)``), ``"categorical"`` (float32 one-hot), ``"binary"``
            (float32 ``(batch, 1)``, 2 classes) or None (images only).
        class_names: the sub-folders to use, in label order (default: all, sorted).
        color_mode: ``"grayscale"``, ``"rgb"`` or ``"rgba"`` (1, 3 or 4 channels).
        batch_size: images per batch (None: single images).
        image_size: ``(height, width)`` every image is resized to (an int: square).
        shuffle: shuffle the files (and each epoch's order); False: sorted order.
        seed: the shuffling seed (required with ``validation_split`` and ``shuffle``).
        validation_split: the fraction of files kept for validation (the last ones after shuffling).
        subset: ``"training"``, ``"validation"`` or ``"both"`` (a ``(training, validation)`` pair).
        interpolation: ``"bilinear"``, ``"nearest"``, ``"bicubic"``, ``"area"`` or ``"lanczos3"``
            (see the module docstring for how each is computed).
        follow_links: follow symbolic links to folders.
        crop_to_aspect_ratio: crop the centred window of the target aspect ratio before resizing.
        pad_to_aspect_ratio: pad with zeros to the target aspect ratio before resizing.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.
        verbose: print how many files were found.

    Returns:
        A :class:`FileDataset`, or a ``(training, validation)`` pair with ``subset="both"``.

    Raises:
        ValueError: a bad argument (named in the message), a folder without images.
        NotImplementedError: an interpolation only TensorFlow has.

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> from PIL import Image
        >>> from ember.utils import image_dataset_from_directory
        >>> root = tempfile.mkdtemp()
        >>> for label in ("cat", "dog"):
        ...     os.makedirs(os.path.join(root, label))
        ...     for i in range(2):
        ...         Image.fromarray(np.full((4, 6, 3), 60 * i, "uint8")).save(os.path.join(root, label, f"{i}.png"))
        >>> ds = image_dataset_from_directory(root, image_size=(2, 3), batch_size=3, shuffle=False)
        Found 4 files belonging to 2 classes.
        >>> ds.class_names, len(ds)
        (['cat', 'dog'], 2)
        >>> x, y = ds[0]
        >>> x.shape, x.dtype, y.tolist()
        ((3, 2, 3, 3), dtype('float32'), [0, 0, 1])
    """
    check_common_arguments(CALLER, labels, label_mode, class_names, batch_size)
    if color_mode not in COLOR_CHANNELS:
        raise ValueError(f"{CALLER}: color_mode must be 'grayscale', 'rgb' or 'rgba', received {color_mode!r}")
    size = _image_size(image_size)
    method = str(interpolation).lower()
    if method in TENSORFLOW_ONLY:
        raise NotImplementedError(f"{CALLER}: interpolation={interpolation!r} is a TensorFlow kernel Ember does not "
                                  f"have; use one of {NUMPY_INTERPOLATIONS + tuple(PILLOW_FILTERS)}")
    if method not in NUMPY_INTERPOLATIONS + tuple(PILLOW_FILTERS):
        raise ValueError(f"{CALLER}: interpolation must be one of {NUMPY_INTERPOLATIONS + tuple(PILLOW_FILTERS)}, "
                         f"received {interpolation!r}")
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError(f"{CALLER}: only one of crop_to_aspect_ratio and pad_to_aspect_ratio can be True")
    data_format = data_format or "channels_last"
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"{CALLER}: data_format must be 'channels_last' or 'channels_first', "
                         f"received {data_format!r}")
    check_split_arguments(CALLER, validation_split, subset, shuffle, seed)
    _pil()
    paths, label_array, names, seed = index_files(CALLER, directory, labels, label_mode, ALLOWLIST_FORMATS,
                                                  class_names, shuffle, seed, follow_links, verbose)
    load = functools.partial(load_image, size=size, channels=COLOR_CHANNELS[color_mode], interpolation=method,
                             crop=bool(crop_to_aspect_ratio), pad=bool(pad_to_aspect_ratio), data_format=data_format)
    return build_datasets(CALLER, paths, label_array, names, validation_split, subset, label_mode, batch_size,
                          shuffle, seed, load, np.stack, os.fspath(directory), ALLOWLIST_FORMATS, verbose)
