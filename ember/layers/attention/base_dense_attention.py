"""``BaseDenseAttention``: what Luong (``Attention``) and Bahdanau (``AdditiveAttention``) share.

Subclasses compute the raw ``(batch, Tq, Tv)`` scores from query and key
(:meth:`_calculate_scores`); this base validates inputs and masks, applies the value
and causal masks with a stable masked softmax, drops attention weights while training,
takes the weighted sum of the values, and zeroes the output where the query is masked.
"""

from __future__ import annotations

from typing import Any

from ember import ops
from ember.layers.attention._common import (
    as_bool_mask,
    causal_mask,
    combine_masks,
    dropout_weights,
    masked_softmax,
)
from ember.layers.layer import DeclarativeLayer
from ember.symbolic import is_shape
from ember.validation import check_bool


class BaseDenseAttention(DeclarativeLayer):
    """Base of the dense (non-projected) attention layers; not used directly.

    Inputs are ``[query, value]`` or ``[query, value, key]`` with shapes
    ``(batch, Tq, dim)``, ``(batch, Tv, value_dim)``, ``(batch, Tv, dim)``; the key
    defaults to the value. Subclasses declare ``dropout`` and ``seed`` fields.
    """

    supports_masking = True

    # --- inputs ----------------------------------------------------------------------
    def _input_error(self, received: str) -> ValueError:
        return ValueError(
            f"layer {self.name!r} ({type(self).__name__}) must be called on a list of 2 or 3 inputs, "
            f"[query, value] or [query, value, key], received {received}"
        )

    def _split_shapes(self, input_shape: Any) -> tuple[tuple, tuple, tuple]:
        if not isinstance(input_shape, (list, tuple)) or is_shape(tuple(input_shape)):
            raise self._input_error(f"shape {input_shape}")
        shapes = [tuple(s) for s in input_shape]
        if not 2 <= len(shapes) <= 3 or not all(is_shape(s) for s in shapes):
            raise self._input_error(f"shapes {input_shape}")
        query, value = shapes[0], shapes[1]
        key = shapes[2] if len(shapes) == 3 else value
        for label, shape in (("query", query), ("value", value), ("key", key)):
            if len(shape) != 3:
                raise ValueError(
                    f"layer {self.name!r}: {label} must have shape (batch, time, features), received {shape}"
                )
        if query[-1] is None or key[-1] is None:
            raise ValueError(f"layer {self.name!r}: query and key need known feature sizes, received {query} and {key}")
        if query[-1] != key[-1]:
            raise ValueError(
                f"layer {self.name!r}: query and key must have the same feature size, received query shape "
                f"{query} and key shape {key}"
            )
        if value[1] is not None and key[1] is not None and value[1] != key[1]:
            raise ValueError(
                f"layer {self.name!r}: value and key must have the same number of time steps, received "
                f"value shape {value} and key shape {key}"
            )
        batches = {s[0] for s in (query, value, key) if s[0] is not None}
        if len(batches) > 1:
            raise ValueError(f"layer {self.name!r}: inputs have different batch sizes: {query}, {value}, {key}")
        return query, value, key

    def _split_mask(self, mask: Any) -> tuple[Any, Any, Any]:
        if mask is None:
            return None, None, None
        if not isinstance(mask, (list, tuple)) or not 2 <= len(mask) <= 3:
            raise ValueError(
                f"layer {self.name!r}: mask must be a list [query_mask, value_mask] (or with a key_mask "
                f"third), entries may be None; received {type(mask).__name__}"
                + (f" of length {len(mask)}" if isinstance(mask, (list, tuple)) else "")
            )
        masks = list(mask) + [None] * (3 - len(mask))
        return masks[0], masks[1], masks[2]

    # --- shapes --------------------------------------------------------------------------
    def compute_output_shape(self, input_shape: Any, return_attention_scores: bool = False, mask: Any = None) -> Any:
        query, value, _ = self._split_shapes(input_shape)
        if mask is not None:
            q_mask, v_mask, k_mask = self._split_mask(mask)
            for label, given, expected in (("query_mask", q_mask, query[:2]), ("value_mask", v_mask, value[:2]),
                                           ("key_mask", k_mask, value[:2])):
                if given is not None and (len(tuple(given)) != 2 or any(
                        g is not None and e is not None and g != e for g, e in zip(tuple(given), expected))):
                    raise ValueError(f"layer {self.name!r}: {label} must have shape {expected}, "
                                     f"received {tuple(given)}")
        output = (query[0], query[1], value[-1])
        if return_attention_scores:
            return output, (query[0], query[1], value[1])
        return output

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The query's mask (the output has the query's time steps), or None."""
        query_mask, _, _ = self._split_mask(mask)
        return query_mask

    # --- computation ---------------------------------------------------------------------
    def _calculate_scores(self, params: dict, query: Any, key: Any) -> Any:
        """Raw scores ``(batch, Tq, Tv)``."""
        raise NotImplementedError

    def apply(
        self,
        state: dict,
        inputs: Any,
        *,
        training: bool = False,
        rng: Any = None,
        mask: Any = None,
        return_attention_scores: bool = False,
        use_causal_mask: bool = False,
    ) -> tuple[Any, dict]:
        """``(output, state)``; the output is ``(attention_output, weights)`` with
        ``return_attention_scores=True``.

        Args:
            state: the layer's state.
            inputs: ``[query, value]`` or ``[query, value, key]``.
            training: apply dropout to the attention weights.
            rng: int seed of the dropout (else the layer's ``seed``).
            mask: ``[query_mask, value_mask]`` (optionally a third, ``key_mask``, ANDed
                with the value mask), boolean ``(batch, Tq)`` / ``(batch, Tv)``; entries
                may be None. A False value position gets no weight; a False query
                position gives a zero output row.
            return_attention_scores: also return the attention weights ``(batch, Tq, Tv)``.
            use_causal_mask: query position ``i`` attends only to value positions ``j <= i``.
        """
        check_bool(f"layer {self.name!r}", "return_attention_scores", return_attention_scores)
        check_bool(f"layer {self.name!r}", "use_causal_mask", use_causal_mask)
        if not isinstance(inputs, (list, tuple)) or ops.is_array(inputs):
            raise self._input_error(type(inputs).__name__)
        if not 2 <= len(inputs) <= 3:
            raise self._input_error(f"{len(inputs)} inputs")
        query, value = inputs[0], inputs[1]
        key = inputs[2] if len(inputs) == 3 else value
        q_shape, v_shape, _ = self._split_shapes([tuple(ops.shape(t)) for t in (query, value, key)])
        q_mask, v_mask, k_mask = self._split_mask(mask)
        if q_mask is not None:
            q_mask = as_bool_mask(self.name, "query_mask", q_mask, q_shape[:2])
        if v_mask is not None:
            v_mask = as_bool_mask(self.name, "value_mask", v_mask, v_shape[:2])
        if k_mask is not None:
            k_mask = as_bool_mask(self.name, "key_mask", k_mask, v_shape[:2])

        scores = self._calculate_scores(state["params"], query, key)
        # Value/key masks: (batch, 1, Tv); the causal mask: (1, Tq, Tv).
        v_mask = combine_masks(v_mask, k_mask)
        scores_mask = combine_masks(
            None if v_mask is None else ops.expand_dims(v_mask, 1),
            ops.expand_dims(causal_mask(q_shape[1], v_shape[1]), 0) if use_causal_mask else None,
        )
        weights = masked_softmax(scores, scores_mask)
        weights = dropout_weights(self, weights, training, rng)
        output = ops.matmul(weights, value)
        if q_mask is not None:
            output = ops.multiply(output, ops.cast(ops.expand_dims(q_mask, -1), ops.dtype(output)))
        return ((output, weights) if return_attention_scores else output), state
