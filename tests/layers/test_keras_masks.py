"""The keras.io masking-and-padding guide and the endpoint-layer pattern, against Keras 3 itself.

Each case writes the guide's code twice, with ``keras`` (torch backend: the oracle) and with
``ember`` on every backend, gives both the same weights and compares what the guide looks at:
``output._keras_mask`` after an eager or a symbolic call, the mask a custom layer's ``call(...,
mask=None)`` receives, layers that set ``supports_masking = True`` in ``__init__``, a layer's own
``compute_mask``, and a layer called with several positional inputs (``endpoint(targets, logits)``).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import layers, ops
from tests.helpers import needs, optional_import
from tests.tolerances import FLOAT32_PAIR

os.environ.setdefault("KERAS_BACKEND", "torch")  # before keras is imported (the reference)
keras = optional_import("keras")  # None on a core-only install: the comparisons with Keras skip

PADDED = np.array([[711, 632, 71, 0, 0, 0], [73, 8, 3215, 55, 927, 0], [83, 91, 1, 645, 1253, 927]])
TOKENS = np.array([[3, 1, 4, 0, 0], [2, 7, 0, 0, 0], [5, 9, 2, 6, 5]])


def _numpy(value):
    return np.asarray(ops.convert_to_numpy(value))


def _keras_numpy(value):
    return np.asarray(keras.ops.convert_to_numpy(value))


# --- eager masks ------------------------------------------------------------------------------
@needs("keras")
def test_eager_embedding_and_masking_outputs_carry_keras_mask(backend):
    embedding = layers.Embedding(input_dim=5000, output_dim=16, mask_zero=True)
    masked = embedding(PADDED)
    expected = keras.layers.Embedding(input_dim=5000, output_dim=16, mask_zero=True)(PADDED)._keras_mask
    np.testing.assert_array_equal(_numpy(masked._keras_mask), _keras_numpy(expected))
    # The guide's second way: Masking on float inputs.
    unmasked = np.tile(PADDED[..., None], (1, 1, 10)).astype("float32")
    masked_embedding = layers.Masking()(unmasked)
    expected = keras.layers.Masking()(unmasked)._keras_mask
    np.testing.assert_array_equal(_numpy(masked_embedding._keras_mask), _keras_numpy(expected))
    # The carrier holds the same values as a plain output.
    np.testing.assert_array_equal(_numpy(masked_embedding), unmasked)


def test_eager_mask_reaches_the_next_layer_that_takes_one(backend):
    """``lstm(embedding(x))`` eagerly: the LSTM sees the mask the embedding's output carries, so its
    output equals the explicitly masked call and differs from the unmasked one."""
    embedding = layers.Embedding(10, 3, mask_zero=True)
    lstm = layers.LSTM(4)
    x = embedding(TOKENS)
    carried = _numpy(lstm(x))
    explicit = _numpy(lstm(np.asarray(ops.convert_to_numpy(x)), mask=TOKENS != 0))
    unmasked = _numpy(lstm(np.asarray(ops.convert_to_numpy(x))))
    np.testing.assert_array_equal(carried, explicit)
    assert not np.allclose(carried, unmasked)


def test_mask_kept_by_identity_while_a_tape_records(backend):
    """Inside a tape the output is not wrapped (a view would be a new, unrecorded value): the mask is
    read with ``get_keras_mask`` and gradients still flow through the masked value."""
    embedding = layers.Embedding(10, 3, mask_zero=True)
    embedding.build((None, 5))
    lstm = layers.LSTM(2)
    with ember.GradientTape() as tape:
        x = embedding(TOKENS)
        loss = ops.sum(lstm(x))
    from ember.layers.keras_mask import get_keras_mask
    np.testing.assert_array_equal(_numpy(get_keras_mask(x)), TOKENS != 0)
    grads = tape.gradient(loss, embedding.trainable_weights)
    assert grads[0] is not None


# --- symbolic masks and custom layers -----------------------------------------------------------
def _my_activation(lib):
    class MyActivation(lib.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.supports_masking = True  # the guide sets it in __init__

        def call(self, inputs):
            return lib.ops.relu(inputs)

    return MyActivation


def _temporal_softmax(lib):
    class TemporalSoftmax(lib.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.supports_masking = True

        def call(self, inputs, mask=None):
            assert mask is not None  # the guide's own check: it holds while the graph is built too
            broadcast_float_mask = lib.ops.expand_dims(lib.ops.cast(mask, "float32"), -1)
            inputs_exp = lib.ops.exp(inputs) * broadcast_float_mask
            inputs_sum = lib.ops.sum(inputs_exp * broadcast_float_mask, axis=-1, keepdims=True)
            return inputs_exp / inputs_sum

    return TemporalSoftmax


def _activation_model(lib):
    inputs = lib.Input(shape=(None,), dtype="int32")
    x = lib.layers.Embedding(input_dim=10, output_dim=4, mask_zero=True)(inputs)
    x = _my_activation(lib)()(x)  # will pass the mask along
    found = x._keras_mask
    outputs = lib.layers.LSTM(3)(x)  # will receive the mask
    return lib.Model(inputs, outputs), found


@needs("keras")
def test_supports_masking_set_in_init_passes_the_mask_to_lstm_as_keras(backend):
    model, found = _activation_model(ember)
    reference, keras_found = _activation_model(keras)
    assert found is not None and tuple(found.shape) == tuple(keras_found.shape) == (None, None)
    assert found.dtype == "bool"
    model.set_weights(reference.get_weights())
    np.testing.assert_allclose(_numpy(model.predict(TOKENS, verbose=0)),
                               _keras_numpy(reference.predict(TOKENS, verbose=0)), **FLOAT32_PAIR)


def _softmax_model(lib):
    inputs = lib.Input(shape=(None,), dtype="int32")
    x = lib.layers.Embedding(input_dim=10, output_dim=4, mask_zero=True)(inputs)
    x = lib.layers.Dense(1)(x)
    return lib.Model(inputs, _temporal_softmax(lib)()(x))


@needs("keras")
def test_call_with_mask_argument_receives_the_mask_when_built_and_run(backend):
    model = _softmax_model(ember)
    reference = _softmax_model(keras)
    model.set_weights(reference.get_weights())
    np.testing.assert_allclose(_numpy(model(TOKENS)), _keras_numpy(reference(TOKENS)), **FLOAT32_PAIR)


@needs("keras")
def test_sequential_custom_layer_between_embedding_and_lstm(backend):
    def build(lib):
        return lib.Sequential([lib.Input((None,), dtype="int32"),
                               lib.layers.Embedding(10, 4, mask_zero=True), _my_activation(lib)(), lib.layers.LSTM(3)])

    model, reference = build(ember), build(keras)
    model.set_weights(reference.get_weights())
    np.testing.assert_allclose(_numpy(model.predict(TOKENS, verbose=0)),
                               _keras_numpy(reference.predict(TOKENS, verbose=0)), **FLOAT32_PAIR)


def _temporal_split(lib):
    class TemporalSplit(lib.layers.Layer):
        """Split the input tensor into 2 tensors along the time dimension."""

        def call(self, inputs):
            return lib.ops.split(inputs, 2, axis=1)

        def compute_mask(self, inputs, mask=None):
            if mask is None:
                return None
            return lib.ops.split(mask, 2, axis=1)

    return TemporalSplit


@needs("keras")
def test_own_compute_mask_splits_the_mask_eagerly_and_symbolically(backend):
    tokens = np.array([[3, 1, 4, 0], [2, 0, 0, 0]])
    masked = layers.Embedding(10, 2, mask_zero=True)(tokens)
    first, second = _temporal_split(ember)()(masked)
    k_masked = keras.layers.Embedding(10, 2, mask_zero=True)(tokens)
    k_first, k_second = _temporal_split(keras)()(k_masked)
    np.testing.assert_array_equal(_numpy(first._keras_mask), _keras_numpy(k_first._keras_mask))
    np.testing.assert_array_equal(_numpy(second._keras_mask), _keras_numpy(k_second._keras_mask))
    # Symbolic: each half's mask is a (None, 2) boolean tensor; a model can output it.
    inputs = ember.Input((4,), dtype="int32")
    halves = _temporal_split(ember)()(layers.Embedding(10, 2, mask_zero=True)(inputs))
    assert [h._keras_mask.shape for h in halves] == [(None, 2), (None, 2)]
    model = ember.Model(inputs, [halves[0]._keras_mask, halves[1]._keras_mask])
    out = model(tokens)
    np.testing.assert_array_equal(_numpy(out[0]), tokens[:, :2] != 0)
    np.testing.assert_array_equal(_numpy(out[1]), tokens[:, 2:] != 0)


def test_symbolic_mask_feeds_a_later_layer_explicitly(backend):
    """``lstm(x, mask=x._keras_mask)`` in a functional graph equals the implicit propagation."""
    inputs = ember.Input((None,), dtype="int32")
    x = layers.Embedding(10, 3, mask_zero=True)(inputs)
    dense = layers.Dense(3)(x)
    lstm = layers.LSTM(2)
    explicit = ember.Model(inputs, lstm(dense, mask=x._keras_mask))
    implicit = ember.Model(inputs, lstm(dense))
    np.testing.assert_array_equal(_numpy(explicit(TOKENS)), _numpy(implicit(TOKENS)))


def test_layer_without_masking_support_gives_no_mask(backend):
    inputs = ember.Input((None,), dtype="int32")
    x = layers.Embedding(10, 3, mask_zero=True)(inputs)
    assert layers.Flatten()(layers.Dense(2)(x))._keras_mask is None
    assert layers.Dense(2)(x)._keras_mask is not None  # Dense passes a mask on (as Keras)


# --- several positional inputs ---------------------------------------------------------------------
def _endpoint(lib):
    class LogisticEndpoint(lib.layers.Layer):
        def __init__(self, name=None):
            super().__init__(name=name)
            self.loss_fn = lib.losses.BinaryCrossentropy(from_logits=True)

        def call(self, targets, logits, sample_weights=None):
            loss = self.loss_fn(targets, logits, sample_weights)
            self.add_loss(loss)
            return lib.ops.softmax(logits)

    return LogisticEndpoint


def _endpoint_model(lib):
    inputs = lib.Input(shape=(3,), name="inputs")
    targets = lib.Input(shape=(10,), name="targets")
    logits = lib.layers.Dense(10)(inputs)
    predictions = _endpoint(lib)(name="predictions")(targets, logits)
    return lib.Model(inputs=[inputs, targets], outputs=predictions)


@needs("keras")
def test_endpoint_layer_with_two_positional_inputs_trains_as_keras(backend):
    rng = np.random.default_rng(0)
    data = {"inputs": rng.random((6, 3)).astype("float32"), "targets": rng.random((6, 10)).astype("float32")}
    model, reference = _endpoint_model(ember), _endpoint_model(keras)
    model.set_weights(reference.get_weights())
    np.testing.assert_allclose(_numpy(model(data)), _keras_numpy(reference(data)), **FLOAT32_PAIR)
    model.compile(optimizer=ember.optimizers.SGD(0.5))
    reference.compile(optimizer=keras.optimizers.SGD(0.5))
    loss = model.fit(data, epochs=2, batch_size=6, verbose=0).history["loss"]
    keras_loss = reference.fit(data, epochs=2, batch_size=6, verbose=0).history["loss"]
    # Two SGD steps on a 3x10 Dense from the same weights: each side's loss and update is a
    # layer-sized float32 computation (FLOAT32), so the pair agrees within FLOAT32_PAIR.
    np.testing.assert_allclose(loss, keras_loss, **FLOAT32_PAIR)
    for value, expected in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(value, expected, **FLOAT32_PAIR)


def test_endpoint_layer_called_eagerly_with_two_arrays(backend):
    endpoint = _endpoint(ember)()
    out = endpoint(np.ones((2, 4), "float32"), np.zeros((2, 4), "float32"))
    np.testing.assert_allclose(_numpy(out), np.full((2, 4), 0.25), **FLOAT32_PAIR)


def test_one_input_call_still_receives_a_list(backend):
    """``call(self, inputs)`` (one required input) gets ``layer([a, b])``'s list, as before."""
    class Sum(layers.Layer):
        def call(self, inputs):
            return inputs[0] + inputs[1]

    a, b = ember.Input((2,)), ember.Input((2,))
    model = ember.Model([a, b], Sum()([a, b]))
    np.testing.assert_allclose(_numpy(model([np.ones((1, 2)), np.ones((1, 2))])), [[2.0, 2.0]])


def test_missing_positional_input_is_a_clear_error(backend):
    with pytest.raises(TypeError, match="predictions"):
        _endpoint(ember)(name="predictions")(ember.Input((10,)))
