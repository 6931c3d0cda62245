"""MultiHeadAttention against independent references.

References:

* a NumPy float64 einsum implementation written here (every configuration);
* ``torch.nn.MultiheadAttention`` in float64 with the weights copied from Keras's layout
  (it requires ``num_heads * key_dim == embed_dim`` = the query's last dimension);
* ``torch.nn.functional.scaled_dot_product_attention`` in float64 for the general case
  (any key_dim/value_dim/output_shape), the projections done in NumPy.

Layout conversion, Keras -> torch (``E`` the query dimension, ``N`` heads, ``H`` head size):

* ``query/kernel`` ``(E, N, H)`` reshaped to ``(E, N*H)`` is ``q_proj_weight.T`` (torch's
  ``(out, in)``); torch splits the ``N*H`` outputs into heads in order, head ``n`` owning
  rows ``n*H .. n*H+H-1``, exactly the row-major reshape of ``(N, H)``. Likewise key and
  value. With ``kdim == vdim == E`` torch keeps the three stacked in ``in_proj_weight``
  ``(3E, E)``, rows ``[q; k; v]``.
* biases ``(N, H)`` reshaped to ``(N*H,)``, stacked ``[q, k, v]`` in ``in_proj_bias``.
* ``attention_output/kernel`` ``(N, Hv, E)`` reshaped to ``(N*Hv, E)`` is ``out_proj.weight.T``.
* masks: Keras's boolean masks are True where attention is *allowed*;
  ``nn.MultiheadAttention``'s ``attn_mask`` is True where it is *forbidden* (so ``~mask``),
  3-D of shape ``(B*N, T, S)`` ordered batch-major (``np.repeat(mask, N, axis=0)``);
  ``scaled_dot_product_attention``'s boolean mask is True where allowed, like Keras's.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import ember
from ember import backends, layers, ops
from tests.layers.layer_test import run_layer_test

torch = pytest.importorskip("torch")  # the reference implementation, not the code under test

RTOL = 1e-5
ATOL = 1e-6


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def mha_reference(params, query, value, key=None, mask=None, use_bias=True, return_scores=False):
    """Multi-head attention in float64 NumPy, straight from the formulas.

    ``query`` ``(B, *T, E)``, ``value``/``key`` ``(B, *S, dim)``; ``mask`` broadcastable
    to ``(B, *T, *S)``, True = may attend. Sequence axes are attended jointly.
    """
    key = value if key is None else key
    batch, t_dims, s_dims = query.shape[0], query.shape[1:-1], value.shape[1:-1]
    q = query.reshape(batch, -1, query.shape[-1])
    v = value.reshape(batch, -1, value.shape[-1])
    k = key.reshape(batch, -1, key.shape[-1])

    def project(x, p):
        y = np.einsum("bld,dnh->bnlh", x, p["kernel"])
        return y + p["bias"][None, :, None, :] if use_bias else y

    qh, kh, vh = project(q, params["query"]), project(k, params["key"]), project(v, params["value"])
    logits = np.einsum("bnth,bnsh->bnts", qh, kh) / np.sqrt(qh.shape[-1])
    if mask is not None:
        full = np.broadcast_to(mask, (batch, *t_dims, *s_dims)).reshape(batch, 1, q.shape[1], v.shape[1])
        logits = np.where(full, logits, -1e9)
    weights = _softmax(logits)
    context = np.einsum("bnts,bnsh->btnh", weights, vh)
    kernel = params["attention_output"]["kernel"]
    out = np.einsum("btnh,nho->bto", context, kernel.reshape(kernel.shape[0], kernel.shape[1], -1))
    if use_bias:
        out = out + params["attention_output"]["bias"].reshape(-1)
    out = out.reshape(batch, *t_dims, *kernel.shape[2:])
    if return_scores:
        return out, weights.reshape(batch, weights.shape[1], *t_dims, *s_dims)
    return out


def causal(t, s):
    return np.tril(np.ones((t, s), dtype=bool))


# --- run_layer_test: the common checks + the NumPy reference --------------------------------
def test_self_attention_shapes_and_reference():
    run_layer_test(
        lambda: layers.MultiHeadAttention(num_heads=2, key_dim=3, name="mha"),
        [(2, 3, 4), (2, 5, 4)],
        reference=lambda p, xs: mha_reference(p, xs[0], xs[1]),
        expected_output_shape=(2, 3, 4),
        expected_param_shapes={"attention_output/bias": (4,), "attention_output/kernel": (2, 3, 4),
                               "key/bias": (2, 3), "key/kernel": (4, 2, 3), "query/bias": (2, 3),
                               "query/kernel": (4, 2, 3), "value/bias": (2, 3), "value/kernel": (4, 2, 3)},
        supports_masking=True,
        # Softmax is invariant to adding the same number to every score of a row, and the
        # key bias adds q . b_k to all of them: its gradient is zero (up to rounding).
        expect_zero_grad={"key/bias"},
    )


def test_separate_key_value_dims_and_output_shape():
    # Query, key and value of different widths; value heads wider than key heads; a
    # 2-D output_shape (kernel (N, Hv, 2, 3)).
    run_layer_test(
        lambda: layers.MultiHeadAttention(num_heads=2, key_dim=2, value_dim=3, output_shape=(2, 3), name="mha"),
        [(2, 3, 4), (2, 4, 5), (2, 4, 3)],
        reference=lambda p, xs: mha_reference(p, xs[0], xs[1], xs[2]),
        expected_output_shape=(2, 3, 2, 3),
        expected_param_shapes={"attention_output/bias": (2, 3), "attention_output/kernel": (2, 3, 2, 3),
                               "key/bias": (2, 2), "key/kernel": (3, 2, 2), "query/bias": (2, 2),
                               "query/kernel": (4, 2, 2), "value/bias": (2, 3), "value/kernel": (5, 2, 3)},
        supports_masking=True,
        expect_zero_grad={"key/bias"},
    )


def test_no_bias():
    run_layer_test(
        lambda: layers.MultiHeadAttention(num_heads=3, key_dim=2, use_bias=False, output_shape=5, name="mha"),
        [(2, 3, 4), (2, 3, 4)],
        reference=lambda p, xs: mha_reference(p, xs[0], xs[1], use_bias=False),
        expected_output_shape=(2, 3, 5),
        expected_param_shapes={"attention_output/kernel": (3, 2, 5), "key/kernel": (4, 3, 2),
                               "query/kernel": (4, 3, 2), "value/kernel": (4, 3, 2)},
        supports_masking=True,
    )


def test_attention_mask_and_causal_mask_through_run_layer_test():
    rng = np.random.default_rng(0)
    mask = rng.random((2, 4, 4)) < 0.7
    mask[:, :, 0] = True  # no fully-masked rows here (those are tested separately)
    run_layer_test(
        lambda: layers.MultiHeadAttention(num_heads=2, key_dim=3, name="mha"),
        [(2, 4, 4), (2, 4, 4)],
        call_kwargs={"attention_mask": mask, "use_causal_mask": True},
        reference=lambda p, xs: mha_reference(p, xs[0], xs[1], mask=mask & causal(4, 4)),
        supports_masking=True,
        expect_zero_grad={"key/bias"},
    )


def test_padding_masks_through_run_layer_test():
    rng = np.random.default_rng(1)
    value_mask = rng.random((2, 5)) < 0.6
    value_mask[:, 0] = True
    query_mask = np.array([[True, True, False], [True, False, True]])
    run_layer_test(
        lambda: layers.MultiHeadAttention(num_heads=2, key_dim=2, name="mha"),
        [(2, 3, 4), (2, 5, 4)],
        call_kwargs={"query_mask": query_mask, "value_mask": value_mask},
        # Keras's combination: (B, T, 1) & (B, 1, S); masked query rows attend uniformly.
        reference=lambda p, xs: mha_reference(p, xs[0], xs[1], mask=query_mask[:, :, None] & value_mask[:, None, :]),
        supports_masking=True,
        expect_zero_grad={"key/bias"},
    )


def test_return_attention_scores_through_run_layer_test():
    run_layer_test(
        lambda: layers.MultiHeadAttention(num_heads=2, key_dim=3, name="mha"),
        [(2, 3, 4), (2, 5, 4)],
        call_kwargs={"return_attention_scores": True},
        reference=lambda p, xs: mha_reference(p, xs[0], xs[1], return_scores=True),
        expected_output_shape=((2, 3, 4), (2, 2, 3, 5)),
        supports_masking=True,
        expect_zero_grad={"key/bias"},
    )


def test_dropout_on_probabilities():
    run_layer_test(
        lambda: layers.MultiHeadAttention(num_heads=2, key_dim=3, dropout=0.5, name="mha"),
        [(2, 3, 4), (2, 5, 4)],
        reference=lambda p, xs: mha_reference(p, xs[0], xs[1]),  # inference: no dropout
        training_changes_output=True,
        supports_masking=True,
        expect_zero_grad={"key/bias"},
    )


@pytest.mark.parametrize("axes", [None, (1, 2), (-3, -2)], ids=["None", "(1,2)", "(-3,-2)"])
def test_two_sequence_axes_attend_jointly(axes):
    # attention_axes=None on (B, H, W, dim) attends over (H, W) together (Keras's default);
    # attention_axes=(1, 2) is the same thing.
    run_layer_test(
        lambda: layers.MultiHeadAttention(num_heads=2, key_dim=2, attention_axes=axes, name="mha"),
        [(2, 2, 3, 4), (2, 3, 2, 4)],
        call_kwargs={"return_attention_scores": True},
        reference=lambda p, xs: mha_reference(p, xs[0], xs[1], return_scores=True),
        expected_output_shape=((2, 2, 3, 4), (2, 2, 2, 3, 3, 2)),
        supports_masking=True,
        check_gradients=axes is None,  # the same computation three times: check gradients once
        expect_zero_grad={"key/bias"},
        backend_names=["numpy", "torch"] if axes is not None else None,
    )


# --- torch references ---------------------------------------------------------------------------
def _random_state(mha, shapes, seed):
    """Build the layer and replace its params by random normal ones (non-zero biases)."""
    state = mha.build(shapes, seed=0)
    rng = np.random.default_rng(seed)
    params = {name: {k: rng.normal(0.0, 0.5, size=ops.shape(v)).astype(np.float32) for k, v in sub.items()}
              for name, sub in state["params"].items()}
    native = {name: {k: ops.convert_to_tensor(v) for k, v in sub.items()} for name, sub in params.items()}
    return {"params": native, "buffers": {}}, params


def _torch_mha(params, embed_dim, num_heads, kdim, vdim):
    """``nn.MultiheadAttention`` (float64) holding the Keras-layout ``params``."""
    module = torch.nn.MultiheadAttention(embed_dim, num_heads, bias=True, kdim=kdim, vdim=vdim,
                                         batch_first=True, dtype=torch.float64)
    t = lambda a: torch.tensor(np.asarray(a, dtype=np.float64))  # noqa: E731
    flat = {name: params[name]["kernel"].reshape(params[name]["kernel"].shape[0], -1).T
            for name in ("query", "key", "value")}  # (E, dim): torch's (out, in)
    with torch.no_grad():
        if module._qkv_same_embed_dim:
            module.in_proj_weight.copy_(t(np.concatenate([flat["query"], flat["key"], flat["value"]], axis=0)))
        else:
            module.q_proj_weight.copy_(t(flat["query"]))
            module.k_proj_weight.copy_(t(flat["key"]))
            module.v_proj_weight.copy_(t(flat["value"]))
        module.in_proj_bias.copy_(t(np.concatenate([params[n]["bias"].reshape(-1) for n in ("query", "key", "value")])))
        out_kernel = params["attention_output"]["kernel"]
        module.out_proj.weight.copy_(t(out_kernel.reshape(-1, out_kernel.shape[-1]).T))
        module.out_proj.bias.copy_(t(params["attention_output"]["bias"]))
    return module


@pytest.mark.parametrize("dims", [(6, 6, 6), (6, 5, 4)], ids=["packed_in_proj", "separate_kdim_vdim"])
def test_matches_torch_multihead_attention(backend, dims):
    embed_dim, kdim, vdim = dims
    num_heads, key_dim = 2, 3  # num_heads * key_dim == embed_dim, as torch requires
    batch, t, s = 2, 4, 4
    rng = np.random.default_rng(5)
    query = rng.normal(size=(batch, t, embed_dim)).astype(np.float32)
    value = rng.normal(size=(batch, s, vdim)).astype(np.float32)
    key = rng.normal(size=(batch, s, kdim)).astype(np.float32)
    mask = rng.random((batch, t, s)) < 0.7
    mask[:, :, 0] = True
    mha = layers.MultiHeadAttention(num_heads=num_heads, key_dim=key_dim, name="mha")
    state, params = _random_state(mha, [(None, t, embed_dim), (None, s, vdim), (None, s, kdim)], seed=3)
    module = _torch_mha(params, embed_dim, num_heads, kdim, vdim)

    for kwargs, allowed in [({}, None),
                            ({"attention_mask": mask}, mask),
                            ({"use_causal_mask": True}, np.broadcast_to(causal(t, s), (batch, t, s))),
                            ({"attention_mask": mask, "use_causal_mask": True}, mask & causal(t, s))]:
        native_kwargs = {k: ops.convert_to_tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        (out, scores), _ = mha.apply(state, [ops.convert_to_tensor(query), ops.convert_to_tensor(value),
                                             ops.convert_to_tensor(key)], return_attention_scores=True, **native_kwargs)
        attn_mask = None if allowed is None else torch.tensor(~np.repeat(allowed, num_heads, axis=0))
        with torch.no_grad():
            expected, expected_weights = module(
                torch.tensor(query, dtype=torch.float64), torch.tensor(key, dtype=torch.float64),
                torch.tensor(value, dtype=torch.float64), attn_mask=attn_mask, need_weights=True,
                average_attn_weights=False)
        np.testing.assert_allclose(ops.to_numpy(out), expected.numpy(), rtol=RTOL, atol=ATOL, err_msg=str(kwargs))
        np.testing.assert_allclose(ops.to_numpy(scores), expected_weights.numpy(), rtol=RTOL, atol=ATOL,
                                   err_msg=str(kwargs))


def test_matches_torch_sdpa_general_dims(backend):
    # key_dim * num_heads != query dim and value_dim != key_dim: beyond nn.MultiheadAttention,
    # so the projections are done in NumPy and the attention by torch's SDPA (float64).
    batch, t, s, num_heads, key_dim, value_dim = 2, 3, 5, 3, 2, 4
    rng = np.random.default_rng(8)
    query = rng.normal(size=(batch, t, 4)).astype(np.float32)
    value = rng.normal(size=(batch, s, 3)).astype(np.float32)
    mask = rng.random((batch, t, s)) < 0.6
    mask[:, :, -1] = True
    mha = layers.MultiHeadAttention(num_heads, key_dim, value_dim=value_dim, output_shape=7, name="mha")
    state, params = _random_state(mha, [(None, t, 4), (None, s, 3)], seed=4)
    out, _ = mha.apply(state, [ops.convert_to_tensor(query), ops.convert_to_tensor(value)],
                       attention_mask=ops.convert_to_tensor(mask))

    def heads(x, p):  # (B, L, dim) -> (B, N, L, head) as a float64 torch tensor
        y = np.einsum("bld,dnh->bnlh", x.astype(np.float64), p["kernel"]) + p["bias"][None, :, None, :]
        return torch.tensor(y)

    with torch.no_grad():
        context = torch.nn.functional.scaled_dot_product_attention(
            heads(query, params["query"]), heads(value, params["key"]), heads(value, params["value"]),
            attn_mask=torch.tensor(mask[:, None]))  # True = may attend, like Keras
    context = context.numpy().transpose(0, 2, 1, 3).reshape(batch, t, num_heads * value_dim)
    expected = context @ params["attention_output"]["kernel"].reshape(-1, 7) + params["attention_output"]["bias"]
    np.testing.assert_allclose(ops.to_numpy(out), expected, rtol=RTOL, atol=ATOL)


# --- masking details ------------------------------------------------------------------------------
def test_fully_masked_rows_are_uniform_and_finite(backend):
    # Keras fills masked scores with -1e9, not -inf: a row with nothing to attend to gets
    # uniform weights (never NaN), and its gradient stays finite.
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=2, name="mha")
    state = mha.build([(None, 3, 4), (None, 4, 4)], seed=0)
    rng = np.random.default_rng(2)
    q = ops.convert_to_tensor(rng.normal(size=(1, 3, 4)).astype(np.float32))
    v = ops.convert_to_tensor(rng.normal(size=(1, 4, 4)).astype(np.float32))
    mask = np.ones((1, 3, 4), dtype=bool)
    mask[0, 1] = False
    (out, scores), _ = mha.apply(state, [q, v], attention_mask=ops.convert_to_tensor(mask),
                                 return_attention_scores=True)
    scores = ops.to_numpy(scores)
    np.testing.assert_allclose(scores[0, :, 1], np.full((2, 4), 0.25), rtol=RTOL)
    assert np.all(np.isfinite(ops.to_numpy(out)))

    def loss(params):
        return ops.sum(ops.square(mha.apply({"params": params, "buffers": {}}, [q, v],
                                            attention_mask=ops.convert_to_tensor(mask))[0]))

    _, grads = ember.value_and_grad(loss)(state["params"])
    for leaf in (g for sub in grads.values() for g in sub.values()):
        assert np.all(np.isfinite(ops.to_numpy(leaf)))


def test_large_scores_are_stable(backend):
    mha = layers.MultiHeadAttention(num_heads=1, key_dim=4, name="mha")
    state = mha.build([(None, 3, 4), (None, 3, 4)], seed=0)
    x = np.random.default_rng(0).normal(size=(2, 3, 4)) * 1e3
    params = {k: {n: ops.to_numpy(a).astype(np.float64) for n, a in sub.items()} for k, sub in state["params"].items()}
    out, _ = mha.apply(state, [ops.convert_to_tensor(x.astype(np.float32))] * 2, use_causal_mask=True)
    out = ops.to_numpy(out)
    assert np.all(np.isfinite(out))
    expected = mha_reference(params, x.astype(np.float32).astype(np.float64),
                             x.astype(np.float32).astype(np.float64), mask=causal(3, 3))
    # Scores of ~1e6 make the softmax very sharp, so float32 rounding of the scores can
    # move weights noticeably: compare loosely, the point is that nothing overflows.
    np.testing.assert_allclose(out, expected, rtol=1e-2, atol=1e-1)


def test_returned_scores_are_taken_before_dropout(backend):
    # As in Keras: the probabilities returned are the softmax output; dropout only
    # affects what multiplies the values.
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=2, dropout=0.5, name="mha")
    state = mha.build([(None, 3, 4), (None, 5, 4)], seed=0)
    rng = np.random.default_rng(3)
    x = [ops.convert_to_tensor(rng.normal(size=s).astype(np.float32)) for s in ((2, 3, 4), (2, 5, 4))]
    (out, scores), _ = mha.apply(state, x, return_attention_scores=True)
    (train_out, train_scores), _ = mha.apply(state, x, training=True, rng=11, return_attention_scores=True)
    np.testing.assert_array_equal(ops.to_numpy(train_scores), ops.to_numpy(scores))
    assert not np.allclose(ops.to_numpy(train_out), ops.to_numpy(out))
    again, _ = mha.apply(state, x, training=True, rng=11)
    np.testing.assert_array_equal(ops.to_numpy(again), ops.to_numpy(train_out))
    other, _ = mha.apply(state, x, training=True, rng=12)
    assert not np.array_equal(ops.to_numpy(other), ops.to_numpy(train_out))


def test_mask_argument_is_the_inputs_masks(backend):
    # ``mask=[query_mask, value_mask, key_mask]`` (what a model passes from masked inputs)
    # means the same as the explicit keywords, which take precedence over it.
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=2, name="mha")
    state = mha.build([(None, 3, 4), (None, 5, 4), (None, 5, 4)], seed=0)
    rng = np.random.default_rng(6)
    x = [ops.convert_to_tensor(rng.normal(size=s).astype(np.float32)) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 4))]
    q_mask, v_mask, k_mask = (ops.convert_to_tensor(rng.random(s) < 0.7) for s in ((2, 3), (2, 5), (2, 5)))
    explicit, _ = mha.apply(state, x, query_mask=q_mask, value_mask=v_mask, key_mask=k_mask)
    implicit, _ = mha.apply(state, x, mask=[q_mask, v_mask, k_mask])
    np.testing.assert_array_equal(ops.to_numpy(implicit), ops.to_numpy(explicit))
    overridden, _ = mha.apply(state, x, mask=[None, ops.zeros((2, 5), dtype="bool"), None], value_mask=v_mask,
                              query_mask=q_mask, key_mask=k_mask)
    np.testing.assert_array_equal(ops.to_numpy(overridden), ops.to_numpy(explicit))
    with pytest.raises(ValueError, match="'mha'.*one entry"):
        mha.apply(state, x, mask=q_mask)


def test_embedding_mask_reaches_attention_in_a_model(backend):
    # Keras's implicit masks: Embedding(mask_zero=True) masks padding tokens, and the
    # model hands them to MultiHeadAttention as query/value masks.
    tokens = ember.Input((5,), dtype="int32", name="tokens")
    embedded = layers.Embedding(7, 4, mask_zero=True, name="embedding")(tokens)
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=2, name="mha")
    model = ember.Model(tokens, mha(embedded, embedded))
    state = model.build(seed=0)
    ids = np.array([[3, 1, 4, 0, 0], [2, 6, 5, 1, 0]], dtype=np.int32)
    out = ops.to_numpy(model(ops.convert_to_tensor(ids)))
    x = ops.take(state["params"]["embedding"]["embeddings"], ops.convert_to_tensor(ids), axis=0)
    keep = ops.convert_to_tensor(ids != 0)
    expected, _ = mha.apply({"params": state["params"]["mha"], "buffers": {}}, [x, x], query_mask=keep,
                            value_mask=keep)
    np.testing.assert_array_equal(out, ops.to_numpy(expected))
    unmasked, _ = mha.apply({"params": state["params"]["mha"], "buffers": {}}, [x, x])
    assert not np.allclose(out, ops.to_numpy(unmasked))


# --- functional models ------------------------------------------------------------------------------
def _functional_mha_model():
    query = ember.Input((4, 6), name="query")
    value = ember.Input((5, 6), name="value")
    mask = ember.Input((4, 5), dtype="bool", name="mask")
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=3, name="mha")
    cross, scores = mha(query, value, attention_mask=mask, return_attention_scores=True)
    self_attention = layers.MultiHeadAttention(num_heads=3, key_dim=2, dropout=0.25, name="self_mha")
    out = self_attention(cross, cross, cross, use_causal_mask=True)
    out = layers.Dense(2, name="head")(out)
    return ember.Model([query, value, mask], [out, scores], name="translator")


def test_functional_model_identical_on_every_backend():
    rng = np.random.default_rng(0)
    query = rng.normal(size=(2, 4, 6)).astype(np.float32)
    value = rng.normal(size=(2, 5, 6)).astype(np.float32)
    mask = rng.random((2, 4, 5)) < 0.7
    mask[:, :, 0] = True
    first = None
    for name in backends.available():
        with ember.using_backend(name):
            model = _functional_mha_model()
            assert [t.shape for t in model.outputs] == [(None, 4, 2), (None, 2, 4, 5)]
            state = model.build(seed=7)
            inputs = [ops.convert_to_tensor(query), ops.convert_to_tensor(value), ops.convert_to_tensor(mask)]
            out, scores = model(inputs)
            out, scores = ops.to_numpy(out), ops.to_numpy(scores)
            # The symbolic path runs exactly the layer's own apply with the recorded kwargs.
            sub = state["params"]
            (cross, ref_scores), _ = model.get_layer("mha").apply(
                {"params": sub["mha"], "buffers": {}}, inputs[:2], attention_mask=inputs[2],
                return_attention_scores=True)
            np.testing.assert_array_equal(scores, ops.to_numpy(ref_scores))
            # Training mode reaches the dropout of self_mha, reproducibly for a fixed rng.
            train_1, _ = model.apply(state, inputs, training=True, rng=3)
            train_2, _ = model.apply(state, inputs, training=True, rng=3)
            np.testing.assert_array_equal(ops.to_numpy(train_1[0]), ops.to_numpy(train_2[0]))
            assert not np.allclose(ops.to_numpy(train_1[0]), out)
            # The config (tensor kwargs included) survives JSON and rebuilds the same model.
            config = json.loads(json.dumps(model.get_config()))
            kwargs = {node["layer"]: node["kwargs"] for node in config["nodes"]}
            assert kwargs["mha"] == {"attention_mask": {"__symbolic_tensor__": ["mask", 0, 0]},
                                     "return_attention_scores": True}
            assert kwargs["self_mha"] == {"use_causal_mask": True}
            rebuilt = ember.Model.from_config(config)
            rebuilt_out, rebuilt_scores = rebuilt.apply(state, inputs)[0]
            np.testing.assert_array_equal(ops.to_numpy(rebuilt_out), out)
            np.testing.assert_array_equal(ops.to_numpy(rebuilt_scores), scores)
            state_np = {k: {n: {p: ops.to_numpy(a) for p, a in leaf.items()} if isinstance(leaf, dict)
                            else ops.to_numpy(leaf) for n, leaf in v.items()} for k, v in state["params"].items()}
        if first is None:
            first = (name, state_np, out, scores)
            continue
        # Same seed, same weights (bit for bit) on every backend; outputs agree to float32
        # rounding (each backend's BLAS sums in its own order).
        for layer_name, layer_params in first[1].items():
            for var, leaf in layer_params.items():
                if isinstance(leaf, dict):
                    for p, a in leaf.items():
                        np.testing.assert_array_equal(state_np[layer_name][var][p], a)
                else:
                    np.testing.assert_array_equal(state_np[layer_name][var], leaf)
        np.testing.assert_allclose(out, first[2], rtol=RTOL, atol=ATOL, err_msg=f"{name} vs {first[0]}")
        np.testing.assert_allclose(scores, first[3], rtol=RTOL, atol=ATOL, err_msg=f"{name} vs {first[0]}")


def test_functional_call_forms_record_the_same_node():
    q = ember.Input((3, 4))
    v = ember.Input((5, 4))
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=2, name="mha")
    a = mha(q, v)
    b = mha([q, v])
    assert a.shape == b.shape == (None, 3, 4)
    assert a.node.inputs == [q, v] and b.node.inputs == [q, v]
    out, scores = mha(q, v, return_attention_scores=True)
    assert (out.shape, scores.shape) == ((None, 3, 4), (None, 2, 3, 5))


# --- bad input ---------------------------------------------------------------------------------
def test_rejects_bad_config():
    with pytest.raises(ValueError, match="num_heads"):
        layers.MultiHeadAttention(num_heads=0, key_dim=2)
    with pytest.raises(ValueError, match="key_dim"):
        layers.MultiHeadAttention(num_heads=2, key_dim=-1)
    with pytest.raises(ValueError, match="dropout"):
        layers.MultiHeadAttention(2, 2, dropout=1.0)
    with pytest.raises(TypeError, match="attention_axes"):
        layers.MultiHeadAttention(2, 2, attention_axes="time")
    with pytest.raises(ValueError, match="output_shape"):
        layers.MultiHeadAttention(2, 2, output_shape=(3, 0))


def test_other_attention_axes_are_not_implemented():
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=2, attention_axes=2, name="mha")
    with pytest.raises(NotImplementedError, match=r"attention_axes=\(2,\).*attention_axes=None"):
        mha.build([(None, 3, 4, 5), (None, 3, 4, 5)])
    with pytest.raises(NotImplementedError, match="attention_axes"):
        mha(ember.Input((3, 4, 5)), ember.Input((3, 4, 5)))
    # (1,) on rank-3 inputs is the default axis: accepted.
    layers.MultiHeadAttention(num_heads=2, key_dim=2, attention_axes=1).build([(None, 3, 4), (None, 3, 4)])


def test_bad_inputs_name_the_layer(backend):
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=2, name="mha")
    state = mha.build([(None, 3, 4), (None, 5, 4)], seed=0)
    q, v = ops.ones((2, 3, 4)), ops.ones((2, 5, 4))
    with pytest.raises(ValueError, match="'mha'.*\\[query, value\\]"):
        mha.apply(state, q)
    with pytest.raises(ValueError, match="'mha'.*\\[query, value\\]"):
        mha.apply(state, [q])
    with pytest.raises(ValueError, match="'mha'.*value and key"):
        mha.apply(state, [q, v, ops.ones((2, 4, 4))])
    with pytest.raises(ValueError, match="'mha'.*last dimension 4"):
        mha.apply(state, [q, ops.ones((2, 5, 3))])
    with pytest.raises(ValueError, match="'mha'.*attention_mask"):
        mha.apply(state, [q, v], attention_mask=ops.ones((2, 5, 3), dtype="bool"))
    with pytest.raises(ValueError, match="'mha'.*value_mask"):
        mha.apply(state, [q, v], value_mask=ops.ones((2, 3), dtype="bool"))
    with pytest.raises(TypeError, match="'mha'.*use_causal_mask"):
        mha.apply(state, [q, v], use_causal_mask="yes")
    with pytest.raises(ValueError, match="'mha'.*batch"):
        mha.apply(state, [q, ops.ones((3, 5, 4))])


def test_bad_symbolic_calls():
    q, v = ember.Input((3, 4)), ember.Input((5, 4))
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=2, name="mha")
    with pytest.raises(TypeError, match="'mha'.*unexpected keyword.*'causal'"):
        mha(q, v, causal=True)
    with pytest.raises(TypeError, match="'mha'.*training must be True, False or None"):
        mha(q, v, training="yes")  # training=True/False fixes the call's mode (Keras); rng is the model's
    with pytest.raises(TypeError, match="'rng' is given when the model runs"):
        mha(q, v, rng=0)
    with pytest.raises(TypeError, match="'mha'.*positional input 2"):
        mha(q, np.ones((1, 5, 4)))
    with pytest.raises(ValueError, match="'mha'.*attention_mask"):
        mha(q, v, attention_mask=ember.Input((3, 4), dtype="bool"))
    with pytest.raises(TypeError, match="unexpected keyword"):
        layers.Dense(2, name="dense")(q, attention_mask=ember.Input((3, 5), dtype="bool"))


@pytest.mark.parametrize("use_bias", [True, False], ids=["bias", "no_bias"])
def test_self_attention_projects_in_one_gemm_with_the_same_values_and_gradients(backend, use_bias, monkeypatch):
    """Self-attention (query, key and value one tensor, key_dim == value_dim) projects q, k and v with
    the three kernels side by side in one GEMM, as torch's in_proj does; outputs and the gradients of
    every param equal the three separate projections (the same tensor passed as a copy) and the float64
    NumPy reference."""
    from ember.layers.attention import multi_head_attention

    taken = []
    fused = multi_head_attention.project_self_attention
    monkeypatch.setattr(multi_head_attention, "project_self_attention", lambda *a: taken.append(1) or fused(*a))
    batch, t, embed = 2, 5, 6
    x = np.random.default_rng(7).normal(size=(batch, t, embed)).astype(np.float32)
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=3, use_bias=use_bias, name="mha")
    state, params = _random_state(mha, [(None, t, embed), (None, t, embed)], seed=4)

    def loss_and_grads(inputs):
        with ember.GradientTape() as tape:
            tape.watch(state["params"])
            out, _ = mha.apply(state, inputs, use_causal_mask=True)
            loss = ops.sum(ops.square(out))
        return out, tape.gradient(loss, state["params"])

    same = ops.convert_to_tensor(x)
    out, grads = loss_and_grads([same, same])
    assert len(taken) == 1
    separate_out, separate_grads = loss_and_grads([same, ops.convert_to_tensor(x.copy())])
    assert len(taken) == 1  # distinct tensors: three projections
    expected = mha_reference(params, x.astype(np.float64), x.astype(np.float64),
                             mask=causal(t, t)[None], use_bias=use_bias)
    # float32 against float64 and two float32 GEMM orders: sums of 6 products of O(1) terms through a
    # softmax and a second GEMM of 6: a few ulps of values <= ~10, inside RTOL/ATOL (1e-5, 1e-6 absolute
    # on values near 0: every element is checked relative first).
    np.testing.assert_allclose(ops.to_numpy(out), expected, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(ops.to_numpy(out), ops.to_numpy(separate_out), rtol=RTOL, atol=ATOL)
    for name in ("query", "key", "value", "attention_output"):
        for leaf in ("kernel", "bias") if use_bias else ("kernel",):
            # the gradients sum the same products in another order: relative 1e-5 of values O(10), absolute 1e-5
            # for the key bias, whose gradient is zero up to rounding (softmax ignores a per-row shift)
            np.testing.assert_allclose(ops.to_numpy(grads[name][leaf]), ops.to_numpy(separate_grads[name][leaf]),
                                       rtol=RTOL, atol=1e-5, err_msg=f"{name}/{leaf}")
