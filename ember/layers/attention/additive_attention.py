"""``AdditiveAttention``: Bahdanau-style attention over ``[query, value(, key)]``."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.initializers import get as get_initializer
from ember.layers.attention.base_dense_attention import BaseDenseAttention
from ember.seeds import check_seed, sub_seed
from ember.validation import check_bool, check_rate


class AdditiveAttention(BaseDenseAttention):
    """Additive attention layer, a.k.a. Bahdanau-style attention.

    For ``query`` ``(batch, Tq, dim)``, ``value`` ``(batch, Tv, value_dim)`` and ``key``
    ``(batch, Tv, dim)`` (the value when omitted)::

        scores[b, i, j] = sum_d scale[d] * tanh(query[b, i, d] + key[b, j, d])
        output = softmax(scores over j, masked) @ value      # (batch, Tq, value_dim)

    Args:
        use_scale: learn the ``(dim,)`` vector ``scale`` (Glorot-uniform initialised);
            without it the scale is 1.
        dropout: fraction of the attention weights dropped while training, in ``[0, 1)``.
        seed: dropout seed used when ``apply`` receives no ``rng``.

    Call arguments (``apply`` keywords, or keywords of a symbolic call):
        mask: ``[query_mask, value_mask]`` booleans ``(batch, Tq)``, ``(batch, Tv)``.
        return_attention_scores: also return the weights ``(batch, Tq, Tv)``.
        use_causal_mask: position ``i`` attends only to positions ``j <= i``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> attention = layers.AdditiveAttention(name="additive")
        >>> state = attention.build([(None, 2, 4), (None, 3, 4)], seed=0)
        >>> ops.shape(state["params"]["scale"])
        (4,)
        >>> out, _ = attention.apply(state, [ops.ones((1, 2, 4)), ops.ones((1, 3, 4))])
        >>> ops.shape(out)
        (1, 2, 4)
    """

    use_scale: bool = True
    dropout: float = 0.0
    seed: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_bool(self.name, "use_scale", self.use_scale)
        self._normalize("dropout", check_rate(self.name, "dropout", self.dropout))
        self._normalize("seed", check_seed(self.seed, f"{self.name}: seed"))

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        query, _, _ = self._split_shapes(input_shape)
        params = {}
        if self.use_scale:
            params["scale"] = get_initializer("glorot_uniform")(
                (query[-1],), self.variable_dtype, sub_seed(seed, "scale"))
        return self.make_state(params=params)

    def _calculate_scores(self, params: dict, query: Any, key: Any) -> Any:
        # (batch, Tq, 1, dim) + (batch, 1, Tv, dim) -> tanh -> weighted sum over dim.
        features = ops.tanh(ops.add(ops.expand_dims(query, -2), ops.expand_dims(key, -3)))
        if self.use_scale:
            return ops.matmul(features, params["scale"])
        return ops.sum(features, axis=-1)
