"""``Embedding``: look up a dense vector for each integer index."""

from __future__ import annotations

from typing import Any, ClassVar

from ember import initializers, ops
from ember.layers.core._checks import input_shape_of
from ember.layers.core.dense_adaptation import QuantizeLoRAMixin
from ember.layers.layer import DeclarativeLayer
from ember.layers.loss_collection import add_loss
from ember.layers.weights import WeightSpec, resolve_options
from ember.validation import check_bool, check_positive_int, values_checked

_INTEGER_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _index_bounds(indices: Any) -> tuple[int, int] | None:
    """``(min, max)`` of concrete indices, or None when they cannot be read back (inside
    ``mx.compile`` or another transformation that traces instead of computing)."""
    try:
        low, high = ops.to_numpy(ops.min(indices)), ops.to_numpy(ops.max(indices))
    except (ValueError, RuntimeError):
        return None
    return int(low), int(high)


class Embedding(QuantizeLoRAMixin, DeclarativeLayer):
    """Turns integer indices into dense vectors: row ``i`` of an ``(input_dim, output_dim)`` table.

    Args:
        input_dim: vocabulary size: indices lie in ``[0, input_dim)``.
        output_dim: size of each vector.
        embeddings_initializer: initializer of the table; ``"uniform"`` (the
            default, as in Keras) is ``RandomUniform(-0.05, 0.05)``.
        embeddings_regularizer: penalty on the table (see :mod:`ember.regularizers`),
            declared in :meth:`weight_specs`.
        embeddings_constraint: projection of the table after each optimizer step
            (see :mod:`ember.constraints`), declared in :meth:`weight_specs`.
        mask_zero: index 0 is padding: :meth:`compute_mask` returns ``inputs != 0``.
        activity_regularizer: penalty on the output vectors, passed to ``add_loss``.
        lora_rank: enable LoRA with this rank when the layer is built (see :meth:`enable_lora`).
        lora_alpha: the LoRA update is scaled by ``lora_alpha / lora_rank`` (None: ``lora_rank``).
        quantization_config: the quantization config of a quantized layer (set by :meth:`quantize`).

    ``quantize("int8")`` (an int8 table, one scale per row: ``embeddings_scale``) and
    ``enable_lora(rank)`` (``lora_embeddings_a``/``_b``) follow Keras (see
    :mod:`ember.layers.core.dense_adaptation`).

    Inputs of any shape ``(batch, ...)`` give ``(batch, ..., output_dim)``. Float
    inputs are cast to ``int32``. Indices outside ``[0, input_dim)`` raise a
    ``ValueError`` whenever their values can be read, except inside ``fit``'s steps (which
    ``fit`` runs in :func:`ember.validation.unchecked_values`, having checked the indices of
    the model inputs that feed an Embedding before its steps: a read per step would stall a
    GPU and break a compiled step) and inside compiled/traced functions.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Embedding(10, 4)
        >>> state = layer.build((None, 3), seed=0)
        >>> ops.shape(state["params"]["embeddings"])
        (10, 4)
        >>> y, _ = layer.apply(state, ops.convert_to_tensor([[1, 2, 9]]))
        >>> ops.shape(y)
        (1, 3, 4)
    """

    input_dim: int
    output_dim: int
    embeddings_initializer: Any = "uniform"
    embeddings_regularizer: Any = None
    embeddings_constraint: Any = None
    mask_zero: bool = False
    activity_regularizer: Any = None
    lora_rank: int | None = None
    lora_alpha: Any = None
    quantization_config: Any = None

    _apply_ignores_rng: ClassVar[bool] = True  # QuantizeLoRAMixin.apply passes no rng on
    _adapted_weight: ClassVar[str] = "embeddings"
    _scale_axis: ClassVar[int] = -1  # one scale per row (Keras: input_dim is usually the larger axis)
    _keeps_quantization_config: ClassVar[bool] = False  # an int8 Embedding has no activation quantizer

    def __post_init__(self) -> None:
        super().__post_init__()  # QuantizeLoRAMixin's: lora_rank, lora_alpha, quantization_config
        for field in ("input_dim", "output_dim"):
            self._normalize(field, check_positive_int(self.name, field, getattr(self, field)))
        check_bool(self.name, "mask_zero", self.mask_zero)
        initializer = self.embeddings_initializer
        if isinstance(initializer, str) and initializer == "uniform":  # Keras's alias
            initializer = initializers.RandomUniform(-0.05, 0.05)
        self._normalize("embeddings_initializer", initializers.get(initializer))
        resolve_options(self, "embeddings_regularizer", "activity_regularizer", "embeddings_constraint")

    def weight_specs(self, input_shape: Any = None) -> list[WeightSpec]:
        """The ``(input_dim, output_dim)`` table."""
        if input_shape is not None:
            self.compute_output_shape(input_shape)
        return self._adapt_specs([WeightSpec("embeddings", (self.input_dim, self.output_dim),
                                             self.embeddings_initializer, self.embeddings_regularizer,
                                             self.embeddings_constraint)])

    def call(self, params: dict, inputs: Any) -> Any:
        return self._forward(params, inputs, False)

    def _forward(self, params: dict, inputs: Any, training: bool) -> Any:
        if ops.dtype(inputs) not in _INTEGER_DTYPES:
            if ops.dtype(inputs) == "bool" or "complex" in ops.dtype(inputs):
                raise TypeError(f"layer {self.name!r} expects integer indices, received dtype {ops.dtype(inputs)}")
            inputs = ops.cast(inputs, "int32")
        if ops.size(inputs) and values_checked():  # not in fit's steps: fit checked their inputs (input_check)
            bounds = _index_bounds(inputs)
            if bounds is not None and (bounds[0] < 0 or bounds[1] >= self.input_dim):
                raise ValueError(
                    f"layer {self.name!r}: indices must lie in [0, {self.input_dim}) (input_dim), received "
                    f"values in [{bounds[0]}, {bounds[1]}] in an input of shape {tuple(ops.shape(inputs))}"
                )
        if self.quantization_mode == "int8":
            scale = ops.take(params["embeddings_scale"], inputs, axis=0)
            outputs = ops.take(params["embeddings"], inputs, axis=0)
            outputs = ops.divide(ops.cast(outputs, ops.dtype(scale)), ops.expand_dims(scale, -1))
            if self.lora_enabled:
                a_name, b_name = self._lora_names()
                lora = ops.matmul(ops.take(params[a_name], inputs, axis=0), params[b_name])
                outputs = ops.add(outputs, ops.cast(ops.multiply(lora, self._lora_factor()), ops.dtype(outputs)))
        else:
            outputs = ops.take(self._float_weight(params), inputs, axis=0)
        if self.activity_regularizer is not None:
            add_loss(self.activity_regularizer(outputs))
        return outputs

    @property
    def supports_masking(self) -> bool:  # type: ignore[override]  # per instance; a class flag in Layer
        # Keras: an Embedding with mask_zero makes masks
        return self.mask_zero

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """``inputs != 0`` when ``mask_zero``, else None."""
        if not self.mask_zero:
            return None

        return ops.not_equal(inputs, 0)

    def output_dtype(self, input_dtype: str) -> str:
        """Symbolic outputs carry the table's dtype, not the indices' (used by graph building)."""
        return self.variable_dtype

    def compute_output_shape(self, input_shape: Any) -> tuple:
        return input_shape_of(self, input_shape) + (self.output_dim,)


Embedding._quantizable = Embedding
