"""``Attention``: dot-product (Luong-style) attention over ``[query, value(, key)]``."""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.initializers import get as get_initializer
from ember.layers.attention.base_dense_attention import BaseDenseAttention
from ember.seeds import check_seed, sub_seed
from ember.validation import check_bool, check_rate

_SCORE_MODES = ("dot", "concat")


class Attention(BaseDenseAttention):
    """Dot-product attention layer, a.k.a. Luong-style attention.

    For ``query`` ``(batch, Tq, dim)``, ``value`` ``(batch, Tv, value_dim)`` and ``key``
    ``(batch, Tv, dim)`` (the value when omitted):

    * ``score_mode="dot"``: ``scores = query @ key^T`` (times ``scale`` with ``use_scale``);
    * ``score_mode="concat"``:
      ``scores = concat_score_weight * sum(tanh(scale * (query_i + key_j)), -1)``;

    then ``weights = softmax(scores)`` over ``Tv`` (masked positions excluded) and the
    output is ``weights @ value``, of shape ``(batch, Tq, value_dim)``.

    Args:
        use_scale: learn a scalar ``scale`` (initialised to 1) multiplying the scores.
        score_mode: ``"dot"`` or ``"concat"`` (the latter learns ``concat_score_weight``,
            initialised to 1).
        dropout: fraction of the attention weights dropped while training, in ``[0, 1)``.
        seed: dropout seed used when ``apply`` receives no ``rng``.

    Call arguments (``apply`` keywords, or keywords of a symbolic call):
        mask: ``[query_mask, value_mask]`` booleans ``(batch, Tq)``, ``(batch, Tv)``.
        return_attention_scores: also return the weights ``(batch, Tq, Tv)``
            (after masking, softmax and, while training, dropout, as in Keras).
        use_causal_mask: position ``i`` attends only to positions ``j <= i``.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> attention = layers.Attention(name="attention")
        >>> state = attention.build([(None, 2, 4), (None, 3, 4)])
        >>> query, value = ops.ones((1, 2, 4)), ops.ones((1, 3, 4))
        >>> out, state = attention.apply(state, [query, value])
        >>> ops.shape(out)
        (1, 2, 4)
        >>> (out, weights), _ = attention.apply(state, [query, value], return_attention_scores=True,
        ...                                     use_causal_mask=True)
        >>> ops.to_numpy(weights)[0].round(3).tolist()
        [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]
    """

    use_scale: bool = False
    score_mode: str = "dot"
    dropout: float = 0.0
    seed: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_bool(self.name, "use_scale", self.use_scale)
        if self.score_mode not in _SCORE_MODES:
            raise ValueError(f"{self.name}: score_mode must be one of {_SCORE_MODES}, received {self.score_mode!r}")
        self._normalize("dropout", check_rate(self.name, "dropout", self.dropout))
        self._normalize("seed", check_seed(self.seed, f"{self.name}: seed"))

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        self._split_shapes(input_shape)
        ones = get_initializer("ones")
        params = {}
        if self.use_scale:
            params["scale"] = ones((), self.variable_dtype, sub_seed(seed, "scale"))
        if self.score_mode == "concat":
            params["concat_score_weight"] = ones(
                (), self.variable_dtype, sub_seed(seed, "concat_score_weight"))
        return self.make_state(params=params)

    def _calculate_scores(self, params: dict, query: Any, key: Any) -> Any:
        scale = params.get("scale")
        if self.score_mode == "dot":
            scores = ops.matmul(query, ops.swapaxes(key, -1, -2))
            return scores if scale is None else ops.multiply(scores, scale)
        # concat: (batch, Tq, 1, dim) + (batch, 1, Tv, dim)
        pairs = ops.add(ops.expand_dims(query, -2), ops.expand_dims(key, -3))
        if scale is not None:
            pairs = ops.multiply(scale, pairs)
        return ops.multiply(params["concat_score_weight"], ops.sum(ops.tanh(pairs), axis=-1))
