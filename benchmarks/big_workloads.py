"""The transformer-era workloads of ``benchmarks/training.py``: W4 (GPT-mini), W5 (ResNet-18-style), W5V (ViT-tiny).

Each workload is written four times with the same architecture: Ember (functional API),
raw torch (``nn.Module``, ``F.scaled_dot_product_attention``), raw MLX (``mlx.nn``,
``mx.fast.scaled_dot_product_attention``, the step under ``mx.compile``) and Keras 3 (torch
backend). ``training.py`` times them side by side in one process, as W1-W3.

* W4 GPT-mini: token + position embedding, ``blocks`` pre-LayerNorm causal decoder blocks
  (``heads`` heads, MLP 4x with GELU), a final LayerNorm and the vocabulary head; next-token
  sparse cross-entropy on every position. torch: d=256, 4 heads, 4 blocks, sequence 128,
  vocabulary 2,048, batch 16. MLX and NumPy run a smaller size (d=64, 2 blocks, sequence 32,
  vocabulary 256, batch 8): MLX's Linux CPU wheel has a reference BLAS (DESIGN.md), NumPy no
  fused kernels; compare them only with their own raw column.
* W5 ResNet-18-style: 3x3 conv stem (64), four stages of two basic blocks (64, 128, 256, 512
  channels, stride 2 from the second stage, 1x1 conv + BatchNorm shortcuts), global average
  pooling, Dense(10), on 32x32x3, batch 64 (MLX/NumPy: widths / 4, batch 16).
* W5V ViT-tiny: patch 4 (a 4x4 stride-4 convolution), d=192, 3 heads, 6 pre-LN blocks, MLP 4x,
  learned position embedding, mean pooling, Dense(10), on 32x32x3, batch 64 (MLX/NumPy: d=64,
  2 blocks, batch 16).
"""

from __future__ import annotations

import functools
import sys

import numpy as np

BIG = ("W4", "W5", "W5V")
FULL = {"W4": {"vocab": 2048, "seq": 128, "d": 256, "heads": 4, "blocks": 4, "batch": 16},
        "W5": {"width": 64, "batch": 64},
        "W5V": {"d": 192, "heads": 3, "blocks": 6, "batch": 64}}
SMALL = {"W4": {"vocab": 256, "seq": 32, "d": 64, "heads": 4, "blocks": 2, "batch": 8},
         "W5": {"width": 16, "batch": 16},
         "W5V": {"d": 64, "heads": 2, "blocks": 2, "batch": 16}}


def size(workload: str, backend: str) -> dict:
    return FULL[workload] if backend == "torch" else SMALL[workload]


def make_data(workload: str, backend: str, steps: int) -> tuple:
    rng = np.random.default_rng(0)
    cfg = size(workload, backend)
    batch = cfg["batch"]
    if workload == "W4":
        x = rng.integers(0, cfg["vocab"], size=(batch * steps, cfg["seq"])).astype(np.int32)
        y = rng.integers(0, cfg["vocab"], size=(batch * steps, cfg["seq"])).astype(np.int64)
        return x, y, batch
    x = rng.normal(size=(batch * steps, 32, 32, 3)).astype(np.float32)
    return x, rng.integers(0, 10, size=len(x)).astype(np.int64), batch


# ------------------------------------------------------------------------------------ Ember
@functools.cache
def _ember_position_embedding():
    import ember
    from ember import layers, ops

    class PositionEmbedding(layers.DeclarativeLayer):
        """Adds a learned ``(length, dim)`` table to ``(batch, length, dim)`` inputs."""

        length: int

        def build(self, input_shape, seed=None):
            init = ember.initializers.get("random_normal")
            return self.make_state(params={"embeddings": init((self.length, input_shape[-1]), self.variable_dtype,
                                                              seed)})

        def call(self, params, inputs):
            return ops.add(inputs, params["embeddings"])

        def compute_output_shape(self, input_shape):
            return input_shape

    return PositionEmbedding


def _ember_block(x, d: int, heads: int, causal: bool):
    from ember import layers

    h = layers.LayerNormalization(epsilon=1e-5)(x)
    h = layers.MultiHeadAttention(heads, d // heads)(h, h, use_causal_mask=causal)
    x = layers.Add()([x, h])
    h = layers.LayerNormalization(epsilon=1e-5)(x)
    h = layers.Dense(4 * d, activation="gelu")(h)
    return layers.Add()([x, layers.Dense(d)(h)])


@functools.cache
def _ember_remat_wrapper():
    import ember
    from ember import layers

    class Rematerialized(layers.DeclarativeLayer):
        """Runs ``layer`` under ``ember.remat``: its activations are recomputed in the backward pass."""

        layer: object

        def compute_output_shape(self, input_shape):
            return self.layer.compute_output_shape(input_shape)

        def build(self, input_shape, seed=None):
            return self.layer.build(input_shape, seed)

        def apply(self, state, inputs, *, training=False, rng=None):
            def forward(params, x):
                return self.layer.apply({"params": params, "buffers": state["buffers"]}, x, training=training,
                                        rng=rng)[0]

            return ember.remat(forward)(state["params"], inputs), state

    return Rematerialized


def ember_model(workload: str, backend: str, remat: bool = False):
    """The Ember model (uncompiled) of ``workload``; ``remat``: each W4 decoder block under ``ember.remat``."""
    import ember
    from ember import layers

    cfg = size(workload, backend)
    if workload == "W4":
        tokens = ember.Input((cfg["seq"],), dtype="int32")
        x = layers.Embedding(cfg["vocab"], cfg["d"])(tokens)
        x = _ember_position_embedding()(cfg["seq"])(x)
        for _ in range(cfg["blocks"]):
            if remat:  # the block as a functional sub-model, wrapped
                inner = ember.Input((cfg["seq"], cfg["d"]))
                block = ember.Model(inner, _ember_block(inner, cfg["d"], cfg["heads"], causal=True))
                x = _ember_remat_wrapper()(block)(x)
            else:
                x = _ember_block(x, cfg["d"], cfg["heads"], causal=True)
        x = layers.LayerNormalization(epsilon=1e-5)(x)
        return ember.Model(tokens, layers.Dense(cfg["vocab"])(x))
    images = ember.Input((32, 32, 3))
    if workload == "W5V":
        d = cfg["d"]
        x = layers.Conv2D(d, 4, strides=4)(images)
        x = layers.Reshape((64, d))(x)
        x = _ember_position_embedding()(64)(x)
        for _ in range(cfg["blocks"]):
            x = _ember_block(x, d, cfg["heads"], causal=False)
        x = layers.GlobalAveragePooling1D()(layers.LayerNormalization(epsilon=1e-5)(x))
        return ember.Model(images, layers.Dense(10)(x))
    width = cfg["width"]

    def conv_bn(x, filters, kernel, strides=1, relu=True):
        x = layers.Conv2D(filters, kernel, strides=strides, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization(epsilon=1e-5, momentum=0.9)(x)
        return layers.Activation("relu")(x) if relu else x

    x = conv_bn(images, width, 3)
    channels = width
    for stage, filters in enumerate((width, 2 * width, 4 * width, 8 * width)):
        for block in range(2):
            strides = 2 if stage > 0 and block == 0 else 1
            shortcut = x
            if strides != 1 or channels != filters:
                shortcut = conv_bn(x, filters, 1, strides, relu=False)
            h = conv_bn(x, filters, 3, strides)
            h = conv_bn(h, filters, 3, relu=False)
            x = layers.Activation("relu")(layers.Add()([h, shortcut]))
            channels = filters
    x = layers.GlobalAveragePooling2D()(x)
    return ember.Model(images, layers.Dense(10)(x))


# ------------------------------------------------------------------------------ raw torch
def torch_model(workload: str):
    import torch
    import torch.nn.functional as F

    nn = torch.nn
    cfg = FULL[workload]

    class Block(nn.Module):
        def __init__(self, d, heads, causal):
            super().__init__()
            self.heads, self.causal = heads, causal
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            h = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
            x = x + self.out(h.transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    if workload == "W4":
        class GPT(nn.Module):
            def __init__(self):
                super().__init__()
                self.tok = nn.Embedding(cfg["vocab"], cfg["d"])
                self.pos = nn.Parameter(torch.randn(cfg["seq"], cfg["d"]) * 0.05)
                self.blocks = nn.Sequential(*[Block(cfg["d"], cfg["heads"], True) for _ in range(cfg["blocks"])])
                self.ln, self.head = nn.LayerNorm(cfg["d"]), nn.Linear(cfg["d"], cfg["vocab"])

            def forward(self, tokens):
                return self.head(self.ln(self.blocks(self.tok(tokens) + self.pos)))

        model = GPT()
        return model, lambda xb: model(xb).flatten(0, 1), lambda yb: yb.flatten()
    if workload == "W5V":
        class ViT(nn.Module):
            def __init__(self):
                super().__init__()
                d = cfg["d"]
                self.patch = nn.Conv2d(3, d, 4, stride=4)
                self.pos = nn.Parameter(torch.randn(64, d) * 0.05)
                self.blocks = nn.Sequential(*[Block(d, cfg["heads"], False) for _ in range(cfg["blocks"])])
                self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, 10)

            def forward(self, xb):
                x = self.patch(xb.permute(0, 3, 1, 2)).flatten(2).transpose(1, 2) + self.pos
                return self.head(self.ln(self.blocks(x)).mean(1))

        model = ViT()
        return model, model, lambda yb: yb

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.short = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                          if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + self.short(x))

    w = cfg["width"]
    blocks, cin = [], w
    for stage, cout in enumerate((w, 2 * w, 4 * w, 8 * w)):
        for block in range(2):
            blocks.append(Basic(cin, cout, 2 if stage > 0 and block == 0 else 1))
            cin = cout
    model = nn.Sequential(nn.Conv2d(3, w, 3, 1, 1, bias=False), nn.BatchNorm2d(w), nn.ReLU(), *blocks,
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8 * w, 10))
    model = model.to(memory_format=torch.channels_last)
    return model, lambda xb: model(xb.permute(0, 3, 1, 2)), lambda yb: yb


# -------------------------------------------------------------------------------- raw MLX
def mlx_model(workload: str):
    """``(model, forward(xb) -> logits (rows, classes), labels(yb) -> (rows,))`` in mlx.nn."""
    import mlx.core as mx
    import mlx.nn as mnn

    cfg = SMALL[workload]

    class Block(mnn.Module):
        def __init__(self, d, heads, causal):
            super().__init__()
            self.heads, self.causal = heads, causal
            self.ln1, self.ln2 = mnn.LayerNorm(d), mnn.LayerNorm(d)
            self.qkv, self.out = mnn.Linear(d, 3 * d), mnn.Linear(d, d)
            self.fc1, self.fc2 = mnn.Linear(d, 4 * d), mnn.Linear(4 * d, d)

        def __call__(self, x):
            b, t, d = x.shape
            qkv = self.qkv(self.ln1(x)).reshape(b, t, 3, self.heads, d // self.heads).transpose(2, 0, 3, 1, 4)
            h = mx.fast.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], scale=(d // self.heads) ** -0.5,
                                                     mask="causal" if self.causal else None)
            x = x + self.out(h.transpose(0, 2, 1, 3).reshape(b, t, d))
            return x + self.fc2(mnn.gelu(self.fc1(self.ln2(x))))

    if workload == "W4":
        class GPT(mnn.Module):
            def __init__(self):
                super().__init__()
                self.tok = mnn.Embedding(cfg["vocab"], cfg["d"])
                self.pos = mx.random.normal((cfg["seq"], cfg["d"])) * 0.05
                self.blocks = [Block(cfg["d"], cfg["heads"], True) for _ in range(cfg["blocks"])]
                self.ln, self.head = mnn.LayerNorm(cfg["d"]), mnn.Linear(cfg["d"], cfg["vocab"])

            def __call__(self, tokens):
                x = self.tok(tokens) + self.pos
                for block in self.blocks:
                    x = block(x)
                return self.head(self.ln(x))

        model = GPT()
        return model, lambda xb: model(xb).reshape(-1, cfg["vocab"]), lambda yb: yb.reshape(-1)
    if workload == "W5V":
        class ViT(mnn.Module):
            def __init__(self):
                super().__init__()
                d = cfg["d"]
                self.patch = mnn.Conv2d(3, d, 4, stride=4)
                self.pos = mx.random.normal((64, d)) * 0.05
                self.blocks = [Block(d, cfg["heads"], False) for _ in range(cfg["blocks"])]
                self.ln, self.head = mnn.LayerNorm(d), mnn.Linear(d, 10)

            def __call__(self, xb):
                x = self.patch(xb)
                x = x.reshape(x.shape[0], 64, -1) + self.pos
                for block in self.blocks:
                    x = block(x)
                return self.head(self.ln(x).mean(1))

        model = ViT()
        return model, model, lambda yb: yb

    class Basic(mnn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1, self.b1 = mnn.Conv2d(cin, cout, 3, stride, 1, bias=False), mnn.BatchNorm(cout)
            self.c2, self.b2 = mnn.Conv2d(cout, cout, 3, 1, 1, bias=False), mnn.BatchNorm(cout)
            self.short = ([mnn.Conv2d(cin, cout, 1, stride, bias=False), mnn.BatchNorm(cout)]
                          if stride != 1 or cin != cout else [])

        def __call__(self, x):
            s = x
            for layer in self.short:
                s = layer(s)
            return mnn.relu(self.b2(self.c2(mnn.relu(self.b1(self.c1(x))))) + s)

    w = cfg["width"]
    layers_, cin = [mnn.Conv2d(3, w, 3, 1, 1, bias=False), mnn.BatchNorm(w), mnn.ReLU()], w
    for stage, cout in enumerate((w, 2 * w, 4 * w, 8 * w)):
        for block in range(2):
            layers_.append(Basic(cin, cout, 2 if stage > 0 and block == 0 else 1))
            cin = cout
    body, head = mnn.Sequential(*layers_), mnn.Linear(8 * w, 10)
    model = mnn.Sequential(body, head)
    return model, lambda xb: head(mx.mean(body(xb), axis=(1, 2))), lambda yb: yb


# ---------------------------------------------------------------------------------- Keras
def keras_model(workload: str):
    """The Keras 3 (torch backend) model of ``workload``, compiled with Adam(1e-3, eps 1e-7)."""
    import keras
    from keras import layers

    cfg = FULL[workload]

    class PositionEmbedding(layers.Layer):
        def build(self, input_shape):
            self.table = self.add_weight(shape=tuple(input_shape[1:]), initializer="random_normal")

        def call(self, x):
            return x + self.table

    def block(x, d, heads, causal):
        h = layers.LayerNormalization(epsilon=1e-5)(x)
        h = layers.MultiHeadAttention(heads, d // heads)(h, h, use_causal_mask=causal)
        x = layers.Add()([x, h])
        h = layers.Dense(4 * d, activation="gelu")(layers.LayerNormalization(epsilon=1e-5)(x))
        return layers.Add()([x, layers.Dense(d)(h)])

    if workload == "W4":
        tokens = keras.Input((cfg["seq"],), dtype="int32")
        x = PositionEmbedding()(layers.Embedding(cfg["vocab"], cfg["d"])(tokens))
        for _ in range(cfg["blocks"]):
            x = block(x, cfg["d"], cfg["heads"], True)
        model = keras.Model(tokens, layers.Dense(cfg["vocab"])(layers.LayerNormalization(epsilon=1e-5)(x)))
    elif workload == "W5V":
        images = keras.Input((32, 32, 3))
        x = PositionEmbedding()(layers.Reshape((64, cfg["d"]))(layers.Conv2D(cfg["d"], 4, strides=4)(images)))
        for _ in range(cfg["blocks"]):
            x = block(x, cfg["d"], cfg["heads"], False)
        x = layers.GlobalAveragePooling1D()(layers.LayerNormalization(epsilon=1e-5)(x))
        model = keras.Model(images, layers.Dense(10)(x))
    else:
        images = keras.Input((32, 32, 3))

        def conv_bn(x, filters, kernel, strides=1, relu=True):
            x = layers.Conv2D(filters, kernel, strides=strides, padding="same", use_bias=False)(x)
            x = layers.BatchNormalization(epsilon=1e-5, momentum=0.9)(x)
            return layers.Activation("relu")(x) if relu else x

        w = cfg["width"]
        x, channels = conv_bn(images, w, 3), w
        for stage, filters in enumerate((w, 2 * w, 4 * w, 8 * w)):
            for b in range(2):
                strides = 2 if stage > 0 and b == 0 else 1
                shortcut = conv_bn(x, filters, 1, strides, False) if strides != 1 or channels != filters else x
                h = conv_bn(conv_bn(x, filters, 3, strides), filters, 3, relu=False)
                x, channels = layers.Activation("relu")(layers.Add()([h, shortcut])), filters
        model = keras.Model(images, layers.Dense(10)(layers.GlobalAveragePooling2D()(x)))
    model.compile(optimizer=keras.optimizers.Adam(1e-3, epsilon=1e-7),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


# ------------------------------------------------------------- W4's activation memory on torch
def saved_activation_mib(workload: str = "W4") -> dict:
    """MiB of tensors autograd keeps for the backward pass of one training-mode forward on torch (weights
    excluded): W4, W5 or W5V.

    Counted with ``torch.autograd.graph.saved_tensors_hooks`` (each storage once): the raw
    ``nn.Module``, Ember, and for W4 Ember with every decoder block under ``ember.remat`` (the
    checkpoint's own hooks keep only each block's inputs; the backward recomputes one block at a
    time, adding about one block's activations, ``(plain - remat) / blocks``, at its peak). A fixed
    count, unlike peak RSS, which moves by tens of MiB between fresh processes of the same code.
    """
    import optree
    import torch

    import ember

    ember.set_backend("torch")
    x, y, _ = make_data(workload, "torch", 1)
    inputs, labels = torch.from_numpy(x), torch.from_numpy(y)

    def saved(run, weights) -> float:
        weight_storages = {w.untyped_storage().data_ptr() for w in weights}
        storages: dict = {}

        def pack(t):
            if t.untyped_storage().data_ptr() not in weight_storages:
                storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            run()
        return sum(storages.values()) / 2 ** 20

    out = {}
    model, forward, flat = torch_model(workload)
    model.train()
    out["raw"] = saved(lambda: torch.nn.functional.cross_entropy(forward(inputs), flat(labels)),
                       list(model.parameters()))
    loss = ember.losses.SparseCategoricalCrossentropy(from_logits=True)
    for name, remat in (("ember", False), ("ember remat", True)) if workload == "W4" else (("ember", False),):
        model = ember_model(workload, "torch", remat=remat)
        state = model.build(seed=0)
        weights = optree.tree_leaves(state["params"])
        for w in weights:
            w.requires_grad_(True)
        out[name] = saved(lambda m=model, s=state: loss(labels, m.apply(s, inputs, training=True)[0]), weights)
    return out


if __name__ == "__main__":
    for workload in sys.argv[1:] or ["W4"]:
        for label, mib in saved_activation_mib(workload).items():
            print(f"{workload} on torch, {label:12}: {mib:7.1f} MiB saved for the backward pass")
