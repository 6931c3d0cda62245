"""``Model.export``: ONNX (checked with onnxruntime), torch.export (loaded by torch alone) and MLX files.

Reference: the model's own ``predict`` on the backend it was built on; the exported file runs in
another runtime (onnxruntime; a subprocess that imports only torch or only MLX), at a batch size
other than the traced one (2). Each layer family exports once (ONNX export costs ~0.5 s), built on
a different backend in turn, so the weights move to torch from every backend; the Dense model and
the error cases run on every backend.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember import backends, layers, ops, wirings
from tests.tolerances import FLOAT32_PAIR

onnxruntime = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")
pytest.importorskip("torch")

BATCH = 5  # != the traced batch size (2): the batch dimension is dynamic
RNG = np.random.default_rng(0)


def _perturbed(model):
    """Non-trivial weights (BatchNorm's moving statistics off 0/1, biases off 0): a file that lost a
    weight or used the training path differs from the model."""
    weights = []
    for variable, value in zip(model.weights, model.get_weights()):
        value = np.asarray(value)
        noise = RNG.uniform(-0.3, 0.3, value.shape).astype(value.dtype)
        weights.append(np.abs(value) + 0.5 + noise if "variance" in variable.path else value + noise)
    model.set_weights(weights)
    return model


def _dense():
    return ember.Sequential([ember.Input((6,)), layers.Dense(5, activation="relu"), layers.Dropout(0.5),
                             layers.Dense(3, activation="softmax")], name="mlp")


def _conv1d_norm():
    return ember.Sequential([ember.Input((8, 3)), layers.Conv1D(4, 3, padding="same", activation="relu"),
                             layers.MaxPooling1D(2), layers.LayerNormalization(), layers.BatchNormalization(),
                             layers.Conv1D(2, 2), layers.GlobalAveragePooling1D()], name="conv1d_norm")


def _conv2d():
    return ember.Sequential([ember.Input((6, 6, 2)), layers.Conv2D(3, 3, activation="relu"),
                             layers.BatchNormalization(), layers.AveragePooling2D(2), layers.Flatten(),
                             layers.Dense(2)], name="conv2d")


def _attention():
    x = ember.Input((4, 6), name="tokens")
    y = layers.MultiHeadAttention(num_heads=2, key_dim=3, name="mha")(x, x)
    return ember.Model(x, layers.GlobalAveragePooling1D()(y), name="attention")


def _rnn():
    return ember.Sequential([ember.Input((3, 3)), layers.LSTM(4, return_sequences=True), layers.GRU(3)],
                            name="rnn")


def _cfc():
    return ember.Sequential([ember.Input((2, 2)), layers.CfC(wirings.FullyConnected(3, 1))], name="cfc")


def _ltc():
    return ember.Sequential([ember.Input((2, 2)), layers.LTC(4, ode_unfolds=1)], name="ltc")


def _two_inputs():
    """Two inputs (floats, token ids into an Embedding), two outputs."""
    a, tokens = ember.Input((3,), name="a"), ember.Input((5,), dtype="int32", name="tokens")
    embedded = layers.GlobalAveragePooling1D()(layers.Embedding(10, 4)(tokens))
    merged = layers.Concatenate()([layers.Dense(2)(a), embedded])
    return ember.Model([a, tokens], [layers.Dense(2, name="head")(merged), layers.Add()([a, a])], name="two")


# family -> (model factory, backend it is built on): every backend moves weights to torch for some.
FAMILIES = {
    "conv1d_norm": (_conv1d_norm, "numpy"), "conv2d": (_conv2d, "torch"), "attention": (_attention, "mlx"),
    "rnn": (_rnn, "torch"), "cfc": (_cfc, "numpy"), "ltc": (_ltc, "mlx"), "two_inputs": (_two_inputs, "mlx"),
}


def _inputs(model, batch=BATCH):
    arrays = []
    for tensor in model.inputs:
        shape = (batch, *tensor.shape[1:])
        if tensor.dtype.startswith("int"):
            arrays.append(RNG.integers(0, 10, shape).astype(tensor.dtype))
        else:
            arrays.append(RNG.standard_normal(shape).astype(tensor.dtype))
    return arrays


def _predicted(model, arrays):
    outputs = model.predict(arrays if len(arrays) > 1 else arrays[0], verbose=0)
    return [np.asarray(o) for o in (outputs if isinstance(outputs, list) else [outputs])]


def _onnx_outputs(path, arrays):
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, {spec.name: array for spec, array in zip(session.get_inputs(), arrays)})


def _installed(backend):
    """``backend``, or NumPy where it is not installed (an export then crosses from NumPy instead)."""
    return backend if backends.is_installed(backend) else "numpy"


def _built(factory, backend):
    with backends.using_backend(_installed(backend)):
        model = factory()
        model.build()
        return _perturbed(model)


def _check(got, expected, **tolerance):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, **tolerance)


def test_dense_onnx_every_backend(backend, tmp_path):
    model = _perturbed(_dense())
    model.build()
    arrays = _inputs(model)
    path = str(tmp_path / "mlp.onnx")
    model.export(path, format="onnx", verbose=False)
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == [model.inputs[0].name]
    assert isinstance(session.get_inputs()[0].shape[0], str)  # a symbolic (dynamic) batch dimension
    _check(_onnx_outputs(path, arrays), _predicted(model, arrays), **FLOAT32_PAIR)
    assert backends.get_backend() == backend  # the active backend is restored


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_onnx(family, tmp_path):
    factory, built_on = FAMILIES[family]
    model = _built(factory, built_on)
    path = str(tmp_path / f"{family}.onnx")
    model.export(path, format="onnx", verbose=False)
    with backends.using_backend(_installed(built_on)):
        arrays = _inputs(model)
        expected = _predicted(model, arrays)
    _check(_onnx_outputs(path, arrays), expected, **FLOAT32_PAIR)


def _run_isolated(script, tmp_path):
    """Run ``script`` in a fresh interpreter; it must not import Ember."""
    code = textwrap.dedent(script) + "\nimport sys\nassert not any(m.startswith('ember') for m in sys.modules)\n"
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, env={**os.environ, "PYTHONPATH": "", "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-3000:]


def test_torch_export_loads_with_torch_alone(tmp_path):
    cases = {"rnn": (_rnn, "mlx"), "two": (_two_inputs, "numpy")}
    expected = {}
    for name, (factory, built_on) in cases.items():
        model = _built(factory, built_on)
        model.export(str(tmp_path / f"{name}.pt2"), format="torch", verbose=False)
        with backends.using_backend(_installed(built_on)):
            arrays = _inputs(model)
            expected[name] = _predicted(model, arrays)
        for i, array in enumerate(arrays):
            np.save(tmp_path / f"{name}_in{i}.npy", array)
    _run_isolated(f"""
        import glob, numpy as np, torch
        for name in {sorted(cases)!r}:
            program = torch.export.load(name + ".pt2")
            inputs = [torch.from_numpy(np.load(f)) for f in sorted(glob.glob(name + "_in*.npy"))]
            outputs = program.module()(*inputs)
            for i, out in enumerate(outputs):
                np.save(f"{{name}}_out{{i}}.npy", out.detach().numpy())
        """, tmp_path)
    for name, outputs in expected.items():
        got = [np.load(tmp_path / f"{name}_out{i}.npy") for i in range(len(outputs))]
        _check(got, outputs, **FLOAT32_PAIR)


@pytest.mark.skipif(not backends.is_installed("mlx"), reason="MLX is not installed (pip install \"ember[mlx]\")")
def test_mlx_export_loads_with_mlx_alone(tmp_path):
    cases = {"mlp": (_dense, "torch"), "conv2d": (_conv2d, "numpy"), "two": (_two_inputs, "mlx")}
    expected = {}
    for name, (factory, built_on) in cases.items():
        model = _built(factory, built_on)
        model.export(str(tmp_path / f"{name}.mlxfn"), format="mlx", verbose=False, batch_sizes=(1, BATCH))
        with backends.using_backend(built_on):
            arrays = _inputs(model)
            expected[name] = _predicted(model, arrays)
        for i, array in enumerate(arrays):
            np.save(tmp_path / f"{name}_in{i}.npy", array)
    _run_isolated(f"""
        import glob, numpy as np, mlx.core as mx
        for name in {sorted(cases)!r}:
            function = mx.import_function(name + ".mlxfn")
            inputs = [mx.array(np.load(f)) for f in sorted(glob.glob(name + "_in*.npy"))]
            for i, out in enumerate(function(*inputs)):
                np.save(f"{{name}}_out{{i}}.npy", np.array(out))
            try:
                function(*[mx.zeros((3, *x.shape[1:]), dtype=x.dtype) for x in inputs])
            except ValueError as error:
                assert "No imported function found" in str(error)
            else:
                raise AssertionError("a batch size that was not traced must be refused")
        """, tmp_path)
    for name, outputs in expected.items():
        got = [np.load(tmp_path / f"{name}_out{i}.npy") for i in range(len(outputs))]
        _check(got, outputs, **FLOAT32_PAIR)


@pytest.mark.skipif(not backends.is_installed("mlx"), reason="MLX is not installed (pip install \"ember[mlx]\")")
def test_mlx_shapeless_is_checked(tmp_path):
    """Dense runs MLX's addmm, whose shapeless trace keeps the traced batch size of its bias
    broadcast: the check at another batch size refuses the file instead of writing a wrong one."""
    model = _built(_dense, "mlx")
    path = tmp_path / "mlp.mlxfn"
    with pytest.raises(ValueError, match="shapeless MLX trace does not reproduce the model"):
        model.export(str(path), format="mlx", verbose=False, shapeless=True)
    assert not path.exists()
    model = _built(lambda: ember.Sequential([ember.Input((3,)), layers.Activation("tanh")]), "mlx")
    model.export(str(path), format="mlx", verbose=False, shapeless=True)
    assert path.exists()


# --- errors ---------------------------------------------------------------------------------------
def test_unknown_and_tensorflow_formats(backend, tmp_path):
    model = _dense()
    with pytest.raises(ValueError, match=r"unknown format 'keras'; supported formats: \['onnx', 'torch', 'mlx'\]"):
        model.export(str(tmp_path / "m"), format="keras")
    with pytest.raises(NotImplementedError, match="TensorFlow, which is not a dependency.*format='onnx'"):
        model.export(str(tmp_path / "m"))  # Keras's default format
    with pytest.raises(ValueError, match=r"format='torch' needs a filepath ending in '\.pt2'"):
        model.export(str(tmp_path / "m.onnx"), format="torch")
    with pytest.raises(ValueError, match=r"format='mlx' needs a filepath ending in '\.mlxfn'"):
        model.export(str(tmp_path / "m.onnx"), format="mlx")
    with pytest.raises(TypeError, match=r"unknown keyword arguments \['shapeless'\] for format='onnx'"):
        model.export(str(tmp_path / "m.onnx"), format="onnx", shapeless=True)
    with pytest.raises(TypeError, match="filepath must be a str or os.PathLike, received int"):
        model.export(3, format="onnx")
    with pytest.raises(ValueError, match=r"batch_sizes must be positive ints.*received \(0,\)"):
        model.export(str(tmp_path / "m.mlxfn"), format="mlx", batch_sizes=(0,))
    with pytest.raises(TypeError, match=r"input_signature leaf 0 must be an ember.Input tensor.*received 3"):
        model.export(str(tmp_path / "m.onnx"), format="onnx", input_signature=[3])
    assert os.listdir(tmp_path) == []


def test_untraceable_layer_is_named(backend, tmp_path):
    """A layer that reads a value on the host cannot be traced: the error names it."""
    host_scale = layers.Lambda(lambda x: x * float(ops.convert_to_numpy(ops.max(x))), name="host_scale")
    model = ember.Sequential([ember.Input((3,)), layers.Dense(2), host_scale])
    model.build()
    before = {key: np.asarray(ops.convert_to_numpy(v)) for key, v in model.state["params"]["dense"].items()}
    path = tmp_path / "m.onnx"
    with pytest.raises(RuntimeError, match=r"layer 'host_scale' \(Lambda\) cannot be traced"):
        model.export(str(path), format="onnx", verbose=False)
    assert not path.exists() and backends.get_backend() == backend
    for key, value in model.state["params"]["dense"].items():  # the model is unchanged, still usable
        np.testing.assert_array_equal(ops.convert_to_numpy(value), before[key])
    assert tuple(ops.shape(model(np.ones((2, 3), "float32")))) == (2, 2)  # eager: MLX's predict compiles


def test_dynamic_time_steps_need_a_fixed_signature(tmp_path):
    """A recurrent layer unrolls over its time steps: a None time axis cannot stay dynamic, the error
    says so, and an input_signature with the length fixed (the batch still dynamic) exports."""
    model = _built(lambda: ember.Sequential([ember.Input((None, 3)), layers.GRU(2)]), "numpy")
    with pytest.raises(ValueError, match=r"format='mlx' traces fixed shapes.*axis 1 is None"):
        model.export(str(tmp_path / "m.mlxfn"), format="mlx")
    with pytest.raises(ValueError, match=r"forward fixes a dimension that is None.*pass input_signature"):
        model.export(str(tmp_path / "m.pt2"), format="torch")
    assert os.listdir(tmp_path) == []
    model.export(str(tmp_path / "m.pt2"), format="torch", verbose=False, input_signature=ember.Input((4, 3)))
    import torch  # the test module skips without torch (importorskip above)

    program = torch.export.load(str(tmp_path / "m.pt2"))
    x = RNG.standard_normal((BATCH, 4, 3)).astype("float32")
    got = program.module()(torch.from_numpy(x))
    _check([got[0].numpy()], _predicted(model, [x]), **FLOAT32_PAIR)


def test_unbuilt_subclass_needs_shapes(tmp_path):
    class Net(ember.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(2)

        def call(self, x):
            return self.dense(x)

    with pytest.raises(ValueError, match="input shapes are not known yet"):
        Net().export(str(tmp_path / "m.onnx"), format="onnx")
