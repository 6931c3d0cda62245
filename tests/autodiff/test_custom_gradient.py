"""``ember.custom_gradient`` / ``ember.custom_vjp`` on every backend.

References are derivatives written out by hand in NumPy float64: the fast-sigmoid surrogate
of a Heaviside spike, its own derivative (higher order), and a layer whose custom gradient
freezes its kernel inside ``fit`` (the compiled MLX step, the fused torch step, NumPy's tape).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import layers, ops

RTOL, ATOL = 1e-5, 1e-6  # float32 results vs float64 references
SLOPE = 2.0


@ember.custom_gradient
def spike(v):
    def grad_fn(upstream):
        return ops.divide(upstream, ops.square(ops.add(ops.multiply(ops.abs(v), SLOPE), 1.0)))

    return ops.cast(ops.greater(v, 0.0), "float32"), grad_fn


def surrogate(v):
    return 1.0 / (1.0 + SLOPE * np.abs(v)) ** 2


def surrogate_prime(v):  # d/dv of the surrogate: its own derivative, written out
    return -2.0 * SLOPE * np.sign(v) / (1.0 + SLOPE * np.abs(v)) ** 3


V = np.array([-1.5, -0.25, 0.3, 2.0], dtype=np.float32)


def close(actual, expected):
    np.testing.assert_allclose(ops.to_numpy(actual).astype(np.float64), expected, rtol=RTOL, atol=ATOL)


def test_forward_is_the_step_and_the_tape_uses_the_surrogate(backend):
    v = ops.convert_to_tensor(V)
    np.testing.assert_array_equal(ops.to_numpy(spike(v)), (V > 0).astype(np.float32))
    weights = np.array([1.0, 2.0, -3.0, 0.5], dtype=np.float32)
    with ember.GradientTape() as tape:
        tape.watch(v)
        total = ops.sum(ops.multiply(spike(v), ops.convert_to_tensor(weights)))
    close(tape.gradient(total, v), weights * surrogate(V.astype(np.float64)))


def test_value_and_grad_and_ember_tensors(backend):
    v = ember.convert_to_tensor(V)  # an ember.Tensor in, an ember.Tensor out
    assert ember.is_tensor(spike(v))
    value, g = ember.value_and_grad(lambda x: ops.sum(ops.square(spike(x))))(v)
    assert float(ops.to_numpy(value)) == 2.0
    close(g, 2.0 * (V > 0) * surrogate(V.astype(np.float64)))


def test_second_derivative_of_the_surrogate(backend):
    v = ops.convert_to_tensor(V)
    with ember.GradientTape() as outer:
        outer.watch(v)
        with ember.GradientTape() as inner:
            inner.watch(v)
            s = ops.sum(spike(v))
        g = inner.gradient(s, v)
        total = ops.sum(g)
    close(outer.gradient(total, v), surrogate_prime(V.astype(np.float64)))


def test_several_arguments_outputs_and_none_gradients(backend):
    @ember.custom_gradient
    def scaled_pair(x, y, scale):
        def grad_fn(gx, gy):
            # d(x*y)/dx = y, d(x*y)/dy = x; the second output (x + y) is declared to pass nothing to y
            return ops.add(ops.multiply(gx, y), gy), ops.multiply(gx, x), None

        return (ops.multiply(x, y), ops.multiply(ops.add(x, y), scale)), grad_fn

    x = ops.convert_to_tensor(np.array([1.0, 2.0], np.float32))
    y = ops.convert_to_tensor(np.array([3.0, -1.0], np.float32))
    with ember.GradientTape() as tape:
        tape.watch([x, y])
        a, b = scaled_pair(x, y, 10.0)
        total = ops.add(ops.sum(a), ops.sum(ops.multiply(b, 2.0)))
    gx, gy = tape.gradient(total, [x, y])
    close(gx, np.array([3.0, -1.0]) + 2.0)
    close(gy, np.array([1.0, 2.0]))


def test_custom_vjp(backend):
    @ember.custom_vjp
    def cube(x):
        return ops.multiply(ops.square(x), x)

    def fwd(x):
        return cube.fun(x), ops.square(x)

    def bwd(x_squared, upstream):
        return ops.multiply(ops.multiply(upstream, x_squared), 3.0)

    cube.defvjp(fwd, bwd)
    x = ops.convert_to_tensor(np.array([1.0, -2.0, 0.5], np.float32))
    close(cube(x), np.array([1.0, -8.0, 0.125]))
    close(ember.grad(lambda x: ops.sum(cube(x)))(x), 3.0 * np.array([1.0, 4.0, 0.25]))


@ember.custom_gradient
def frozen_matmul(x, kernel):
    """x @ kernel whose gradient reaches x but never the kernel."""
    return ops.matmul(x, kernel), lambda g: (ops.matmul(g, ops.transpose(kernel)), None)


@ember.saving.register_serializable(package="tests")
class FrozenKernelDense(layers.DeclarativeLayer):
    units: int

    def build(self, input_shape, seed=None):
        init = ember.initializers.get("glorot_uniform")
        return self.make_state(params={
            "kernel": init((input_shape[-1], self.units), self.variable_dtype, seed),
            "bias": ops.zeros((self.units,), dtype=self.variable_dtype),
        })

    def call(self, params, inputs):
        return ops.add(frozen_matmul(inputs, params["kernel"]), params["bias"])

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)


def test_fit_uses_the_custom_gradient(backend):
    """Inside fit (MLX: compiled step; torch: fused step) the kernel gets no gradient; the rest trains."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 3)).astype(np.float32)
    y = rng.normal(size=(32, 1)).astype(np.float32)
    model = ember.Sequential([ember.Input((3,)), FrozenKernelDense(4), layers.Dense(1)])
    model.build(seed=1)
    model.compile(optimizer=ember.optimizers.SGD(learning_rate=0.1), loss="mse")
    (kernel, bias), (second_kernel, _) = (layer.get_weights() for layer in model.layers)
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    (kernel_after, bias_after), (second_after, _) = (layer.get_weights() for layer in model.layers)
    np.testing.assert_array_equal(kernel_after, kernel)
    assert not np.array_equal(bias_after, bias)
    assert not np.array_equal(second_after, second_kernel)


def test_bad_definitions_raise_clear_errors(backend):
    x = ops.convert_to_tensor(np.ones(2, np.float32))
    with pytest.raises(TypeError, match="custom_gradient: expected a function"):
        ember.custom_gradient(3)

    @ember.custom_gradient
    def no_pair(x):
        return ops.square(x)

    with pytest.raises(TypeError, match=r"no_pair must return a pair \(outputs, grad_fn\)"):
        no_pair(x)

    @ember.custom_gradient
    def too_many(x):
        return ops.square(x), lambda g: (g, g)

    with pytest.raises(ValueError, match=r"one gradient per positional argument \(1\), received 2"):
        ember.grad(lambda x: ops.sum(too_many(x)))(x)

    undefined = ember.custom_vjp(lambda x: x)
    with pytest.raises(RuntimeError, match="call defvjp"):
        undefined(x)


def test_keras_documented_pattern(backend):
    """The example of keras.ops.custom_gradient's docs, unchanged: grad(*args, upstream=None)."""

    @ember.custom_gradient
    def log1pexp(x):
        e = ops.exp(x)

        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            return ops.multiply(upstream, 1.0 - 1.0 / ops.add(1, e))

        return ops.log(1 + e), grad

    x = np.array([-3.0, 0.0, 30.0], dtype=np.float32)  # d/dx log(1 + e^x) = sigmoid(x)
    g = ember.grad(lambda x: ops.sum(log1pexp(x)))(ops.convert_to_tensor(x))
    np.testing.assert_allclose(ops.to_numpy(g), 1.0 / (1.0 + np.exp(-x.astype(np.float64))), rtol=RTOL, atol=ATOL)
