"""Attention (Luong) and AdditiveAttention (Bahdanau) against NumPy float64 formulas.

The references are the equations of the Keras documentation, written out here:

* dot: ``scores = scale * q @ k^T``;
* concat: ``scores = w * sum(tanh(scale * (q_i + k_j)), -1)``;
* additive: ``scores = sum(scale * tanh(q_i + k_j), -1)``;
* ``weights = softmax(scores)`` with masked positions filled with ``-1e9`` (value mask
  ``(B, 1, Tv)`` & causal mask ``(1, Tq, Tv)``), ``output = weights @ value``, zeroed
  where the query is masked.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import ember
from ember import backends, layers, ops
from tests.layers.layer_test import run_layer_test

RTOL = 1e-5
ATOL = 1e-6


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def dot_scores(params, q, k):
    return params.get("scale", 1.0) * np.einsum("bid,bjd->bij", q, k)


def concat_scores(params, q, k):
    pairs = q[:, :, None, :] + k[:, None, :, :]
    return params["concat_score_weight"] * np.tanh(params.get("scale", 1.0) * pairs).sum(-1)


def additive_scores(params, q, k):
    return (params.get("scale", np.ones(q.shape[-1])) * np.tanh(q[:, :, None, :] + k[:, None, :, :])).sum(-1)


def attention_reference(score_fn, params, xs, query_mask=None, value_mask=None, causal=False, return_scores=False):
    q, v = xs[0], xs[1]
    k = xs[2] if len(xs) == 3 else v
    scores = score_fn(params, q, k)
    allowed = np.ones(scores.shape, dtype=bool)
    if value_mask is not None:
        allowed &= value_mask[:, None, :]
    if causal:
        allowed &= np.tril(np.ones(scores.shape[1:], dtype=bool))[None]
    weights = _softmax(np.where(allowed, scores, -1e9))
    out = weights @ v
    if query_mask is not None:
        out = out * query_mask[:, :, None]
    return (out, weights) if return_scores else out


# --- Attention ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("use_scale", [False, True])
@pytest.mark.parametrize("with_key", [False, True])
def test_dot_attention(use_scale, with_key):
    shapes = [(2, 3, 4), (2, 5, 3), (2, 5, 4)] if with_key else [(2, 3, 4), (2, 5, 4)]
    run_layer_test(
        lambda: layers.Attention(use_scale=use_scale, name="attention"),
        shapes,
        reference=lambda p, xs: attention_reference(dot_scores, p, xs),
        expected_output_shape=(2, 3, shapes[1][-1]),
        expected_param_shapes={"scale": ()} if use_scale else {},
        supports_masking=True,
        random_init=False,  # the scale starts at 1, whatever the seed (as in Keras)
    )


@pytest.mark.parametrize("use_scale", [False, True])
def test_concat_attention(use_scale):
    run_layer_test(
        lambda: layers.Attention(use_scale=use_scale, score_mode="concat", name="attention"),
        [(2, 3, 4), (2, 5, 4), (2, 5, 4)],
        reference=lambda p, xs: attention_reference(concat_scores, p, xs),
        expected_param_shapes={"concat_score_weight": (), "scale": ()} if use_scale else {"concat_score_weight": ()},
        supports_masking=True,
        random_init=False,
    )


def _masks(seed=0):
    rng = np.random.default_rng(seed)
    value_mask = rng.random((2, 5)) < 0.6
    value_mask[:, 0] = True  # keep a visible position in every row (causal rows see position 0)
    query_mask = np.array([[True, False, True], [True, True, False]])
    return query_mask, value_mask


@pytest.mark.parametrize("causal", [False, True])
def test_attention_masks_and_scores(causal):
    query_mask, value_mask = _masks()
    run_layer_test(
        lambda: layers.Attention(use_scale=True, name="attention"),
        [(2, 3, 4), (2, 5, 4)],
        call_kwargs={"mask": [query_mask, value_mask], "use_causal_mask": causal, "return_attention_scores": True},
        reference=lambda p, xs: attention_reference(dot_scores, p, xs, query_mask, value_mask, causal, True),
        expected_output_shape=((2, 3, 4), (2, 3, 5)),
        supports_masking=True,
        random_init=False,
    )


def test_attention_key_mask_is_anded_with_value_mask():
    query_mask, value_mask = _masks(1)
    key_mask = np.ones((2, 5), dtype=bool)
    key_mask[:, 3] = False
    run_layer_test(
        lambda: layers.Attention(name="attention"),
        [(2, 3, 4), (2, 5, 4), (2, 5, 4)],
        call_kwargs={"mask": [None, value_mask, key_mask]},
        reference=lambda p, xs: attention_reference(dot_scores, p, xs, value_mask=value_mask & key_mask),
        supports_masking=True,
    )


def test_attention_dropout_on_weights(backend):
    # Keras returns the weights after dropout for Attention: each is 0 or w / (1 - rate),
    # and the output is exactly those weights applied to the values.
    layer = layers.Attention(dropout=0.5, name="attention")
    state = layer.build([(None, 3, 4), (None, 6, 4)])
    rng = np.random.default_rng(0)
    q, v = rng.normal(size=(2, 3, 4)).astype(np.float32), rng.normal(size=(2, 6, 4)).astype(np.float32)
    x = [ops.convert_to_tensor(q), ops.convert_to_tensor(v)]
    (out, weights), _ = layer.apply(state, x, training=True, rng=5, return_attention_scores=True)
    weights = ops.to_numpy(weights)
    expected = _softmax(np.einsum("bid,bjd->bij", q.astype(np.float64), v.astype(np.float64)))
    kept = weights != 0
    assert 0 < kept.mean() < 1
    np.testing.assert_allclose(weights[kept], expected[kept] / 0.5, rtol=RTOL)
    np.testing.assert_allclose(ops.to_numpy(out), weights.astype(np.float64) @ v, rtol=RTOL, atol=ATOL)
    again, _ = layer.apply(state, x, training=True, rng=5, return_attention_scores=True)
    np.testing.assert_array_equal(ops.to_numpy(again[1]), weights)
    inference, _ = layer.apply(state, x)
    np.testing.assert_allclose(ops.to_numpy(inference), expected @ v, rtol=RTOL, atol=ATOL)


def test_attention_dropout_through_run_layer_test():
    run_layer_test(lambda: layers.Attention(dropout=0.4, name="attention"), [(2, 3, 4), (2, 5, 4)],
                   reference=lambda p, xs: attention_reference(dot_scores, p, xs),
                   training_changes_output=True, supports_masking=True)


def test_fully_masked_value_rows_are_uniform(backend):
    layer = layers.Attention(name="attention")
    state = layer.build([(None, 2, 3), (None, 4, 3)])
    rng = np.random.default_rng(1)
    q, v = rng.normal(size=(2, 2, 3)).astype(np.float32), rng.normal(size=(2, 4, 3)).astype(np.float32)
    value_mask = np.array([[False] * 4, [True, False, True, True]])
    (out, weights), _ = layer.apply(state, [ops.convert_to_tensor(q), ops.convert_to_tensor(v)],
                                    mask=[None, ops.convert_to_tensor(value_mask)], return_attention_scores=True)
    np.testing.assert_allclose(ops.to_numpy(weights)[0], np.full((2, 4), 0.25), rtol=RTOL)
    assert np.all(ops.to_numpy(weights)[1][:, 1] == 0)
    assert np.all(np.isfinite(ops.to_numpy(out)))


# --- AdditiveAttention ------------------------------------------------------------------------------
@pytest.mark.parametrize("use_scale", [True, False])
def test_additive_attention(use_scale):
    run_layer_test(
        lambda: layers.AdditiveAttention(use_scale=use_scale, name="additive"),
        [(2, 3, 4), (2, 5, 3), (2, 5, 4)],
        reference=lambda p, xs: attention_reference(additive_scores, p, xs),
        expected_output_shape=(2, 3, 3),
        expected_param_shapes={"scale": (4,)} if use_scale else {},
        supports_masking=True,
    )


def test_additive_attention_masks_causal_and_scores():
    query_mask, value_mask = _masks(2)
    run_layer_test(
        lambda: layers.AdditiveAttention(name="additive"),
        [(2, 3, 4), (2, 5, 4)],
        call_kwargs={"mask": [query_mask, value_mask], "use_causal_mask": True, "return_attention_scores": True},
        reference=lambda p, xs: attention_reference(additive_scores, p, xs, query_mask, value_mask, True, True),
        expected_output_shape=((2, 3, 4), (2, 3, 5)),
        supports_masking=True,
    )


def test_additive_attention_dropout():
    run_layer_test(lambda: layers.AdditiveAttention(dropout=0.3, name="additive"), [(2, 3, 4), (2, 5, 4)],
                   reference=lambda p, xs: attention_reference(additive_scores, p, xs),
                   training_changes_output=True, supports_masking=True)


# --- models, masks, configs ------------------------------------------------------------------------
def test_functional_model_with_symbolic_masks_on_every_backend():
    rng = np.random.default_rng(4)
    q, v = rng.normal(size=(2, 3, 4)).astype(np.float32), rng.normal(size=(2, 5, 4)).astype(np.float32)
    query_mask, value_mask = _masks(3)
    first = None
    for name in backends.available():
        with ember.using_backend(name):
            query, value = ember.Input((3, 4), name="q"), ember.Input((5, 4), name="v")
            q_mask, v_mask = ember.Input((3,), dtype="bool", name="qm"), ember.Input((5,), dtype="bool", name="vm")
            luong = layers.Attention(use_scale=True, name="luong")([query, value], mask=[q_mask, v_mask])
            bahdanau, weights = layers.AdditiveAttention(name="bahdanau")(
                [query, value], mask=[None, v_mask], use_causal_mask=True, return_attention_scores=True)
            model = ember.Model([query, value, q_mask, v_mask], [luong, bahdanau, weights])
            state = model.build(seed=1)
            inputs = [ops.convert_to_tensor(a) for a in (q, v, query_mask, value_mask)]
            outputs = [ops.to_numpy(o) for o in model(inputs)]
            params = {k: {n: ops.to_numpy(a).astype(np.float64) for n, a in sub.items()}
                      for k, sub in state["params"].items()}
            xs = [q.astype(np.float64), v.astype(np.float64)]
            np.testing.assert_allclose(outputs[0], attention_reference(dot_scores, params["luong"], xs, query_mask,
                                                                       value_mask), rtol=RTOL, atol=ATOL)
            expected_out, expected_weights = attention_reference(additive_scores, params["bahdanau"], xs,
                                                                 value_mask=value_mask, causal=True,
                                                                 return_scores=True)
            np.testing.assert_allclose(outputs[1], expected_out, rtol=RTOL, atol=ATOL)
            np.testing.assert_allclose(outputs[2], expected_weights, rtol=RTOL, atol=ATOL)
            rebuilt = ember.Model.from_config(json.loads(json.dumps(model.get_config())))
            for got, want in zip(rebuilt.apply(state, inputs)[0], outputs):
                np.testing.assert_array_equal(ops.to_numpy(got), want)
        if first is None:
            first = (name, params, outputs)
            continue
        for layer_name in params:
            for var in params[layer_name]:
                np.testing.assert_array_equal(params[layer_name][var], first[1][layer_name][var])
        for got, want in zip(outputs, first[2]):
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=f"{name} vs {first[0]}")


def test_embedding_mask_reaches_attention_in_a_model(backend):
    # Keras's implicit masks: the model passes the inputs' masks as mask=[query, value].
    tokens = ember.Input((4,), dtype="int32", name="tokens")
    embedded = layers.Embedding(6, 3, mask_zero=True, name="embedding")(tokens)
    attention = layers.AdditiveAttention(name="additive")
    model = ember.Model(tokens, attention([embedded, embedded]))
    state = model.build(seed=0)
    ids = np.array([[2, 5, 0, 0], [1, 3, 4, 0]], dtype=np.int32)
    out = ops.to_numpy(model(ops.convert_to_tensor(ids)))
    x = ops.to_numpy(state["params"]["embedding"]["embeddings"]).astype(np.float64)[ids]
    params = {"scale": ops.to_numpy(state["params"]["additive"]["scale"]).astype(np.float64)}
    expected = attention_reference(additive_scores, params, [x, x], query_mask=ids != 0, value_mask=ids != 0)
    np.testing.assert_allclose(out, expected, rtol=RTOL, atol=ATOL)


def test_compute_mask_passes_the_query_mask():
    layer = layers.Attention(name="attention")
    assert layer.compute_mask([None, None]) is None
    assert layer.compute_mask([None, None], [None, "v"]) is None
    assert layer.compute_mask([None, None], ["q", "v"]) == "q"


def test_rejects_bad_config_and_inputs(backend):
    with pytest.raises(ValueError, match="score_mode"):
        layers.Attention(score_mode="general")
    with pytest.raises(ValueError, match="dropout"):
        layers.AdditiveAttention(dropout=-0.1)
    with pytest.raises(TypeError, match="use_scale"):
        layers.Attention(use_scale="yes")
    layer = layers.Attention(name="attention")
    state = layer.build([(None, 3, 4), (None, 5, 4)])
    q, v = ops.ones((2, 3, 4)), ops.ones((2, 5, 4))
    with pytest.raises(ValueError, match="'attention'.*list of 2 or 3"):
        layer.apply(state, q)
    with pytest.raises(ValueError, match="'attention'.*list of 2 or 3"):
        layer.apply(state, [q, v, v, v])
    with pytest.raises(ValueError, match="'attention'.*same feature size"):
        layer.apply(state, [q, ops.ones((2, 5, 3))])
    with pytest.raises(ValueError, match="'attention'.*same number of time steps"):
        layer.apply(state, [q, v, ops.ones((2, 4, 4))])
    with pytest.raises(ValueError, match="'attention'.*mask must be a list"):
        layer.apply(state, [q, v], mask=ops.ones((2, 5), dtype="bool"))
    with pytest.raises(ValueError, match="'attention'.*value_mask must have shape"):
        layer.apply(state, [q, v], mask=[None, ops.ones((2, 3), dtype="bool")])
    with pytest.raises(ValueError, match="'attention'.*time, features"):
        layer.build([(None, 4), (None, 4)])
    with pytest.raises(ValueError, match="'attention'.*query_mask"):
        layer([ember.Input((3, 4)), ember.Input((5, 4))], mask=[ember.Input((5,), dtype="bool"), None])
