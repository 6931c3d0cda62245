"""``ember.ops.image``: Keras 3's image ops, written once over ``ember.ops``.

Every function calls protocol ops at call time, so it runs on the active backend (NumPy,
torch, MLX) and, inside a :class:`~ember.GradientTape`, differentiates through the ops it
calls. Values follow Keras 3 with its torch backend (the oracle of ``tests/ops/test_image.py``);
where Keras's torch backend has no method (``"lanczos3"``/``"lanczos5"`` resizing) they follow
its NumPy/JAX backends. Images are rank 3 (one image) or rank 4 (a batch), ``"channels_last"``
unless ``data_format="channels_first"``.

Modules: :mod:`.color` (grayscale, HSV), :mod:`.resizing` (``resize``,
``scale_and_translate``), :mod:`.sampling` (``map_coordinates`` and the affine, perspective
and elastic warps), :mod:`.patches` (patches, crops, pads), :mod:`.filters` (Gaussian blur,
Sobel edges, SSIM).

Example:
    >>> import ember
    >>> from ember import ops
    >>> with ember.using_backend("numpy"):
    ...     ops.shape(ops.image.resize(ops.ones((2, 4, 4, 3)), (2, 2)))
    (2, 2, 2, 3)
"""

from __future__ import annotations

from ember.ops.image.color import hsv_to_rgb, rgb_to_grayscale, rgb_to_hsv
from ember.ops.image.filters import gaussian_blur, sobel_edges, ssim
from ember.ops.image.patches import crop_images, extract_patches, extract_patches_3d, pad_images
from ember.ops.image.resizing import resize, scale_and_translate
from ember.ops.image.sampling import affine_transform, elastic_transform, map_coordinates, perspective_transform

__all__ = [
    "affine_transform", "crop_images", "elastic_transform", "extract_patches", "extract_patches_3d",
    "gaussian_blur", "hsv_to_rgb", "map_coordinates", "pad_images", "perspective_transform", "resize",
    "rgb_to_grayscale", "rgb_to_hsv", "scale_and_translate", "sobel_edges", "ssim",
]
