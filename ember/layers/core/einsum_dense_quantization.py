"""Where an ``EinsumDense``'s int8 scales live (Keras's layout, so quantized files are exchanged with Keras).

The kernel is quantized with one scale per slice reduced over its contracted axes (the kernel letters
missing from the output); the inputs, on the fly, over theirs. Keras stores the kernel's scales laid
out like the output (transposed to the output's letter order, size-1 axes for the output letters the
kernel lacks) and multiplies them with the inputs' scales, laid out the same way, to de-scale the
einsum. :func:`quantization_axes` derives those layouts from the equation and the input rank with the
same rules as Keras's ``_analyze_quantization_info`` (ellipses padded with the unused letters).

Example:
    >>> axes = quantization_axes("abc,cde->abde", 3)
    >>> axes.kernel_reduced, axes.input_reduced, kernel_scale_shape((4, 2, 5), axes)
    ([0], [2], [1, 1, 2, 5])
"""

from __future__ import annotations

import dataclasses
import re
import string
from typing import Any

import numpy as np

from ember import ops


@dataclasses.dataclass(frozen=True)
class QuantizationAxes:
    """The axes Keras's int8 EinsumDense reduces, transposes, expands and squeezes."""

    input_reduced: list
    kernel_reduced: list
    input_transpose: list
    kernel_transpose: list
    input_expand: list
    kernel_expand: list
    input_squeeze: list
    kernel_squeeze: list


def _specs(equation: str, input_rank: int) -> tuple[str, str, str]:
    """``(input, kernel, output)`` letters with an ellipsis replaced by unused letters (Keras's padding)."""
    replaced = equation.replace(" ", "").replace("...", "0")
    plain = re.match(r"^([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)$", replaced)
    if plain is not None:
        return plain.group(1), plain.group(2), plain.group(3)
    left = re.match(r"^0([a-zA-Z]+),([a-zA-Z]+)->0([a-zA-Z]+)$", replaced)
    right = re.match(r"^([a-zA-Z]{2,})0,([a-zA-Z]+)->([a-zA-Z]+)0$", replaced)
    found = left or right
    if found is None:
        raise ValueError(f"EinsumDense: cannot quantize equation {equation!r} (expected [X],[Y]->[Z], "
                         f"...[X],[Y]->...[Z] or [X]...,[Y]->[Z]...)")
    inputs, kernel, outputs = found.groups()
    spare = sorted(set(string.ascii_letters) - set(inputs) - set(kernel) - set(outputs))
    padding = "".join(spare[: input_rank - len(inputs)])
    if left is not None:
        return padding[::-1] + inputs, kernel, padding[::-1] + outputs
    return inputs + padding, kernel, outputs + padding


def quantization_axes(equation: str, input_rank: int) -> QuantizationAxes:
    """Keras's quantization layout of ``equation`` for inputs of rank ``input_rank``.

    Each operand's reduced axes are its letters missing from the output; its scales (kept as size-1
    dims) are transposed to the output's letter order, given size-1 dims for the output letters it
    lacks (a reduced axis takes the place of one of those, in order) and squeezed where none is left.
    """
    inputs, kernel, outputs = _specs(equation, input_rank)
    reduced = {name: [i for i, c in enumerate(spec) if c not in outputs] for name, spec in
               (("input", inputs), ("kernel", kernel))}
    expand = {name: [i for i, c in enumerate(outputs) if c not in spec] for name, spec in
              (("input", inputs), ("kernel", kernel))}
    transpose = {name: [spec.index(c) for c in outputs if c in spec] for name, spec in
                 (("input", inputs), ("kernel", kernel))}
    squeeze: dict[str, list] = {"input": [], "kernel": []}
    # Keras places each reduced axis at the next free expanded position; when none is left it squeezes
    # the axis and inserts it where the previous position pointed (its loop variable carries over).
    position = outputs.find(kernel[-1]) if kernel else 0
    for name in ("input", "kernel"):
        for original in reduced[name]:
            if expand[name]:
                position = expand[name].pop(0)
            else:
                squeeze[name].append(original)
            transpose[name].insert(position, original)
    return QuantizationAxes(reduced["input"], reduced["kernel"], transpose["input"], transpose["kernel"],
                            expand["input"], expand["kernel"], squeeze["input"], squeeze["kernel"])


def kernel_scale_shape(kernel_shape: tuple, axes: QuantizationAxes) -> list:
    """The stored ``kernel_scale`` shape for a kernel of ``kernel_shape`` (Keras's ``_get_kernel_scale_shape``)."""
    shape = np.array(kernel_shape)
    shape[axes.kernel_reduced] = 1
    layout = shape[axes.kernel_transpose].tolist()
    for axis in sorted(axes.kernel_expand):
        layout.insert(axis, 1)
    for axis in sorted(axes.kernel_squeeze, reverse=True):
        layout.pop(axis)
    return [int(d) for d in layout]


def to_output_layout(scale: Any, axes: QuantizationAxes, operand: str) -> Any:
    """A scale with the operand's reduced dims kept (size 1), in the output's layout (Keras's
    ``_adjust_scale_for_quant``)."""
    transpose = axes.kernel_transpose if operand == "kernel" else axes.input_transpose
    expand = axes.kernel_expand if operand == "kernel" else axes.input_expand
    squeeze = axes.kernel_squeeze if operand == "kernel" else axes.input_squeeze
    if transpose:
        scale = ops.transpose(scale, transpose)
    for axis in sorted(expand):
        scale = ops.expand_dims(scale, axis)
    if squeeze:
        scale = ops.squeeze(scale, axis=tuple(squeeze))
    return scale


def to_kernel_layout(scale: Any, axes: QuantizationAxes) -> Any:
    """The stored kernel scale back in the kernel's layout, broadcastable with it (Keras's
    ``_adjust_scale_for_dequant``)."""
    for axis in sorted(axes.kernel_squeeze):
        scale = ops.expand_dims(scale, axis)
    if axes.kernel_expand:
        scale = ops.squeeze(scale, axis=tuple(axes.kernel_expand))
    if axes.kernel_transpose:
        reverse = sorted(range(len(axes.kernel_transpose)), key=axes.kernel_transpose.__getitem__)
        scale = ops.transpose(scale, reverse)
    return scale
