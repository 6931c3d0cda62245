"""``MultiHeadAttention``: scaled dot-product attention over ``num_heads`` learned projections.

The variables use Keras's layout, so weights move between Keras and Ember unchanged::

    query/kernel (query_dim, num_heads, key_dim)    query/bias (num_heads, key_dim)
    key/kernel   (key_dim_in, num_heads, key_dim)   key/bias   (num_heads, key_dim)
    value/kernel (value_dim_in, num_heads, value_dim)  value/bias (num_heads, value_dim)
    attention_output/kernel (num_heads, value_dim, *output_shape)
    attention_output/bias   (*output_shape,)

A ``(dim, num_heads, head_dim)`` kernel reshaped to ``(dim, num_heads * head_dim)`` is
the transposed weight of a plain linear map whose output splits into heads in order
(head ``n`` owns columns ``n * head_dim .. (n + 1) * head_dim - 1``), which is how the
projections are computed: one matmul each.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from ember import initializers, ops
from ember.layers.attention._common import as_bool_mask, causal_mask, combine_masks
from ember.layers.attention._fused import attend_unfused, project_heads, project_self_attention, use_fused_kernel
from ember.layers.layer import DeclarativeLayer
from ember.seeds import check_seed, sub_seed
from ember.symbolic import is_shape
from ember.validation import check_bool, check_positive_int, check_rate


class MultiHeadAttention(DeclarativeLayer):
    """Multi-head attention (Vaswani et al., 2017), as ``keras.layers.MultiHeadAttention``.

    ``query`` ``(batch, T, query_dim)``, ``value`` ``(batch, S, value_dim_in)`` and
    ``key`` ``(batch, S, key_dim_in)`` (the value when omitted) are projected to
    ``num_heads`` heads; each head computes
    ``softmax(q k^T / sqrt(key_dim), masked) v``; the heads are concatenated and
    projected to ``output_shape`` (default: ``query_dim``). Inputs with several
    sequence axes (``(batch, H, W, dim)``) attend over all of them jointly.

    Args:
        num_heads: number of attention heads.
        key_dim: size of each head for query and key.
        value_dim: size of each head for value (default ``key_dim``).
        dropout: fraction of the attention probabilities dropped while training.
        use_bias: the projections have biases.
        output_shape: int or tuple, the trailing output shape (default: the query's
            last dimension).
        attention_axes: only ``None`` (every axis between the batch and the feature
            axis, Keras's default) or axes equal to it; other axes raise
            ``NotImplementedError``.
        flash_attention: None (default): the fused kernel (``ops.nn.dot_product_attention``:
            torch's ``scaled_dot_product_attention``, MLX's ``mx.fast`` one) wherever it
            applies, i.e. unless ``return_attention_scores=True`` or attention dropout is
            active while training (the fused kernels cannot take Ember's dropout seed);
            False: always the composite (scores, softmax, dropout, matmul); True: as None,
            and ``return_attention_scores=True`` is an error (Keras's rule).
        kernel_initializer: for the four kernels (a different seed each).
        bias_initializer: for the four biases.
        seed: dropout seed used when ``apply`` receives no ``rng``.

    Call arguments (``apply`` keywords, or keywords of a symbolic call
    ``mha(query, value, attention_mask=mask)``):
        attention_mask: boolean ``(batch, T, S)`` (broadcastable), True where a query
            position may attend to a key position.
        query_mask, value_mask, key_mask: boolean ``(batch, T)`` / ``(batch, S)``
            padding masks, combined with ``attention_mask`` by logical AND. In a model
            they default to the masks the inputs carry (``Embedding(mask_zero=True)``),
            passed by the model as ``mask=[query_mask, value_mask(, key_mask)]``.
        use_causal_mask: position ``i`` attends only to positions ``j <= i``.
        return_attention_scores: also return the attention probabilities
            ``(batch, num_heads, T, S)`` (before dropout, as in Keras).

    A row whose every position is masked gets uniform probabilities (masked scores are
    filled with ``-1e9``, not ``-inf``, as in Keras), never NaN.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> mha = layers.MultiHeadAttention(num_heads=2, key_dim=3, name="mha")
        >>> state = mha.build([(None, 5, 4), (None, 6, 4)], seed=0)
        >>> ops.shape(state["params"]["query"]["kernel"]), ops.shape(state["params"]["attention_output"]["kernel"])
        ((4, 2, 3), (2, 3, 4))
        >>> query, value = ops.ones((1, 5, 4)), ops.ones((1, 6, 4))
        >>> (out, scores), _ = mha.apply(state, [query, value], return_attention_scores=True)
        >>> ops.shape(out), ops.shape(scores)
        ((1, 5, 4), (1, 2, 5, 6))
        >>> q = ember.Input((5, 4))
        >>> ember.Model(q, mha(q, q, use_causal_mask=True)).compute_output_shape()
        (None, 5, 4)
    """

    num_heads: int
    key_dim: int
    value_dim: int | None = None
    dropout: float = 0.0
    use_bias: bool = True
    output_shape: Any = None
    attention_axes: Any = None
    flash_attention: bool | None = None
    kernel_initializer: Any = "glorot_uniform"
    bias_initializer: Any = "zeros"
    seed: int | None = None

    supports_masking = True

    def __post_init__(self) -> None:
        super().__post_init__()
        name = self.name
        self._normalize("num_heads", check_positive_int(name, "num_heads", self.num_heads))
        self._normalize("key_dim", check_positive_int(name, "key_dim", self.key_dim))
        if self.value_dim is not None:
            self._normalize("value_dim", check_positive_int(name, "value_dim", self.value_dim))
        self._normalize("dropout", check_rate(name, "dropout", self.dropout))
        check_bool(name, "use_bias", self.use_bias)
        if self.output_shape is not None:
            shape = (self.output_shape,) if isinstance(self.output_shape, numbers.Integral) else self.output_shape
            try:
                shape = tuple(check_positive_int(name, "output_shape entries", d) for d in shape)
            except TypeError:
                raise TypeError(f"{name}: output_shape must be an int or a tuple of ints, "
                                f"received {self.output_shape!r}") from None
            if not shape:
                raise ValueError(f"{name}: output_shape must not be empty, received {self.output_shape!r}")
            self._normalize("output_shape", shape)
        if self.attention_axes is not None:
            axes = (self.attention_axes,) if isinstance(self.attention_axes, numbers.Integral) else self.attention_axes
            try:
                axes = tuple(axes)
            except TypeError:
                raise TypeError(f"{name}: attention_axes must be None, an int or a tuple of ints, "
                                f"received {self.attention_axes!r}") from None
            if not axes or any(isinstance(a, bool) or not isinstance(a, numbers.Integral) for a in axes):
                raise TypeError(f"{name}: attention_axes must be None, an int or a tuple of ints, "
                                f"received {self.attention_axes!r}")
            self._normalize("attention_axes", tuple(int(a) for a in axes))
        if self.flash_attention is not None:
            check_bool(name, "flash_attention", self.flash_attention)
        self._normalize("kernel_initializer", initializers.get(self.kernel_initializer))
        self._normalize("bias_initializer", initializers.get(self.bias_initializer))
        self._normalize("seed", check_seed(self.seed, f"{name}: seed"))

    @property
    def head_value_dim(self) -> int:
        """Size of each value head (``value_dim``, or ``key_dim`` when it is None)."""
        return self.key_dim if self.value_dim is None else self.value_dim

    # --- shapes --------------------------------------------------------------------------
    def _check_attention_axes(self, rank: int) -> None:
        if self.attention_axes is None:
            return
        default = tuple(range(1, rank - 1))
        # Keras's convention: a negative axis counts from the query's end (-2 is the last sequence axis).
        axes = tuple(sorted(a + rank if a < 0 else a for a in self.attention_axes))
        if axes != default:
            raise NotImplementedError(
                f"layer {self.name!r} (MultiHeadAttention): attention_axes={self.attention_axes} is not "
                f"supported for inputs of rank {rank}; Ember attends over every axis between the batch and "
                f"the feature axis (attention_axes=None, here {default}). To attend over fewer axes, move the "
                f"other axes into the batch (Reshape/Permute) before the layer"
            )

    def _split_shapes(self, input_shape: Any) -> tuple[tuple, tuple, tuple]:
        if not isinstance(input_shape, (list, tuple)) or is_shape(tuple(input_shape)):
            raise ValueError(
                f"layer {self.name!r} (MultiHeadAttention) takes [query, value] or [query, value, key] "
                f"(mha(query, value) in a model), received shape {input_shape}"
            )
        shapes = [tuple(s) for s in input_shape]
        if not 2 <= len(shapes) <= 3 or not all(is_shape(s) for s in shapes):
            raise ValueError(
                f"layer {self.name!r} (MultiHeadAttention) takes [query, value] or [query, value, key], "
                f"received shapes {input_shape}"
            )
        query, value = shapes[0], shapes[1]
        key = shapes[2] if len(shapes) == 3 else value
        if len(query) < 3:
            raise ValueError(
                f"layer {self.name!r}: query must have shape (batch, time, features), received {query}"
            )
        for label, shape in (("value", value), ("key", key)):
            if len(shape) != len(query):
                raise ValueError(
                    f"layer {self.name!r}: {label} must have the query's rank {len(query)}, received "
                    f"query shape {query} and {label} shape {shape}"
                )
        if any(a is not None and b is not None and a != b for a, b in zip(value[1:-1], key[1:-1])):
            raise ValueError(
                f"layer {self.name!r}: all dimensions of value and key except the last must be equal, "
                f"received value shape {value} and key shape {key}"
            )
        batches = [s[0] for s in (query, value, key) if s[0] is not None]
        if any(b != batches[0] for b in batches):  # compared, not hashed: a traced size is not hashable
            raise ValueError(f"layer {self.name!r}: inputs have different batch sizes: {query}, {value}, {key}")
        self._check_attention_axes(len(query))
        return query, value, key

    def _output_dims(self, query: tuple) -> tuple:
        if self.output_shape is not None:
            return self.output_shape
        if query[-1] is None:
            raise ValueError(f"layer {self.name!r}: the query needs a known last dimension, received {query}")
        return (query[-1],)

    def _check_attention_mask_shape(self: Any, mask_shape: tuple, query: tuple, value: tuple) -> None:
        full = (query[0],) + tuple(query[1:-1]) + tuple(value[1:-1])
        if len(mask_shape) != len(full) or any(
            m is not None and f is not None and m != 1 and m != f for m, f in zip(mask_shape, full)
        ):
            raise ValueError(
                f"layer {self.name!r}: attention_mask must have shape (batch, T..., S...) = {full} "
                f"(size-1 axes broadcast), received shape {tuple(mask_shape)}"
            )

    def compute_output_shape(self, input_shape: Any, return_attention_scores: bool = False,
                             attention_mask: Any = None) -> Any:
        query, value, _ = self._split_shapes(input_shape)
        if attention_mask is not None:
            self._check_attention_mask_shape(tuple(attention_mask), query, value)
        output = tuple(query[:-1]) + tuple(self._output_dims(query))
        if return_attention_scores:
            return output, (query[0], self.num_heads) + tuple(query[1:-1]) + tuple(value[1:-1])
        return output

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The query's mask (the output keeps the query's positions), or None."""
        if isinstance(mask, (list, tuple)):
            return mask[0] if mask else None
        return mask

    # --- variables -----------------------------------------------------------------------
    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        query, value, key = self._split_shapes(input_shape)
        for label, shape in (("query", query), ("value", value), ("key", key)):
            if shape[-1] is None:
                raise ValueError(f"layer {self.name!r}: {label} needs a known last dimension, received {shape}")
        heads, dtype = self.num_heads, self.variable_dtype
        out_dims = self._output_dims(query)

        def init(initializer: Any, shape: tuple, *path: str) -> Any:
            return initializer(shape, dtype, sub_seed(seed, *path))

        params = {}
        for name, dim, head_dim in (("query", query[-1], self.key_dim), ("key", key[-1], self.key_dim),
                                    ("value", value[-1], self.head_value_dim)):
            params[name] = {"kernel": init(self.kernel_initializer, (dim, heads, head_dim), name, "kernel")}
            if self.use_bias:
                params[name]["bias"] = init(self.bias_initializer, (heads, head_dim), name, "bias")
        params["attention_output"] = {
            "kernel": init(self.kernel_initializer, (heads, self.head_value_dim) + out_dims,
                           "attention_output", "kernel")}
        if self.use_bias:
            params["attention_output"]["bias"] = init(self.bias_initializer, out_dims, "attention_output", "bias")
        return self.make_state(params=params)

    # --- computation ---------------------------------------------------------------------
    def _project(self, params: dict, x: Any, batch: int, length: int, head_dim: int) -> Any:
        """``x`` ``(batch, *positions, dim)`` -> heads ``(batch, length, num_heads, head_dim)``."""
        return project_heads(params, x, batch, length, ops.shape(params["kernel"])[1], head_dim, self.use_bias)

    def _check_params(self, params: dict, query: tuple, value: tuple, key: tuple) -> None:
        for label, shape in (("query", query), ("value", value), ("key", key)):
            expected = ops.shape(params[label]["kernel"])[0]
            if shape[-1] != expected:
                raise ValueError(
                    f"layer {self.name!r}: {label} must have last dimension {expected} (as built), "
                    f"received shape {shape}"
                )

    def _attention_mask(self: Any, query: tuple, value: tuple, key: tuple, attention_mask: Any, query_mask: Any,
                        value_mask: Any, key_mask: Any, use_causal_mask: bool, build_causal: bool = True) -> Any:
        """The combined boolean mask, broadcastable to ``(batch, T, S)`` (T, S flattened), or None.

        With ``build_causal=False`` the causal mask is left out (the fused kernel takes ``is_causal``).
        """
        batch, t_dims, s_dims = query[0], tuple(query[1:-1]), tuple(value[1:-1])
        length, memory = math.prod(t_dims), math.prod(s_dims)
        masks = []
        if attention_mask is not None:
            is_ember_tensor = getattr(type(attention_mask), "__ember_tensor__", False)
            given = attention_mask._native if is_ember_tensor else attention_mask
            if not ops.is_array(given):
                given = ops.convert_to_tensor(given)
            self._check_attention_mask_shape(tuple(ops.shape(given)), query, value)
            full = (batch,) + t_dims + s_dims
            given = as_bool_mask(self.name, "attention_mask", ops.broadcast_to(given, full), full)
            masks.append(ops.reshape(given, (batch, length, memory)))
        if query_mask is not None:
            mask = as_bool_mask(self.name, "query_mask", query_mask, query[:-1])
            masks.append(ops.reshape(mask, (batch, length, 1)))
        if value_mask is not None:
            mask = as_bool_mask(self.name, "value_mask", value_mask, value[:-1])
            masks.append(ops.reshape(mask, (batch, 1, memory)))
        if key_mask is not None:
            mask = as_bool_mask(self.name, "key_mask", key_mask, key[:-1])
            masks.append(ops.reshape(mask, (batch, 1, memory)))
        if use_causal_mask:
            if len(t_dims) != 1:
                raise ValueError(
                    f"layer {self.name!r}: use_causal_mask needs inputs with one sequence axis "
                    f"(batch, time, features), received query shape {query}"
                )
            if build_causal:
                masks.append(ops.expand_dims(causal_mask(length, memory), 0))
        return combine_masks(*masks)

    def apply(
        self,
        state: dict,
        inputs: Any,
        *,
        training: bool = False,
        rng: Any = None,
        attention_mask: Any = None,
        query_mask: Any = None,
        value_mask: Any = None,
        key_mask: Any = None,
        use_causal_mask: bool = False,
        return_attention_scores: bool = False,
        mask: Any = None,
    ) -> tuple[Any, dict]:
        """``(output, state)``; the output is ``(attention_output, scores)`` with
        ``return_attention_scores=True``. ``inputs`` is ``[query, value]`` or
        ``[query, value, key]``; the keywords are described in the class docstring.

        ``mask`` is the inputs' masks ``[query_mask, value_mask(, key_mask)]`` as a model
        propagates them (Keras's implicit masks, e.g. from ``Embedding(mask_zero=True)``);
        the explicit ``query_mask=``/``value_mask=``/``key_mask=`` take precedence.
        """
        check_bool(f"layer {self.name!r}", "use_causal_mask", use_causal_mask)
        check_bool(f"layer {self.name!r}", "return_attention_scores", return_attention_scores)
        if not isinstance(inputs, (list, tuple)) or ops.is_array(inputs) or not 2 <= len(inputs) <= 3:
            received = f"{len(inputs)} inputs" if isinstance(inputs, (list, tuple)) else type(inputs).__name__
            raise ValueError(
                f"layer {self.name!r} (MultiHeadAttention) takes [query, value] or [query, value, key], "
                f"received {received}"
            )
        query, value = inputs[0], inputs[1]
        key = inputs[2] if len(inputs) == 3 else value
        if mask is not None:
            if not isinstance(mask, (list, tuple)) or ops.is_array(mask) or len(mask) != len(inputs):
                raise ValueError(
                    f"layer {self.name!r}: mask must be a list with one entry (or None) per input, "
                    f"[query_mask, value_mask(, key_mask)], received {type(mask).__name__}"
                )
            query_mask = mask[0] if query_mask is None else query_mask
            value_mask = mask[1] if value_mask is None else value_mask
            if len(mask) == 3 and key_mask is None:
                key_mask = mask[2]
        q_shape, v_shape, k_shape = self._split_shapes([tuple(ops.shape(t)) for t in (query, value, key)])
        params = state["params"]
        self._check_params(params, q_shape, v_shape, k_shape)
        fused = use_fused_kernel(self, return_attention_scores, training)
        mask = self._attention_mask(q_shape, v_shape, k_shape, attention_mask, query_mask, value_mask, key_mask,
                                    use_causal_mask, build_causal=not fused)

        batch, t_dims, s_dims = q_shape[0], tuple(q_shape[1:-1]), tuple(v_shape[1:-1])
        length, memory = math.prod(t_dims), math.prod(s_dims)
        head_value_dim = self.head_value_dim
        if query is value and key is value and head_value_dim == self.key_dim:  # self-attention: one GEMM
            q, k, v = project_self_attention(params, query, batch, length, (self.num_heads,) * 3, self.key_dim,
                                             self.use_bias)
        else:
            q = self._project(params["query"], query, batch, length, self.key_dim)      # (B, T, N, H)
            k = self._project(params["key"], key, batch, memory, self.key_dim)          # (B, S, N, H)
            v = self._project(params["value"], value, batch, memory, head_value_dim)    # (B, S, N, Hv)
        if fused:
            context = ops.nn.dot_product_attention(
                q, k, v, mask=None if mask is None else ops.expand_dims(mask, 1),
                scale=1.0 / math.sqrt(self.key_dim), is_causal=use_causal_mask)     # (B, T, N, Hv)
            probabilities = None
        else:
            context, probabilities = attend_unfused(self, q, k, v, mask, training, rng)
        context = ops.reshape(context, (batch, length, self.num_heads * head_value_dim))
        out_params = params["attention_output"]
        out_dims = tuple(ops.shape(out_params["kernel"])[2:])
        out_size = math.prod(out_dims)
        output = ops.nn.dense(context, ops.reshape(out_params["kernel"], (self.num_heads * head_value_dim, out_size)),
                              ops.reshape(out_params["bias"], (out_size,)) if self.use_bias else None)
        output = ops.reshape(output, (batch,) + t_dims + out_dims)
        if return_attention_scores:
            return (output, ops.reshape(probabilities, (batch, self.num_heads) + t_dims + s_dims)), state
        return output, state
