"""``Merge``: the shared base of the element-wise merge layers (Add, Multiply, ...).

Inputs are a list of arrays. Shapes broadcast as in Keras: the batch dimensions must
agree, and the per-example shapes broadcast right-aligned (an input of lower rank gets
size-1 axes inserted just after the batch axis).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ember import ops
from ember.layers.layer import DeclarativeLayer
from ember.symbolic import is_shape


def broadcast_dims(a: int | None, b: int | None) -> int | None:
    """One broadcast dimension; raises ``ValueError`` (no message) when incompatible."""
    if a == 1:
        return b
    if b == 1:
        return a
    if a is None:
        return b  # a must be b (or 1) at run time; either way the result is b (None if b is)
    if b is None:
        return a
    if a != b:
        raise ValueError
    return a


class Merge(DeclarativeLayer):
    """Base class: subclasses name a binary op in ``_fold`` or implement ``_merge_function(inputs)``.

    The inputs are a list whose shapes broadcast by Keras's merge rules: equal batch sizes; the
    rest broadcast right-aligned (see the module docstring). Class attributes ``min_inputs`` /
    ``max_inputs`` fix how many inputs are allowed.
    """

    supports_masking = True
    min_inputs: ClassVar[int] = 1
    max_inputs: ClassVar[int | None] = None
    _fold: ClassVar[str] = ""  # ember.ops binary op that folds the inputs (Add: "add")

    # --- shapes -------------------------------------------------------------------------
    def _count_text(self) -> str:
        if self.max_inputs == self.min_inputs:
            return f"exactly {self.min_inputs}"
        return f"at least {self.min_inputs}"

    def _input_shapes(self, input_shape: Any) -> list[tuple]:
        """The list of input shapes; ValueError naming the layer when it is not one."""
        is_list_of_shapes = (
            isinstance(input_shape, (list, tuple)) and not is_shape(input_shape)
            and all(isinstance(s, (list, tuple)) and is_shape(tuple(s)) for s in input_shape)
        )
        if not is_list_of_shapes:
            raise ValueError(
                f"layer {self.name!r} ({type(self).__name__}) must be called on a list of "
                f"{self._count_text()} inputs, received shape {input_shape}"
            )
        shapes = [tuple(s) for s in input_shape]
        if len(shapes) < self.min_inputs or (self.max_inputs is not None and len(shapes) > self.max_inputs):
            raise ValueError(
                f"layer {self.name!r} ({type(self).__name__}) must be called on a list of "
                f"{self._count_text()} inputs, received {len(shapes)} with shapes {shapes}"
            )
        return shapes

    def _batch_size(self, shapes: list[tuple]) -> int | None:
        known = distinct_sizes(s[0] for s in shapes if s and s[0] is not None)
        if len(known) > 1:
            raise ValueError(
                f"layer {self.name!r} ({type(self).__name__}) cannot merge inputs with different batch "
                f"sizes; received shapes {shapes}"
            )
        return known[0] if known else None

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shapes = self._input_shapes(input_shape)
        if any(len(s) == 0 for s in shapes):
            raise ValueError(
                f"layer {self.name!r} ({type(self).__name__}) needs inputs with a batch axis "
                f"(rank >= 1), received shapes {shapes}"
            )
        batch = self._batch_size(shapes)
        rank = max(len(s) for s in shapes) - 1
        out: list[int | None] = [1] * rank
        for shape in shapes:
            dims = (1,) * (rank - (len(shape) - 1)) + tuple(shape[1:])
            try:
                out = [broadcast_dims(a, b) for a, b in zip(out, dims)]
            except ValueError:
                raise ValueError(
                    f"layer {self.name!r} ({type(self).__name__}) received inputs with incompatible "
                    f"shapes {shapes}: the shapes after the batch axis must broadcast"
                ) from None
        return (batch, *out)

    # --- computation -------------------------------------------------------------------
    def _merge_function(self, inputs: list) -> Any:
        """Fold the inputs pairwise with the ``ember.ops`` function named by ``_fold``."""
        combine = getattr(ops, self._fold)
        output = inputs[0]
        for x in inputs[1:]:
            output = combine(output, x)
        return output

    def call(self, params: dict, inputs: Any) -> Any:
        if not isinstance(inputs, (list, tuple)) or ops.is_array(inputs):
            raise ValueError(
                f"layer {self.name!r} ({type(self).__name__}) must be called on a list of "
                f"{self._count_text()} inputs, received {type(inputs).__name__}"
            )
        inputs = list(inputs)
        shapes = [tuple(ops.shape(x)) for x in inputs]
        first = shapes[0] if shapes else ()
        if not first or not self.min_inputs <= len(shapes) <= (self.max_inputs or len(shapes)) or any(
                shape != first for shape in shapes[1:]):
            self.compute_output_shape(shapes)  # validates; equal shapes of a valid count always merge
        rank = max(len(s) for s in shapes)
        # Keras's rule: a lower-rank input gets its missing axes right after the batch axis.
        for i, shape in enumerate(shapes):
            for _ in range(rank - len(shape)):
                inputs[i] = ops.expand_dims(inputs[i], 1)
        return self._merge_function(inputs)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The element-wise AND of the inputs' masks (None when no input has one)."""
        if mask is None:
            return None
        if not isinstance(mask, (list, tuple)) or len(mask) != len(inputs):
            raise ValueError(
                f"layer {self.name!r}: mask must be a list with one entry (or None) per input, received {mask!r}"
            )

        masks = [m for m in mask if m is not None]
        if not masks:
            return None
        out = masks[0]
        for m in masks[1:]:
            out = ops.logical_and(out, m)
        return out


def distinct_sizes(dims: Any) -> list:
    """The distinct sizes among ``dims``, compared with ``==``: a size traced by ``Model.export``
    (torch's symbolic ``SymInt``) is not hashable."""
    found: list = []
    for dim in dims:
        if all(dim != seen for seen in found):
            found.append(dim)
    return found
