"""Models and custom objects shared by the checkpoint tests.

``make_model()`` builds a small functional model whose state holds every dtype the issue
names: float32 (Dense), float16 and bfloat16 (Dense with that dtype), float64 (Dense; MLX
supports it on the CPU), and int32 and bool buffers (the registered custom layer ``Gate``).
"""

from __future__ import annotations

import numpy as np
import optree

import ember
from ember import layers, ops
from ember.layers import DeclarativeLayer
from ember.saving import register_serializable


@register_serializable(package="tests")
class Gate(DeclarativeLayer):
    """A custom layer: scales by a float32 param, zeroes features where the bool buffer ``keep`` is False,
    and adds an int32 buffer ``offset`` (so both buffers change the outputs)."""

    shift: float = 0.0

    def build(self, input_shape, seed=None):
        n = input_shape[-1]
        return self.make_state(
            params={"scale": ops.ones((n,), dtype="float32")},
            buffers={"keep": ops.convert_to_tensor(np.ones((n,), dtype=bool)),
                     "offset": ops.zeros((n,), dtype="int32")},
        )

    def apply(self, state, inputs, *, training=False, rng=None):
        params, buffers = state["params"], state["buffers"]
        keep = ops.cast(buffers["keep"], "float32")
        out = ops.add(ops.multiply(ops.multiply(inputs, params["scale"]), keep), ops.cast(buffers["offset"], "float32"))
        return ops.add(out, self.shift), state

    def compute_output_shape(self, input_shape):
        return input_shape


def make_model(name: str = "mixed") -> ember.Model:
    inputs = ember.Input((4,), name="x")
    hidden = layers.Dense(6, activation="tanh", name="hidden")(inputs)
    gated = Gate(shift=0.25, name="gate")(hidden)
    outputs = [
        layers.Dense(3, name="f32")(gated),
        layers.Dense(3, dtype="float16", name="f16")(gated),
        layers.Dense(3, dtype="bfloat16", name="bf16")(gated),
        layers.Dense(3, dtype="float64", name="f64")(gated),
    ]
    return ember.Model(inputs, outputs, name=name)


def build_state(model: ember.Model, seed: int = 0) -> dict:
    """Build ``model`` and give the buffers values no initializer would produce (so a test sees that
    they come from the file)."""
    state = model.build(seed=seed)
    buffers = dict(state["buffers"])
    buffers["gate"] = {"keep": ops.convert_to_tensor(np.array([True, False, True, True, False, True])),
                       "offset": ops.convert_to_tensor(np.array([0, 1, -2, 3, 0, 7], dtype=np.int32))}
    state = {"params": state["params"], "buffers": buffers}
    model.state = state
    return state


def to_numpy_tree(tree):
    """Every leaf as NumPy (bfloat16 stays ``ml_dtypes.bfloat16``), on any backend."""
    from ember.saving._arrays import to_host

    return optree.tree_map(lambda a: np.array(to_host(a)[0]), tree)


def assert_trees_bit_equal(actual, expected):
    """Same structure, same dtypes, same bits."""
    paths_a, leaves_a, spec_a = optree.tree_flatten_with_path(actual)
    paths_e, leaves_e, spec_e = optree.tree_flatten_with_path(expected)
    assert paths_a == paths_e
    for path, a, e in zip(paths_a, leaves_a, leaves_e):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype, (path, a.dtype, e.dtype)
        assert a.shape == e.shape, (path, a.shape, e.shape)
        assert a.tobytes() == e.tobytes(), path


def predictions(model, x):
    return [np.array(ops.to_numpy(y)) for y in model(x)]
