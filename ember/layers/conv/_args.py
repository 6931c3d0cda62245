"""Argument and shape helpers shared by the convolution, pooling and reshaping layers.

Every helper takes the layer's name so its errors say which layer and argument were
wrong, what was expected and what was received. The output-length formulas are
Keras's (``compute_conv_output_shape``, ``compute_pooling_output_shape``,
``compute_conv_transpose_output_shape``); ``None`` (unknown) lengths stay ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember import activations, global_settings
from ember.layers.core._checks import input_shape_of
from ember.validation import check_bool

DATA_FORMATS = ("channels_last", "channels_first")
# The shape helpers below take a layer's data_format: None (the default) means "channels_last".


def is_int(value: Any) -> bool:
    """An int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def standardize_tuple(name: str, value: Any, n: int, argument: str, allow_zero: bool = False) -> tuple[int, ...]:
    """``value`` (an int or ``n`` ints) as a tuple of ``n`` ints, each >= 1 (>= 0 with ``allow_zero``).

    Example:
        >>> standardize_tuple("conv2d", 3, 2, "kernel_size")
        (3, 3)
        >>> standardize_tuple("conv2d", [1, 2], 2, "strides")
        (1, 2)
    """
    low = 0 if allow_zero else 1
    expected = f"an int or a tuple of {n} ints, each >= {low}"
    if is_int(value):
        values = (value,) * n
    else:
        try:
            values = tuple(value)
        except TypeError:
            raise TypeError(f"{name}: {argument} must be {expected}, received {value!r}") from None
        if len(values) != n or not all(is_int(v) for v in values):
            raise ValueError(f"{name}: {argument} must be {expected}, received {value!r}")
    if any(v < low for v in values):
        raise ValueError(f"{name}: {argument} must be {expected}, received {value!r}")
    return values


def standardize_padding(name: str, value: Any, allow_causal: bool = False) -> str:
    """``"valid"``/``"same"`` (``"causal"`` when allowed), lower-cased."""
    allowed = ("valid", "same", "causal") if allow_causal else ("valid", "same")
    mode = value.lower() if isinstance(value, str) else value
    if mode not in allowed:
        raise ValueError(f"{name}: padding must be one of {allowed}, received {value!r}")
    return mode


def standardize_data_format(name: str, value: Any) -> str:
    """``None`` means :func:`ember.global_settings.image_data_format` (``"channels_last"`` unless set)."""
    if value is None:
        return global_settings.image_data_format()
    fmt = value.lower() if isinstance(value, str) else value
    if fmt not in DATA_FORMATS:
        raise ValueError(f"{name}: data_format must be one of {DATA_FORMATS} or None, received {value!r}")
    return fmt


def standardize_window(layer: Any, allow_causal: bool = False) -> None:
    """Normalize a convolution's window fields in place: ``kernel_size``, ``strides`` and
    ``dilation_rate`` as ``layer.rank`` ints, ``padding`` (``"causal"`` when allowed) and ``data_format``."""
    name, rank = layer.name, layer.rank
    layer._normalize("kernel_size", standardize_tuple(name, layer.kernel_size, rank, "kernel_size"))
    layer._normalize("strides", standardize_tuple(name, layer.strides, rank, "strides"))
    layer._normalize("dilation_rate", standardize_tuple(name, layer.dilation_rate, rank, "dilation_rate"))
    layer._normalize("padding", standardize_padding(name, layer.padding, allow_causal=allow_causal))
    layer._normalize("data_format", standardize_data_format(name, layer.data_format))


def standardize_conv_options(layer: Any) -> None:
    """What every convolution layer checks after its window: Keras's rule that ``strides > 1``
    excludes ``dilation_rate > 1``, ``use_bias`` a bool, ``activation`` a known one (normalized)."""
    name = layer.name
    if max(layer.strides) > 1 and max(layer.dilation_rate) > 1:
        raise ValueError(
            f"{name}: strides > 1 cannot be combined with dilation_rate > 1, received "
            f"strides={layer.strides} and dilation_rate={layer.dilation_rate}"
        )
    check_bool(name, "use_bias", layer.use_bias)
    layer._normalize("activation", activations.standardize(layer.activation, f"{name}: activation"))


def spatial_shape(layer: Any, input_shape: Any, rank: int, data_format: str | None = "channels_last") -> tuple:
    """``(shape, spatial dims, channels)`` of an input of rank ``rank + 2``; errors name the layer."""
    shape = input_shape_of(layer, input_shape, rank=rank + 2)
    if data_format == "channels_first":
        return shape, shape[2:], shape[1]
    return shape, shape[1:-1], shape[-1]


def known_channels(layer: Any, input_shape: Any, data_format: str | None = "channels_last") -> int:
    """The channel count of ``input_shape`` (rank ``layer.rank + 2``); ValueError when unknown."""
    _, _, channels = spatial_shape(layer, input_shape, layer.rank, data_format)
    if channels is None:
        raise ValueError(
            f"layer {layer.name!r} needs a known channel dimension, received shape {tuple(input_shape)}")
    return channels


def join_shape(batch: Any, spatial: Sequence[Any], channels: Any, data_format: str | None) -> tuple:
    """Reassemble a shape from its batch, spatial dims and channels."""
    if data_format == "channels_first":
        return (batch, channels) + tuple(spatial)
    return (batch,) + tuple(spatial) + (channels,)


def spatial_axes(rank: int, data_format: str | None) -> tuple[int, ...]:
    """Axes of the spatial dims of a rank ``rank + 2`` input."""
    start = 2 if data_format == "channels_first" else 1
    return tuple(range(start, start + rank))


def channel_axis(data_format: str | None) -> int:
    return 1 if data_format == "channels_first" else -1


def _check_positive(layer: Any, lengths: list, input_shape: Any, what: str) -> list:
    for length in lengths:
        if length is not None and length < 1:
            raise ValueError(
                f"layer {layer.name!r}: the {what} leaves an empty output for input shape {tuple(input_shape)} "
                f"(output spatial dims {tuple(lengths)}); use a smaller window or padding='same'"
            )
    return lengths


def conv_output_lengths(layer: Any, input_shape: Any, spatial: tuple, kernel_size: tuple, strides: tuple,
                        padding: str, dilation_rate: tuple) -> list:
    """Keras's convolution output lengths (``"causal"`` behaves as ``"same"``)."""
    lengths: list[int | None] = []
    for n, k, s, d in zip(spatial, kernel_size, strides, dilation_rate):
        if n is None:
            lengths.append(None)
        elif padding == "valid":
            lengths.append((n - d * (k - 1) - 1) // s + 1)
        else:
            lengths.append((n - 1) // s + 1)
    return _check_positive(layer, lengths, input_shape, f"kernel {kernel_size} (dilation {dilation_rate})")


def conv_output_shape(layer: Any, input_shape: Any) -> tuple:
    """The output shape of a convolution with ``layer.filters`` output channels (its window fields
    already normalized)."""
    shape, spatial, _ = spatial_shape(layer, input_shape, layer.rank, layer.data_format)
    lengths = conv_output_lengths(layer, shape, spatial, layer.kernel_size, layer.strides, layer.padding,
                                  layer.dilation_rate)
    return join_shape(shape[0], lengths, layer.filters, layer.data_format)


def pool_output_lengths(layer: Any, input_shape: Any, spatial: tuple, pool_size: tuple, strides: tuple,
                        padding: str) -> list:
    """Keras's pooling output lengths."""
    lengths: list[int | None] = []
    for n, k, s in zip(spatial, pool_size, strides):
        if n is None:
            lengths.append(None)
        elif padding == "valid":
            lengths.append((n - k) // s + 1)
        else:
            lengths.append((n - 1) // s + 1)
    return _check_positive(layer, lengths, input_shape, f"pool_size {pool_size}")


def conv_transpose_output_lengths(spatial: tuple, kernel_size: tuple, strides: tuple, padding: str,
                                  output_padding: tuple | None, dilation_rate: tuple) -> list:
    """Keras's (TF's) transposed-convolution output lengths."""
    lengths: list[int | None] = []
    for i, (n, k, s, d) in enumerate(zip(spatial, kernel_size, strides, dilation_rate)):
        extra = None if output_padding is None else output_padding[i]
        effective = (k - 1) * d + 1
        if n is None:
            lengths.append(None)
        elif padding == "valid":
            extra = max(effective, s) - effective if extra is None else extra
            lengths.append((n - 1) * s + effective + extra)
        elif extra is None:
            lengths.append(n * s)
        else:
            lengths.append((n - 1) * s + effective % 2 + extra)
    return lengths
