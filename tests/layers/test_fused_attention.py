"""Fused attention: ``ops.nn.dot_product_attention`` and the layers that use it.

References (independent of the code under test):

* ``attention_reference``: the attention equations in NumPy float64, written here;
* Keras 3's ``keras.layers.GroupQueryAttention`` (torch backend) with the same weights.

The fused kernels (torch's ``F.scaled_dot_product_attention``, MLX's
``mx.fast.scaled_dot_product_attention``) are checked against the reference and against the
composite (``ember.ops.extra.attention``, the NumPy path) in values and gradients, and spied on so a
silent fallback to the composite would fail the test.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.ops.extra.attention import dot_product_attention as composite_attention
from tests.tolerances import FLOAT32_PAIR, FLOAT64

B, T, S, N, K, H = 2, 5, 6, 4, 2, 3


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention_reference(q, k, v, bias=None, mask=None, scale=None, is_causal=False):
    """Scaled dot-product attention in float64 from the equations; ``(B, T, N, H)`` layout."""
    heads, kv_heads = q.shape[2], k.shape[2]
    k, v = np.repeat(k, heads // kv_heads, axis=2), np.repeat(v, heads // kv_heads, axis=2)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    logits = np.einsum("btnh,bsnh->bnts", q, k) * scale
    if bias is not None:
        logits = logits + bias
    allowed = np.ones(logits.shape, bool)
    if mask is not None:
        allowed &= np.broadcast_to(mask, logits.shape)
    if is_causal:
        allowed &= np.tril(np.ones(logits.shape[-2:], bool))
    logits = np.where(allowed, logits, -1e9)
    return np.einsum("bnts,bsnh->btnh", _softmax(logits), v)


def _operands(seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(B, T, N, H)), rng.normal(size=(B, S, K, H)), rng.normal(size=(B, S, K, H + 1))
    mask = rng.random((B, 1, T, S)) > 0.3
    mask[0, 0, 2] = False  # a fully masked row: uniform weights, never NaN
    bias = rng.normal(size=(1, N, T, S))
    return q, k, v, mask, bias


CASES = {
    "plain": {},
    "causal": {"is_causal": True},
    "mask": {"mask": True},
    "mask+bias+causal": {"mask": True, "bias": True, "is_causal": True},
    "scale": {"scale": 0.25},
}


def _kwargs(case, mask, bias, dtype):
    kwargs = dict(CASES[case])
    if kwargs.pop("mask", False):
        kwargs["mask"] = ops.convert_to_tensor(mask)
    if kwargs.pop("bias", False):
        kwargs["bias"] = ops.convert_to_tensor(bias, dtype=dtype)
    return kwargs


def _loss_and_grads(function, q, k, v, kwargs):
    """The value and the gradients of ``sum(out * weights)`` with respect to q, k, v."""
    weights = ops.convert_to_tensor(np.linspace(-1.0, 1.0, B * T * N * (H + 1)).reshape(B, T, N, H + 1),
                                    dtype=ops.dtype(q))

    def loss(q, k, v):
        return ops.sum(ops.multiply(function(q, k, v, **kwargs), weights))

    out = function(q, k, v, **kwargs)
    _, grads = ember.value_and_grad(loss, argnums=(0, 1, 2))(q, k, v)
    return ops.to_numpy(out).astype(np.float64), [ops.to_numpy(g).astype(np.float64) for g in grads]


@pytest.mark.parametrize("case", list(CASES))
def test_op_matches_reference_and_composite(backend, case):
    q, k, v, mask, bias = _operands()
    expected = attention_reference(q, k, v, bias=bias if CASES[case].get("bias") else None,
                                   mask=mask if CASES[case].get("mask") else None,
                                   scale=CASES[case].get("scale"), is_causal=CASES[case].get("is_causal", False))
    dtypes = ["float64"] + (["float32"] if backend != "numpy" else [])
    for dtype in dtypes:
        args = [ops.convert_to_tensor(a, dtype=dtype) for a in (q, k, v)]
        kwargs = _kwargs(case, mask, bias, dtype)
        fused_out, fused_grads = _loss_and_grads(ops.nn.dot_product_attention, *args, kwargs)
        composite_out, composite_grads = _loss_and_grads(composite_attention, *args, kwargs)
        tolerance = FLOAT64 if dtype == "float64" else FLOAT32_PAIR
        np.testing.assert_allclose(fused_out, expected, **tolerance)
        np.testing.assert_allclose(fused_out, composite_out, **tolerance)
        for fused, composite in zip(fused_grads, composite_grads):
            np.testing.assert_allclose(fused, composite, **tolerance)


def test_fully_masked_row_is_uniform_not_nan(backend):
    q, k, v, mask, _ = _operands()
    out = ops.to_numpy(ops.nn.dot_product_attention(*[ops.convert_to_tensor(a, dtype="float32") for a in (q, k, v)],
                                                    mask=ops.convert_to_tensor(mask)))
    np.testing.assert_allclose(out[0, 2], np.repeat(v[0].mean(axis=0), N // K, axis=0), **FLOAT32_PAIR)


def test_causal_equals_explicit_lower_triangular_mask(backend):
    q, k, v, _, _ = _operands(1)
    args = [ops.convert_to_tensor(a, dtype="float32") for a in (q, k, v[:, :, :, :H])]
    args[1], args[2] = args[1][:, :T], args[2][:, :T]  # T == S: MLX's native causal mask applies
    causal = ops.nn.dot_product_attention(*args, is_causal=True)
    explicit = ops.nn.dot_product_attention(*args, mask=ops.convert_to_tensor(np.tril(np.ones((T, T), bool))))
    np.testing.assert_allclose(ops.to_numpy(causal), ops.to_numpy(explicit), **FLOAT32_PAIR)


_KERNELS = {"torch": ("torch.nn.functional", "scaled_dot_product_attention"),
            "mlx": ("mlx.core.fast", "scaled_dot_product_attention")}


def _spy(monkeypatch, backend):
    """Count calls of the backend's fused kernel (None on NumPy, which has none)."""
    if backend not in _KERNELS:
        return None
    module_name, name = _KERNELS[backend]
    module = pytest.importorskip(module_name)
    original, calls = getattr(module, name), []

    def spy(*args, **kwargs):
        calls.append(kwargs.get("is_causal", kwargs.get("mask")))
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


def test_fused_kernel_is_called_by_op_and_layers(backend, monkeypatch):
    calls = _spy(monkeypatch, backend)
    x = ops.convert_to_tensor(np.random.default_rng(2).normal(size=(B, T, 8)), dtype="float32")
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=4)
    gqa = layers.GroupQueryAttention(head_dim=2, num_query_heads=4, num_key_value_heads=2)
    mha_state, gqa_state = mha.build([(B, T, 8), (B, T, 8)], seed=0), gqa.build([(B, T, 8), (B, T, 8)], seed=0)
    mha.apply(mha_state, [x, x], use_causal_mask=True)
    gqa.apply(gqa_state, [x, x])
    if calls is None:  # NumPy: the composite, and flash_attention=True is an error naming the backend
        with pytest.raises(NotImplementedError, match="numpy backend"):
            ops.nn.dot_product_attention(ops.ones((1, 2, 1, 2)), ops.ones((1, 2, 1, 2)), ops.ones((1, 2, 1, 2)),
                                         flash_attention=True)
        return
    assert len(calls) == 2
    if backend == "torch":  # use_causal_mask went in as is_causal: no T x T mask was built
        assert calls[0] is True
    else:
        assert calls[0] == "causal"
    # The probabilities, attention dropout while training, flash_attention=False: the composite.
    mha.apply(mha_state, [x, x], return_attention_scores=True)
    layers.MultiHeadAttention(num_heads=2, key_dim=4, dropout=0.5, seed=1).apply(
        mha_state, [x, x], training=True)
    layers.MultiHeadAttention(num_heads=2, key_dim=4, flash_attention=False).apply(mha_state, [x, x])
    assert len(calls) == 2
    # ember.config.disable_flash_attention(): layers left at flash_attention=None use the composite too.
    ember.config.disable_flash_attention()
    try:
        mha.apply(mha_state, [x, x])
    finally:
        ember.global_settings.set_flash_attention(None)
    assert len(calls) == 2
    mha.apply(mha_state, [x, x])
    assert len(calls) == 3


@pytest.mark.parametrize("use_causal_mask", [False, True])
def test_mha_fused_equals_composite_values_and_gradients(backend, use_causal_mask):
    rng = np.random.default_rng(3)
    query = ops.convert_to_tensor(rng.normal(size=(B, T, 6)), dtype="float32")
    value = ops.convert_to_tensor(rng.normal(size=(B, S, 5)), dtype="float32")
    pad = ops.convert_to_tensor(rng.random((B, S)) > 0.2)
    fused = layers.MultiHeadAttention(num_heads=2, key_dim=3, name="mha")
    composite = layers.MultiHeadAttention(num_heads=2, key_dim=3, name="mha", flash_attention=False)
    state = fused.build([(B, T, 6), (B, S, 5)], seed=0)
    results = []
    for layer in (fused, composite):
        def loss(params, layer=layer):
            out, _ = layer.apply({"params": params, "buffers": {}}, [query, value], value_mask=pad,
                                 use_causal_mask=use_causal_mask and T <= S)
            return ops.sum(ops.square(out))
        value_, grads = ember.value_and_grad(loss)(state["params"])
        results.append((float(ops.to_numpy(value_)), grads))
    (fused_loss, fused_grads), (composite_loss, composite_grads) = results
    np.testing.assert_allclose(fused_loss, composite_loss, **FLOAT32_PAIR)
    for name in fused_grads:
        for part in fused_grads[name]:
            np.testing.assert_allclose(ops.to_numpy(fused_grads[name][part]),
                                       ops.to_numpy(composite_grads[name][part]), **FLOAT32_PAIR)


# ------------------------------------------------------------------- GroupQueryAttention vs Keras
def _keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "torch":
        pytest.fail(f"the Keras reference needs KERAS_BACKEND=torch, found {keras.backend.backend()}")
    return keras


@pytest.mark.parametrize("use_causal_mask", [False, True])
def test_group_query_attention_equals_keras(backend, use_causal_mask):
    keras = _keras()
    rng = np.random.default_rng(4)
    query, value = rng.normal(size=(B, T, 8)).astype(np.float32), rng.normal(size=(B, T, 6)).astype(np.float32)
    pad = rng.random((B, T)) > 0.2
    reference = keras.layers.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2)
    expected = reference(query, value, value_mask=pad, use_causal_mask=use_causal_mask)
    expected = keras.ops.convert_to_numpy(expected)
    gqa = layers.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2)
    state = gqa.build([(B, T, 8), (B, T, 6)], seed=0)
    params = {}
    for variable in reference.weights:
        owner, part = variable.path.split("/")[-2:]
        assert tuple(ops.shape(state["params"][owner][part])) == tuple(variable.shape), variable.path
        params.setdefault(owner, {})[part] = ops.convert_to_tensor(np.asarray(variable.numpy()))
    assert {(o, p) for o in params for p in params[o]} == {(o, p) for o in state["params"] for p in state["params"][o]}
    out, _ = gqa.apply({"params": params, "buffers": {}}, [ops.convert_to_tensor(query), ops.convert_to_tensor(value)],
                       value_mask=ops.convert_to_tensor(pad), use_causal_mask=use_causal_mask)
    np.testing.assert_allclose(ops.to_numpy(out), expected, **FLOAT32_PAIR)
    (_, scores), _ = gqa.apply({"params": params, "buffers": {}}, [ops.convert_to_tensor(query),
                                                                   ops.convert_to_tensor(value)],
                               return_attention_scores=True)
    assert ops.shape(scores) == (B, 4, T, T)


def test_group_query_attention_self_attention_in_one_gemm_equals_keras(backend, monkeypatch):
    """Self-attention (one tensor for query, key and value) projects q and the grouped k, v in one GEMM;
    the output is Keras's, whose three projections run apart."""
    from ember.layers.attention import group_query_attention

    taken = []
    fused = group_query_attention.project_self_attention
    monkeypatch.setattr(group_query_attention, "project_self_attention", lambda *a: taken.append(1) or fused(*a))
    keras = _keras()
    x = np.random.default_rng(5).normal(size=(B, T, 8)).astype(np.float32)
    reference = keras.layers.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2)
    expected = keras.ops.convert_to_numpy(reference(x, x, use_causal_mask=True))
    gqa = layers.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2)
    gqa.build([(B, T, 8), (B, T, 8)], seed=0)
    params = {}
    for variable in reference.weights:
        owner, part = variable.path.split("/")[-2:]
        params.setdefault(owner, {})[part] = ops.convert_to_tensor(np.asarray(variable.numpy()))
    same = ops.convert_to_tensor(x)
    out, _ = gqa.apply({"params": params, "buffers": {}}, [same, same], use_causal_mask=True)
    assert taken == [1]
    np.testing.assert_allclose(ops.to_numpy(out), expected, **FLOAT32_PAIR)  # float32, sums of 8 and of T terms


def test_group_query_attention_bad_arguments():
    with pytest.raises(ValueError, match="num_query_heads must be a multiple of num_key_value_heads.*3.*2"):
        layers.GroupQueryAttention(head_dim=2, num_query_heads=3, num_key_value_heads=2)
    with pytest.raises(ValueError, match="num_key_value_heads"):
        layers.GroupQueryAttention(head_dim=2, num_query_heads=4, num_key_value_heads=0)
    gqa = layers.GroupQueryAttention(head_dim=2, num_query_heads=4, num_key_value_heads=2, flash_attention=True)
    with pytest.raises(ValueError, match="takes \\[query, value\\]"):
        gqa.build([(None, 5, 8)])
    state = gqa.build([(None, 5, 8), (None, 5, 8)], seed=0)
    x = ops.ones((1, 5, 8))
    with pytest.raises(ValueError, match="flash_attention=True"):
        gqa.apply(state, [x, x], return_attention_scores=True)
    with pytest.raises(ValueError, match="query must have last dimension 8"):
        gqa.apply(state, [ops.ones((1, 5, 7)), x])


def test_op_bad_arguments():
    q = ops.ones((1, 3, 4, 2))
    with pytest.raises(ValueError, match="must be a multiple of the key's"):
        ops.nn.dot_product_attention(q, ops.ones((1, 3, 3, 2)), ops.ones((1, 3, 3, 2)))
    with pytest.raises(ValueError, match="query must have shape \\(batch, length, num_heads, head_dim\\)"):
        ops.nn.dot_product_attention(ops.ones((3, 4, 2)), q, q)
    with pytest.raises(ValueError, match="mask must broadcast to .*\\(1, 4, 3, 3\\)"):
        ops.nn.dot_product_attention(q, q, q, mask=ops.ones((2, 3, 3), dtype="bool"))


def test_op_needs_one_floating_dtype(backend):
    q = ops.ones((1, 3, 2, 2))
    with pytest.raises(TypeError, match="one floating dtype, received float32, int32 and float32"):
        ops.nn.dot_product_attention(q, ops.ones((1, 3, 2, 2), dtype="int32"), q)


def _gqa_reference(params, xs):
    """GroupQueryAttention in float64 NumPy from the equations (key/value heads repeated)."""
    query, value = xs
    q = np.einsum("btd,dnh->btnh", query, params["query"]["kernel"]) + params["query"]["bias"]
    k = np.einsum("bsd,dnh->bsnh", value, params["key"]["kernel"]) + params["key"]["bias"]
    v = np.einsum("bsd,dnh->bsnh", value, params["value"]["kernel"]) + params["value"]["bias"]
    context = attention_reference(q, k, v)
    return (np.einsum("btnh,nhd->btd", context, params["attention_output"]["kernel"])
            + params["attention_output"]["bias"])


def test_group_query_attention_through_run_layer_test():
    from tests.layers.layer_test import run_layer_test

    run_layer_test(
        lambda: layers.GroupQueryAttention(head_dim=3, num_query_heads=4, num_key_value_heads=2, name="gqa"),
        [(2, 3, 4), (2, 5, 4)],
        reference=_gqa_reference,
        expected_output_shape=(2, 3, 4),
        expected_param_shapes={"attention_output/bias": (4,), "attention_output/kernel": (4, 3, 4),
                               "key/bias": (2, 3), "key/kernel": (4, 2, 3), "query/bias": (4, 3),
                               "query/kernel": (4, 4, 3), "value/bias": (2, 3), "value/kernel": (4, 2, 3)},
        supports_masking=True,
        expect_zero_grad={"key/bias"},  # softmax ignores a shift shared by a whole row (q . b_k)
    )
