"""Tutorial 09 - A spiking neuron layer trained with ``fit`` through a surrogate gradient.

What you learn:
    * ``@ember.custom_gradient``: a function returning ``(outputs, grad_fn)``; the forward
      pass is exact (a Heaviside step: the neuron spikes or it does not) while the backward
      pass uses a smooth *surrogate* derivative, which is what makes spiking networks
      trainable by gradient descent (Neftci, Mostafa & Zenke 2019; the "fast sigmoid"
      surrogate of SuperSpike, Zenke & Ganguli 2018);
    * a custom layer with state that evolves over time steps: leaky integrate-and-fire
      (LIF) neurons. Each step the membrane potential leaks, integrates its input current
      and, when it crosses the threshold, emits a spike and is reset;
    * the custom gradient composes with everything that differentiates: ``model.fit``
      (MLX's compiled step, torch's fused step, NumPy's tape), ``GradientTape`` and
      ``ember.value_and_grad``.

The task: scikit-learn's 8x8 digits. Each image is presented for ``T`` time steps as a
constant input current (rate coding); a layer of LIF neurons spikes; a ``Dense`` readout
classifies the spike counts.

Run it::

    python tutorials/09_spiking_surrogate.py [--backend numpy|torch|mlx] [--fast] [--plot DIR]

Expected: loss ~1.1 -> ~0.03 in 15 epochs, test accuracy ~0.97; in fast mode (3 epochs)
loss ~0.18, accuracy ~0.95. Without the surrogate the step's derivative is zero everywhere and nothing learns.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import ember
from ember import layers, ops

from _common import parse_args, print_results

SURROGATE_SLOPE = 5.0  # how sharp the fast-sigmoid surrogate is around the threshold


# --- 1. The spike function with a surrogate gradient ---------------------------------------------
@ember.custom_gradient
def spike(v):
    """Heaviside(v) forward; d/dv ~= 1 / (1 + slope * |v|)^2 backward (fast sigmoid)."""
    def grad_fn(upstream):
        return ops.divide(upstream, ops.square(ops.add(ops.multiply(ops.abs(v), SURROGATE_SLOPE), 1.0)))

    return ops.cast(ops.greater(v, 0.0), v.dtype), grad_fn


# --- 2. A layer of leaky integrate-and-fire neurons -----------------------------------------------
@ember.saving.register_serializable(package="tutorials")
class LIFSpiking(layers.DeclarativeLayer):
    """``units`` LIF neurons driven for ``steps`` time steps by ``x @ kernel + bias``; returns spike rates."""

    units: int
    steps: int = 8
    decay: float = 0.8       # membrane leak per step
    threshold: float = 1.0

    def weight_specs(self, input_shape=None):
        fan_in = None if input_shape is None else input_shape[-1]
        return [layers.WeightSpec("kernel", (fan_in, self.units), "glorot_uniform"),
                layers.WeightSpec("bias", (self.units,), ember.initializers.Constant(0.5))]

    def call(self, params, inputs):
        current = ops.add(ops.matmul(inputs, params["kernel"]), params["bias"])
        v = ops.zeros_like(current)
        count = ops.zeros_like(current)
        for _ in range(self.steps):
            v = ops.add(ops.multiply(v, self.decay), current)       # leak and integrate
            s = spike(ops.subtract(v, self.threshold))              # fire
            v = ops.multiply(v, ops.subtract(1.0, s))               # reset the neurons that fired
            count = ops.add(count, s)
        return ops.divide(count, float(self.steps))                # firing rate in [0, 1]

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)


def main(argv=None):
    args = parse_args(argv, "Tutorial 09: a spiking (LIF) layer trained with fit through a surrogate gradient.")
    ember.clear_session()

    # --- 3. Data ---------------------------------------------------------------------------------
    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")  # pixel intensities in [0, 1]: the input currents
    x_train, x_test, y_train, y_test = train_test_split(
        x, digits.target, test_size=0.25, random_state=0, stratify=digits.target)

    # --- 4. Model and training -------------------------------------------------------------------
    model = ember.Sequential([
        ember.Input((64,)),
        LIFSpiking(64, steps=8, name="lif"),
        layers.Dense(10),
    ], name="spiking_digits")
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.Adam(learning_rate=0.01),
                  loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    epochs = 3 if args.fast else 15
    start = time.perf_counter()
    history = model.fit(x_train, y_train, epochs=epochs, batch_size=32, verbose=2)
    seconds = time.perf_counter() - start
    test_loss, test_accuracy = model.evaluate(x_test, y_test, verbose=0)

    # --- 5. What the surrogate buys: the gradient of the step itself is zero ----------------------
    v = ops.convert_to_tensor(np.linspace(-1.0, 1.0, 5).astype("float32"))
    surrogate = ops.to_numpy(ember.grad(lambda v: ops.sum(spike(v)))(v))
    print("spike'(v) by the surrogate at v = -1, -0.5, 0, 0.5, 1:", ", ".join(f"{g:.4f}" for g in surrogate))
    lif = model.layers[0]
    rates, _ = lif.apply({"params": model.state["params"][lif.name], "buffers": {}}, ops.convert_to_tensor(x_test))
    mean_firing_rate = float(np.mean(ops.to_numpy(rates)))

    if args.plot is not None:
        from ember.utils import plot_history  # needs matplotlib: pip install "ember[plot]"

        print("wrote", plot_history(history, args.plot / "09_history.png", title="09 spiking digits"))

    results = {
        "backend": args.backend,
        "epochs": epochs,
        "first_loss": float(history.history["loss"][0]),
        "final_loss": float(history.history["loss"][-1]),
        "test_accuracy": float(test_accuracy),
        "mean_firing_rate": mean_firing_rate,
        "surrogate_at_zero": float(surrogate[2]),
        "seconds": seconds,
    }
    print_results("09 spiking surrogate", results)
    return results


if __name__ == "__main__":
    main()
