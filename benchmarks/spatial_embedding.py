"""Training with the spatial regularizer makes a network local: fraction of weight within a radius.

Trains a SpatialCfC and a SeRSNN (16 neurons on a 4x4 grid in the unit square) on a small
sequence classification task (which of 3 input channels carries the largest mean over 12
steps, with noise), with the spatial penalty off and on, and prints the test accuracy and
the share of ``sum |W_rec|`` on synapses no longer than ``RADIUS`` (adjacent and diagonal
grid neighbours), before and after training.

    python benchmarks/spatial_embedding.py [backend]
"""

from __future__ import annotations

import sys

import numpy as np

import ember
from ember import layers, ops, wirings

RADIUS = 0.5
CLASSES, STEPS, N = 3, 12, 1200


def data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, CLASSES, size=N)
    x = rng.normal(0.0, 1.0, size=(N, STEPS, CLASSES)) * 0.8
    x[np.arange(N), :, y] += 0.6
    return x.astype(np.float32), y


def recurrent_weights(model: ember.Model, kind: str) -> np.ndarray:
    layer = model.layers[0]
    params = model.state["params"][layer.name]
    if kind == "cfc":
        return sum(np.abs(ops.to_numpy(w)) for w in layer.cell.neuron_weights(params).values())
    return ops.to_numpy(layer.cell.masked_kernels(params)[1])


def run(kind: str, strength: float, communicability: bool) -> dict:
    wiring = wirings.SpatialWiring(wirings.FullyConnected(16, 4), positions="grid")
    if kind == "cfc":
        rnn = layers.SpatialCfC(wiring, distance_strength=strength, communicability=communicability, name="rnn")
        head = [layers.Dense(CLASSES, activation="softmax")]
    else:
        rnn = layers.SeRSNN(wiring, distance_strength=strength, communicability=communicability, beta=0.8,
                            threshold=0.5, return_sequences=True, name="rnn")
        head = [layers.GlobalAveragePooling1D(), layers.Dense(CLASSES, activation="softmax")]
    model = ember.Sequential([ember.Input((STEPS, CLASSES)), rnn, *head])
    model.build(seed=0)
    before = wiring.fraction_within(recurrent_weights(model, kind), RADIUS)
    model.compile(optimizer=ember.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy",
                  metrics=["sparse_categorical_accuracy"])
    x, y = data(0)
    model.fit(x, y, epochs=15, batch_size=64, verbose=0)
    xt, yt = data(1)
    accuracy = model.evaluate(xt, yt, verbose=0, return_dict=True)["sparse_categorical_accuracy"]
    after = wiring.fraction_within(recurrent_weights(model, kind), RADIUS)
    return {"before": before, "after": after, "accuracy": float(accuracy)}


if __name__ == "__main__":
    ember.set_backend(sys.argv[1] if len(sys.argv) > 1 else "torch")
    for kind in ("cfc", "snn"):
        for strength, comms in ((0.0, False), (0.01, False), (0.01, True)):
            r = run(kind, strength, comms)
            print(f"{kind}: strength={strength} communicability={comms}: fraction within {RADIUS} "
                  f"{r['before']:.3f} -> {r['after']:.3f}, test accuracy {r['accuracy']:.3f}")
