"""Images as arrays and back (Pillow, the ``[image]`` extra): ``load_img``, ``img_to_array``,
``array_to_img``, ``save_img``.

Arrays are NumPy, ``(height, width, channels)`` for ``data_format="channels_last"`` (the
default) or ``(channels, height, width)`` for ``"channels_first"``.

Example:
    >>> import numpy as np

from ember import global_settings
    >>> from ember.utils import array_to_img, img_to_array
    >>> pixels = np.zeros((2, 3, 3), "float32"); pixels[0, 0] = [1.0, 0.5, 0.0]
    >>> image = array_to_img(pixels)
    >>> image.size, image.mode
    ((3, 2), 'RGB')
    >>> img_to_array(image)[0, 0].tolist()
    [255.0, 127.0, 0.0]
"""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np

from ember import global_settings

DATA_FORMATS = ("channels_last", "channels_first")
MODES = {1: "L", 3: "RGB", 4: "RGBA"}
INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise ImportError('ember.utils image functions need Pillow: pip install "ember[image]"') from None
    return Image


def _data_format(data_format: str | None, caller: str) -> str:
    data_format = data_format or global_settings.image_data_format()
    if data_format not in DATA_FORMATS:
        raise ValueError(f"{caller}: data_format must be one of {DATA_FORMATS}, received {data_format!r}")
    return data_format


def array_to_img(x: Any, data_format: str | None = None, scale: bool = True, dtype: Any = None) -> Any:
    """A 3-D array as a PIL image (1, 3 or 4 channels: grayscale, RGB, RGBA).

    Args:
        x: the pixels.
        data_format: ``"channels_last"`` (default) or ``"channels_first"``.
        scale: rescale the values linearly to [0, 255] (min to 0, max to 255).
        dtype: accepted for Keras compatibility, must be None or a float dtype name
            (the pixels are converted to uint8 for the image).

    Raises:
        ValueError: not 3-D, an unsupported channel count, or a bad ``data_format``.
    """
    image_module = _pil()
    data_format = _data_format(data_format, "array_to_img")
    if dtype is not None and not np.issubdtype(np.dtype(dtype), np.floating):
        raise ValueError(f"array_to_img: dtype must be a float dtype or None, received {dtype!r}")
    pixels = np.asarray(x, dtype=np.float64)
    if pixels.ndim != 3:
        raise ValueError(f"array_to_img: expected a 3-D array (height, width, channels), received shape "
                         f"{pixels.shape}")
    if data_format == "channels_first":
        pixels = pixels.transpose(1, 2, 0)
    channels = pixels.shape[-1]
    if channels not in MODES:
        raise ValueError(f"array_to_img: expected 1, 3 or 4 channels, received {channels} (shape {pixels.shape})")
    if scale:
        pixels = pixels - pixels.min()
        peak = pixels.max()
        if peak > 0:
            pixels = pixels / peak
        pixels = pixels * 255.0
    pixels = np.clip(pixels, 0, 255).astype(np.uint8)
    if channels == 1:
        return image_module.fromarray(pixels[:, :, 0], "L")
    return image_module.fromarray(pixels, MODES[channels])


def img_to_array(img: Any, data_format: str | None = None, dtype: Any = None) -> np.ndarray:
    """A PIL image as a 3-D array (``float32`` by default).

    Raises:
        ValueError: a bad ``data_format``, or an image that is not 2-D/3-D.
    """
    data_format = _data_format(data_format, "img_to_array")
    pixels = np.asarray(img, dtype=dtype or "float32")
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if pixels.ndim != 3:
        raise ValueError(f"img_to_array: unsupported image shape {pixels.shape}")
    return pixels.transpose(2, 0, 1) if data_format == "channels_first" else pixels


def save_img(path: Any, x: Any, data_format: str | None = None, file_format: str | None = None,
             scale: bool = True, **kwargs: Any) -> None:
    """Write an array as an image file (``file_format`` from the suffix when None; ``kwargs`` go to
    Pillow's ``Image.save``)."""
    image = array_to_img(x, data_format=data_format, scale=scale)
    if image.mode == "RGBA" and (file_format or str(path).rsplit(".", 1)[-1]).lower() in ("jpg", "jpeg"):
        image = image.convert("RGB")
    image.save(path, format=file_format, **kwargs)


def load_img(path: Any, color_mode: str = "rgb", target_size: tuple[int, int] | None = None,
             interpolation: str = "nearest", keep_aspect_ratio: bool = False) -> Any:
    """Read an image file (a path or a binary stream) as a PIL image.

    Args:
        path: the file.
        color_mode: ``"grayscale"``, ``"rgb"`` or ``"rgba"``.
        target_size: ``(height, width)`` to resize to, or None.
        interpolation: the resampling filter (``"nearest"``, ``"bilinear"``, ``"bicubic"``, ...).
        keep_aspect_ratio: crop the centre to the target's aspect ratio before resizing.

    Raises:
        ValueError: a bad ``color_mode`` or ``interpolation``.
        FileNotFoundError: no such file.
    """
    image_module = _pil()
    modes = {"grayscale": "L", "rgb": "RGB", "rgba": "RGBA"}
    if color_mode not in modes:
        raise ValueError(f"load_img: color_mode must be one of {sorted(modes)}, received {color_mode!r}")
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"load_img: interpolation must be one of {INTERPOLATIONS}, received {interpolation!r}")
    if isinstance(path, (str, os.PathLike)):
        with open(path, "rb") as handle:
            image = image_module.open(io.BytesIO(handle.read()))
    else:
        image = image_module.open(path)
    if image.mode != modes[color_mode]:
        image = image.convert(modes[color_mode])
    if target_size is not None:
        height, width = target_size
        if keep_aspect_ratio:
            crop_w = min(image.width, round(image.height * width / height))
            crop_h = min(image.height, round(image.width * height / width))
            left, top = (image.width - crop_w) // 2, (image.height - crop_h) // 2
            image = image.crop((left, top, left + crop_w, top + crop_h))
        resample = getattr(image_module.Resampling, interpolation.upper())
        if image.size != (width, height):
            image = image.resize((width, height), resample)
    return image
