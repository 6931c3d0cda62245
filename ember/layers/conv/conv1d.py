"""``Conv1D``: 1-d convolution over ``(batch, steps, channels)`` inputs."""

from __future__ import annotations

from ember.layers.conv.base_conv import BaseConv


class Conv1D(BaseConv):
    """1-d convolution (temporal convolution); see :class:`BaseConv` for the arguments.

    ``padding="causal"`` left-pads the input by ``dilation_rate * (kernel_size - 1)``
    so output step ``t`` sees only inputs up to ``t`` (WaveNet-style).
    Kernel: ``(kernel_size, in_channels // groups, filters)``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> conv = layers.Conv1D(4, 3, padding="causal")
        >>> state = conv.build((None, 10, 2), seed=0)
        >>> ops.shape(state["params"]["kernel"])
        (3, 2, 4)
        >>> y, _ = conv.apply(state, ops.ones((1, 10, 2)))
        >>> ops.shape(y)
        (1, 10, 4)
    """

    rank = 1
