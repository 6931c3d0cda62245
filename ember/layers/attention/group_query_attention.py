"""``GroupQueryAttention``: attention whose key/value heads are shared by groups of query heads.

Keras's ``keras.layers.GroupQueryAttention`` (alias ``GroupedQueryAttention``), with its
variable layout, so weights move between Keras and Ember unchanged::

    query/kernel (query_dim, num_query_heads, head_dim)        query/bias (num_query_heads, head_dim)
    key/kernel   (key_dim_in, num_key_value_heads, head_dim)   key/bias   (num_key_value_heads, head_dim)
    value/kernel (value_dim_in, num_key_value_heads, head_dim) value/bias (num_key_value_heads, head_dim)
    attention_output/kernel (num_query_heads, head_dim, query_dim)  attention_output/bias (query_dim,)

Query head ``n`` reads key/value head ``n // (num_query_heads // num_key_value_heads)`` (Keras's
``ops.repeat(key, num_repeats, axis=2)``). The fused kernels take the shared heads as they are
(torch's ``enable_gqa``, MLX's native grouped-query support): no repeated copies.
"""

from __future__ import annotations

import math
from typing import Any

from ember import initializers, ops
from ember.layers.attention._fused import attend_unfused, project_heads, project_self_attention, use_fused_kernel
from ember.layers.attention.multi_head_attention import MultiHeadAttention
from ember.layers.layer import DeclarativeLayer
from ember.seeds import check_seed, sub_seed
from ember.symbolic import is_shape
from ember.validation import check_bool, check_positive_int, check_rate


class GroupQueryAttention(DeclarativeLayer):
    """Grouped-query attention (Ainslie et al., 2023), as ``keras.layers.GroupQueryAttention``.

    ``num_query_heads`` query heads share ``num_key_value_heads`` key/value heads (a divisor):
    equal numbers give multi-head attention, one key/value head multi-query attention. Inputs
    ``query`` ``(batch, T, dim)``, ``value`` ``(batch, S, dim_v)``, ``key`` ``(batch, S, dim_k)``
    (the value when omitted); the output is ``(batch, T, dim)``.

    Args:
        head_dim: size of each attention head.
        num_query_heads: number of query heads.
        num_key_value_heads: number of key and value heads; divides ``num_query_heads``.
        dropout: fraction of the attention probabilities dropped while training.
        use_bias: the projections have biases.
        flash_attention: as for :class:`MultiHeadAttention` (None: the fused kernel where it applies).
        kernel_initializer: for the four kernels (a different seed each).
        bias_initializer: for the four biases.
        seed: dropout seed used when ``apply`` receives no ``rng``.

    Keras's ``sliding_window``, ``use_gate`` and the regularizer/constraint arguments are not
    offered. Call arguments as :class:`MultiHeadAttention`'s (``attention_mask``,
    ``query_mask``/``value_mask``/``key_mask``, ``use_causal_mask``, ``return_attention_scores``:
    ``(batch, num_query_heads, T, S)``).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> gqa = layers.GroupQueryAttention(head_dim=2, num_query_heads=4, num_key_value_heads=2)
        >>> state = gqa.build([(None, 5, 8), (None, 5, 8)], seed=0)
        >>> ops.shape(state["params"]["key"]["kernel"])
        (8, 2, 2)
        >>> x = ops.ones((1, 5, 8))
        >>> out, _ = gqa.apply(state, [x, x], use_causal_mask=True)
        >>> ops.shape(out)
        (1, 5, 8)
    """

    head_dim: int
    num_query_heads: int
    num_key_value_heads: int
    dropout: float = 0.0
    use_bias: bool = True
    flash_attention: bool | None = None
    kernel_initializer: Any = "glorot_uniform"
    bias_initializer: Any = "zeros"
    seed: int | None = None

    supports_masking = True

    # The mask rules are MultiHeadAttention's (one sequence axis here).
    _attention_mask = MultiHeadAttention._attention_mask
    _check_attention_mask_shape = MultiHeadAttention._check_attention_mask_shape
    compute_mask = MultiHeadAttention.compute_mask

    def __post_init__(self) -> None:
        super().__post_init__()
        name = self.name
        for field in ("head_dim", "num_query_heads", "num_key_value_heads"):
            self._normalize(field, check_positive_int(name, field, getattr(self, field)))
        if self.num_query_heads % self.num_key_value_heads:
            raise ValueError(
                f"layer {name!r}: num_query_heads must be a multiple of num_key_value_heads, received "
                f"num_query_heads={self.num_query_heads} and num_key_value_heads={self.num_key_value_heads}")
        self._normalize("dropout", check_rate(name, "dropout", self.dropout))
        check_bool(name, "use_bias", self.use_bias)
        if self.flash_attention is not None:
            check_bool(name, "flash_attention", self.flash_attention)
        self._normalize("kernel_initializer", initializers.get(self.kernel_initializer))
        self._normalize("bias_initializer", initializers.get(self.bias_initializer))
        self._normalize("seed", check_seed(self.seed, f"{name}: seed"))

    # --- shapes --------------------------------------------------------------------------
    def _split_shapes(self, input_shape: Any) -> tuple[tuple, tuple, tuple]:
        shapes = None
        if isinstance(input_shape, (list, tuple)) and not is_shape(tuple(input_shape)):
            shapes = [tuple(s) for s in input_shape]
        if shapes is None or not 2 <= len(shapes) <= 3 or not all(is_shape(s) and len(s) == 3 for s in shapes):
            raise ValueError(
                f"layer {self.name!r} (GroupQueryAttention) takes [query, value] or [query, value, key], each "
                f"(batch, length, features), received shapes {input_shape}")
        query, value = shapes[0], shapes[1]
        key = shapes[2] if len(shapes) == 3 else value
        if value[1] is not None and key[1] is not None and value[1] != key[1]:
            raise ValueError(f"layer {self.name!r}: value and key must have one length, received value shape "
                             f"{value} and key shape {key}")
        if len({s[0] for s in (query, value, key) if s[0] is not None}) > 1:
            raise ValueError(f"layer {self.name!r}: inputs have different batch sizes: {query}, {value}, {key}")
        return query, value, key

    def compute_output_shape(self, input_shape: Any, return_attention_scores: bool = False,
                             attention_mask: Any = None) -> Any:
        query, value, _ = self._split_shapes(input_shape)
        if attention_mask is not None:
            self._check_attention_mask_shape(tuple(attention_mask), query, value)
        if return_attention_scores:
            return query, (query[0], self.num_query_heads, query[1], value[1])
        return query

    # --- variables -----------------------------------------------------------------------
    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        query, value, key = self._split_shapes(input_shape)
        for label, shape in (("query", query), ("value", value), ("key", key)):
            if shape[-1] is None:
                raise ValueError(f"layer {self.name!r}: {label} needs a known last dimension, received {shape}")
        dtype, head_dim = self.variable_dtype, self.head_dim

        def init(initializer: Any, shape: tuple, *path: str) -> Any:
            return initializer(shape, dtype, sub_seed(seed, *path))

        params = {}
        for name, dim, heads in (("query", query[-1], self.num_query_heads), ("key", key[-1], self.num_key_value_heads),
                                 ("value", value[-1], self.num_key_value_heads)):
            params[name] = {"kernel": init(self.kernel_initializer, (dim, heads, head_dim), name, "kernel")}
            if self.use_bias:
                params[name]["bias"] = init(self.bias_initializer, (heads, head_dim), name, "bias")
        params["attention_output"] = {"kernel": init(
            self.kernel_initializer, (self.num_query_heads, head_dim, query[-1]), "attention_output", "kernel")}
        if self.use_bias:
            params["attention_output"]["bias"] = init(self.bias_initializer, (query[-1],), "attention_output", "bias")
        return self.make_state(params=params)

    # --- computation ---------------------------------------------------------------------
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
        ``return_attention_scores=True``. ``inputs`` is ``[query, value]`` or ``[query, value, key]``;
        ``mask`` the inputs' masks as a model propagates them (see :class:`MultiHeadAttention`)."""
        check_bool(f"layer {self.name!r}", "use_causal_mask", use_causal_mask)
        check_bool(f"layer {self.name!r}", "return_attention_scores", return_attention_scores)
        if not isinstance(inputs, (list, tuple)) or ops.is_array(inputs) or not 2 <= len(inputs) <= 3:
            raise ValueError(f"layer {self.name!r} (GroupQueryAttention) takes [query, value] or "
                             f"[query, value, key], received {type(inputs).__name__}")
        query, value = inputs[0], inputs[1]
        key = inputs[2] if len(inputs) == 3 else value
        if isinstance(mask, (list, tuple)) and len(mask) == len(inputs):
            query_mask = mask[0] if query_mask is None else query_mask
            value_mask = mask[1] if value_mask is None else value_mask
            key_mask = mask[2] if len(mask) == 3 and key_mask is None else key_mask
        elif mask is not None:
            raise ValueError(f"layer {self.name!r}: mask must be a list with one entry (or None) per input, "
                             f"[query_mask, value_mask(, key_mask)], received {type(mask).__name__}")
        q_shape, v_shape, k_shape = self._split_shapes([tuple(ops.shape(t)) for t in (query, value, key)])
        params = state["params"]
        for label, shape in (("query", q_shape), ("value", v_shape), ("key", k_shape)):
            expected = ops.shape(params[label]["kernel"])[0]
            if shape[-1] != expected:
                raise ValueError(f"layer {self.name!r}: {label} must have last dimension {expected} (as built), "
                                 f"received shape {shape}")
        fused = use_fused_kernel(self, return_attention_scores, training)
        combined = self._attention_mask(q_shape, v_shape, k_shape, attention_mask, query_mask, value_mask, key_mask,
                                        use_causal_mask, build_causal=not fused)
        batch, length, memory = q_shape[0], q_shape[1], v_shape[1]
        heads, kv_heads, head_dim = self.num_query_heads, self.num_key_value_heads, self.head_dim
        if query is value and key is value:  # self-attention: one GEMM
            q, k, v = project_self_attention(params, query, batch, length, (heads, kv_heads, kv_heads), head_dim,
                                             self.use_bias)
        else:
            q = project_heads(params["query"], query, batch, length, heads, head_dim, self.use_bias)
            k = project_heads(params["key"], key, batch, memory, kv_heads, head_dim, self.use_bias)
            v = project_heads(params["value"], value, batch, memory, kv_heads, head_dim, self.use_bias)
        scores = None
        if fused:
            context = ops.nn.dot_product_attention(
                q, k, v, mask=None if combined is None else ops.expand_dims(combined, 1),
                scale=1.0 / math.sqrt(head_dim), is_causal=use_causal_mask)
        else:
            context, scores = attend_unfused(self, q, k, v, combined, training, rng)
        out_params = params["attention_output"]
        dim = ops.shape(out_params["kernel"])[-1]
        output = ops.nn.dense(ops.reshape(context, (batch, length, heads * head_dim)),
                              ops.reshape(out_params["kernel"], (heads * head_dim, dim)),
                              out_params["bias"] if self.use_bias else None)
        if return_attention_scores:
            return (output, scores), state
        return output, state
