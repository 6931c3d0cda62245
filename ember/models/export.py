"""``Model.export``: a model's inference forward as an ONNX, ``torch.export`` or MLX function file.

Keras 3's ``model.export(filepath, format=...)``. The file holds the forward pass only
(``model.apply(state, inputs, training=False)``: dropout off, BatchNormalization on its moving
statistics) with the weights inside it, and runs without Ember:

* ``format="onnx"``: ONNX Runtime (``onnxruntime.InferenceSession(path)``); torch's ONNX exporter
  (``torch.onnx.export(..., dynamo=True)``, needs ``onnxscript``) on the ``torch.export`` program;
* ``format="torch"``: a ``.pt2`` ``ExportedProgram`` (``torch.export.load(path).module()(x)``);
* ``format="mlx"``: an ``.mlxfn`` MLX function (``mx.import_function(path)(x)``, a tuple back), one
  fixed-shape trace per batch size of ``batch_sizes`` (MLX's shapeless traces keep shapes computed
  while tracing, and Ember's ops compute shapes in Python; ``shapeless=True`` is checked).

A model built on any backend exports: the ONNX and torch formats move a copy of its weights to torch
(converted bit-exactly through host NumPy, as ``to_backend`` does; the model itself is unchanged) and
trace the forward there; the MLX format does the same on MLX. The flat inputs are the model's inputs
in order (a dict's by sorted key), named after them; the outputs are ``output_0``, ``output_1``, ...
In the ONNX and torch formats a ``None`` dimension of an input is dynamic: the batch dimension always
is (a symbolic dimension in the ONNX file); another one (a sequence length) stays dynamic unless the
forward fixes it (a recurrent layer unrolls over it), which raises a ``ValueError`` asking for a
fixed size in ``input_signature``. A layer whose forward cannot be traced (it reads an array's value
on the host, for example) raises a ``RuntimeError`` naming the layer, its class and the reason.

Example:
    >>> import os, tempfile
    >>> import ember
    >>> from ember import layers
    >>> model = ember.Sequential([ember.Input((3,)), layers.Dense(2)])
    >>> model.export(os.path.join(tempfile.mkdtemp(), "model.onnx"), format="keras")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: Model 'sequential...': export: unknown format 'keras'; supported formats: ['onnx', 'torch', 'mlx']
"""

from __future__ import annotations

import contextlib
import os
import types
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
import optree

from ember import backends, ops
from ember.dtypes import standardize_dtype
from ember.layers.layer import Layer
from ember.saving.writer import atomic_path
from ember.symbolic import SymbolicTensor
from ember.training.backend_check import tree_to_active

SUPPORTED_FORMATS = ("onnx", "torch", "mlx")

# The keyword arguments each format accepts beyond Keras's (filepath, format, verbose, input_signature).
_FORMAT_KWARGS = {
    "onnx": ("opset_version",),
    "torch": ("strict", "dynamic_shapes", "prefer_deferred_runtime_asserts_over_guards",
              "preserve_module_call_signature"),
    "mlx": ("batch_sizes", "shapeless", "metadata"),
}
# The file name ending each format requires (ONNX files may be named freely, as in Keras).
_SUFFIXES = {"torch": ".pt2", "mlx": ".mlxfn"}
# The batch size the MLX file is checked at after export (the trace runs at 2).
_CHECK_BATCH = 3


class Spec(NamedTuple):
    """One flat input: name, shape (``None``: dynamic) and dtype name."""

    name: str
    shape: tuple
    dtype: str


def export_model(model: Any, filepath: Any, format: str = "tf_saved_model", verbose: bool | None = None,
                 input_signature: Any = None, **kwargs: Any) -> None:
    """Write ``model``'s inference forward to ``filepath`` in ``format`` (see the module docstring).

    Args:
        model: a built (or buildable: known input shapes) Ember model, on any backend.
        filepath: ``str`` or ``os.PathLike``; ``format="torch"`` needs a ``.pt2`` name, ``"mlx"`` an
            ``.mlxfn`` one.
        format: ``"onnx"``, ``"torch"`` or ``"mlx"``. Keras's default ``"tf_saved_model"`` raises
            ``NotImplementedError`` (TensorFlow is not a dependency of Ember).
        verbose: print where the file was written (Keras's default: True).
        input_signature: the inputs to trace, in the structure the model takes (one, a list, a
            dict): ``ember.Input`` tensors, arrays or objects with ``shape`` and ``dtype``;
            ``None`` dimensions are dynamic. Default: the model's inputs.
        **kwargs: ``opset_version`` (onnx); ``strict``, ``dynamic_shapes``,
            ``prefer_deferred_runtime_asserts_over_guards``, ``preserve_module_call_signature``
            (torch: passed to ``torch.export.export``); ``batch_sizes`` (mlx, default ``(1,)``: one
            fixed-shape trace per batch size in the file, which refuses other shapes), ``shapeless``
            (mlx, default False: one trace for any shape, checked at another batch size, since MLX's
            shapeless traces keep shapes computed while tracing), ``metadata`` (mlx: a string saved in
            the file, ``mx.import_function(path, return_metadata=True)``).

    Raises:
        ValueError: an unknown format, a bad file name, an unbuilt model of unknown input shapes, a
            dynamic dimension the forward fixes, an MLX shapeless trace that does not reproduce the model.
        TypeError: an unknown keyword argument for the format.
        NotImplementedError: ``format="tf_saved_model"``.
        RuntimeError: a layer that cannot be traced (the message names it).
        ember.backends.BackendNotAvailableError: torch (onnx, torch) or MLX (mlx) is not installed.
    """
    fmt = _checked_format(model, format)
    path = _checked_path(model, filepath, fmt)
    unknown = sorted(set(kwargs) - set(_FORMAT_KWARGS[fmt]))
    if unknown:
        raise TypeError(f"Model {model.name!r}: export: unknown keyword arguments {unknown} for format={fmt!r}; "
                        f"accepted: {list(_FORMAT_KWARGS[fmt])}")
    structure, specs = _input_specs(model, input_signature)
    state = _model_state(model)
    forward = _forward(model, structure)
    if fmt == "mlx":
        _export_mlx(model, path, forward, state, specs, **kwargs)
    else:
        _export_torch(model, path, fmt, forward, state, specs, **kwargs)
    if verbose is None or verbose:
        print(f"Saved artifact at '{path}'.")


def _checked_format(model: Any, format: Any) -> str:
    if format == "tf_saved_model":
        raise NotImplementedError(
            f"Model {model.name!r}: export: format='tf_saved_model' needs TensorFlow, which is not a dependency "
            "of Ember; export with format='onnx' (ONNX Runtime, TensorFlow via onnx-tf) or format='torch' "
            "(a torch.export .pt2 file) instead")
    if format not in SUPPORTED_FORMATS:
        raise ValueError(f"Model {model.name!r}: export: unknown format {format!r}; "
                         f"supported formats: {list(SUPPORTED_FORMATS)}")
    return str(format)


def _checked_path(model: Any, filepath: Any, fmt: str) -> str:
    if not isinstance(filepath, (str, os.PathLike)):
        raise TypeError(f"Model {model.name!r}: export: filepath must be a str or os.PathLike, "
                        f"received {type(filepath).__name__}")
    path = os.fspath(filepath)
    if not isinstance(path, str):
        path = os.fsdecode(path)
    suffix = _SUFFIXES.get(fmt)
    if suffix is not None and not path.endswith(suffix):
        raise ValueError(f"Model {model.name!r}: export: format={fmt!r} needs a filepath ending in {suffix!r}, "
                         f"received {path!r}")
    return path


# --- inputs -------------------------------------------------------------------------------------
def _is_spec_leaf(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def _input_specs(model: Any, input_signature: Any) -> tuple[Any, list[Spec]]:
    """``(structure of the inputs with Spec leaves, flat Specs)`` from the signature or the model."""
    if input_signature is None:
        input_signature = _model_inputs(model)
    leaves, treespec = optree.tree_flatten(input_signature, is_leaf=_is_spec_leaf, none_is_leaf=False)
    if not leaves:
        raise ValueError(f"Model {model.name!r}: export: input_signature holds no inputs")
    specs: list[Spec] = []
    names: set = set()
    for index, leaf in enumerate(leaves):
        if not _is_spec_leaf(leaf):
            raise TypeError(f"Model {model.name!r}: export: input_signature leaf {index} must be an ember.Input "
                            f"tensor, an array or an object with shape and dtype, received {leaf!r}")
        shape = tuple(None if size is None else int(size) for size in leaf.shape)
        name = getattr(leaf, "name", None) if isinstance(leaf, SymbolicTensor) else None
        name = name if isinstance(name, str) and name and name not in names else f"input_{index}"
        names.add(name)
        specs.append(Spec(name, shape, standardize_dtype(leaf.dtype, "input_signature dtype")))
    return optree.tree_unflatten(treespec, specs), specs


def _model_inputs(model: Any) -> Any:
    if not model._keras_style:
        with contextlib.suppress(AttributeError):
            return model.input
    shapes = model._known_input_shape()
    if shapes is None:
        raise ValueError(f"Model {model.name!r}: export: the model's input shapes are not known yet; "
                         "call or build it first, or pass input_signature")
    is_shape_leaf = lambda value: isinstance(value, tuple) and all(d is None or isinstance(d, int) for d in value)
    return optree.tree_map(lambda shape: types.SimpleNamespace(shape=shape, dtype="float32"), shapes,
                           is_leaf=is_shape_leaf, none_is_leaf=False)


def _model_state(model: Any) -> dict:
    model._build_if_shapes_known()
    if model.state is None:
        raise ValueError(f"Model {model.name!r}: export: the model has no weights yet; build it "
                         "(model.build(input_shape)) or call it on data first")
    return dict(model.state)


def _forward(model: Any, structure: Any) -> Callable[..., tuple]:
    """``forward(state, *flat_inputs) -> flat outputs``: the model's inference forward."""
    treespec = optree.tree_structure(structure, is_leaf=lambda v: isinstance(v, Spec), none_is_leaf=False)

    def forward(state: dict, *flat: Any) -> tuple:
        inputs = optree.tree_unflatten(treespec, list(flat))
        outputs, _ = model.apply(state, inputs, training=False)
        return tuple(optree.tree_leaves(outputs, none_is_leaf=False))

    return forward


# --- torch: onnx and torch.export ---------------------------------------------------------------
@contextlib.contextmanager
def _torch_on_cpu() -> Iterator[None]:
    """Torch's new arrays on the CPU while tracing: the file must not depend on an accelerator."""
    previous = backends.default_device("torch")
    backends.set_default_device("cpu", backend="torch")
    try:
        yield
    finally:
        backends.set_default_device(previous, backend="torch")


def _export_torch(model: Any, path: str, fmt: str, forward: Callable[..., tuple], state: dict, specs: list[Spec],
                  opset_version: int | None = None, **export_kwargs: Any) -> None:
    exporter = backends.load("torch").export  # not installed: BackendNotAvailableError naming the extra
    torch_specs = [exporter.InputSpec(*spec) for spec in specs]
    with backends.using_backend("torch"), _torch_on_cpu():
        torch_state = tree_to_active(state)
        try:
            program = exporter.export_program(forward, torch_state, torch_specs, **export_kwargs)
        except Exception as error:
            if exporter.is_fixed_dimension_error(error):
                raise _fixed_error(model, specs, error) from error
            raise _trace_error(model, fmt, error) from error
        with atomic_path(path, "export") as temporary:
            if fmt == "torch":
                exporter.save_torch(program, temporary)
            else:
                names = [f"output_{i}" for i in range(len(program.graph_signature.user_outputs))]
                try:
                    exporter.save_onnx(program, torch_specs, names, temporary, opset_version=opset_version)
                except Exception as error:
                    raise _trace_error(model, fmt, error) from error


def _fixed_error(model: Any, specs: list[Spec], error: BaseException) -> ValueError:
    dynamic = [f"{spec.name}{list(spec.shape)}" for spec in specs if None in spec.shape]
    reason = str(error).strip().splitlines()[0]
    return ValueError(f"Model {model.name!r}: export: the forward fixes a dimension that is None (dynamic) in "
                      f"the inputs {', '.join(dynamic)} (a layer unrolls over time steps or reshapes to a traced "
                      f"size); pass input_signature with that dimension fixed to the size you will serve "
                      f"(torch.export: {reason})")


# --- mlx ----------------------------------------------------------------------------------------
def _export_mlx(model: Any, path: str, forward: Callable[..., tuple], state: dict, specs: list[Spec],
                batch_sizes: Any = (1,), shapeless: bool = False, metadata: str | None = None) -> None:
    sizes = _checked_batch_sizes(model, batch_sizes, specs, shapeless)  # bad arguments first, installed or not
    exporter = backends.load("mlx").export
    with backends.using_backend("mlx"):
        mlx_state = tree_to_active(state)
        run = lambda *flat: forward(mlx_state, *flat)
        sample_sets = [_samples(specs, size) for size in sizes]
        with atomic_path(path, "export") as temporary:
            try:
                exporter.save_traces(temporary, run, sample_sets, shapeless=shapeless, metadata=metadata)
            except Exception as error:
                raise _trace_error(model, "mlx", error) from error
            if shapeless:
                _check_shapeless(model, exporter, temporary, run, specs)


def _checked_batch_sizes(model: Any, batch_sizes: Any, specs: list[Spec], shapeless: bool) -> tuple[int, ...]:
    """The batch sizes to trace: ``batch_sizes`` (fixed traces), or the traced size 2 when shapeless."""
    if not isinstance(shapeless, bool):
        raise TypeError(f"Model {model.name!r}: export: shapeless must be a bool, received {shapeless!r}")
    if shapeless:
        return (2,)
    sizes = (batch_sizes,) if isinstance(batch_sizes, int) else batch_sizes
    if (not isinstance(sizes, (tuple, list)) or not sizes
            or not all(isinstance(size, int) and not isinstance(size, bool) and size > 0 for size in sizes)):
        raise ValueError(f"Model {model.name!r}: export: batch_sizes must be positive ints (one MLX trace "
                         f"each), received {batch_sizes!r}")
    fixed = [f"input {spec.name!r} axis {axis}" for spec in specs
             for axis, size in enumerate(spec.shape) if size is None and axis > 0]
    if fixed:
        raise ValueError(f"Model {model.name!r}: export: format='mlx' traces fixed shapes (one per batch size), "
                         f"but {', '.join(fixed)} is None; pass input_signature with it fixed")
    return tuple(dict.fromkeys(sizes))


def _samples(specs: list[Spec], batch: int) -> list[Any]:
    """Inputs for the specs on the active backend: dynamic sizes at ``batch``; floats from a fixed
    generator (zeros would hide a wrong graph), integers zero (valid indices for any Embedding)."""
    generator = np.random.default_rng(0)
    samples = []
    for spec in specs:
        shape = tuple(batch if size is None else size for size in spec.shape)
        floating = np.issubdtype(np.dtype(spec.dtype if spec.dtype != "bfloat16" else "float32"), np.floating)
        values = generator.standard_normal(shape) if floating else np.zeros(shape)
        samples.append(ops.convert_to_tensor(values, dtype=spec.dtype))
    return samples


def _check_shapeless(model: Any, exporter: Any, path: str, run: Callable[..., tuple], specs: list[Spec]) -> None:
    """The shapeless file at another batch size against the model's forward (MLX: a shapeless trace
    is wrong where the graph depends on the traced shape)."""
    samples = _samples(specs, _CHECK_BATCH)
    try:
        got = exporter.imported_outputs(path, samples)
        expected = run(*samples)
        # Same ops on the same backend, compiled versus eager: within float32 rounding of a short
        # chain (1e-4 relative leaves a factor ~10 over FLOAT32's 1e-5); a shape baked in at the
        # traced size gives a wrong shape or values off by O(1).
        matches = len(got) == len(expected) and all(
            tuple(a.shape) == tuple(b.shape)
            and np.allclose(ops.convert_to_numpy(a), ops.convert_to_numpy(b), rtol=1e-4, atol=1e-5)
            for a, b in zip(got, expected))
    except Exception as error:  # the imported graph fails on the new shape
        matches, reason = False, f": {error}"
    else:
        reason = ""
    if not matches:
        raise ValueError(f"Model {model.name!r}: export: the shapeless MLX trace does not reproduce the model at "
                         f"batch size {_CHECK_BATCH}{reason} (a layer fixes a shape while tracing); export "
                         "without shapeless=True: one fixed-shape trace per size of batch_sizes")


# --- errors -------------------------------------------------------------------------------------
def _trace_error(model: Any, fmt: str, error: BaseException) -> Exception:
    """A ``RuntimeError`` naming the layer whose forward failed while tracing (found in the traceback)."""
    layer = _failing_layer(error, model)
    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    where = (f"layer {layer.name!r} ({type(layer).__name__})" if layer is not None
             else f"the forward of model {model.name!r}")
    return RuntimeError(f"Model {model.name!r}: export to format={fmt!r} failed: {where} cannot be traced: "
                        f"{type(error).__name__}: {reason}")


def _failing_layer(error: BaseException, model: Any) -> Layer | None:
    """The innermost layer running when ``error`` (or an error it chains) was raised: a layer that is
    not a model if there is one (a nested model otherwise); None when no layer frame is found."""
    seen: set = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        layers: list[Layer] = []
        traceback = current.__traceback__
        while traceback is not None:
            owner = traceback.tb_frame.f_locals.get("self")
            if isinstance(owner, Layer) and owner is not model:
                layers.append(owner)
            traceback = traceback.tb_next
        plain = [layer for layer in layers if not getattr(layer, "_owns_state", False)]
        if plain or layers:
            return (plain or layers)[-1]
        current = current.__cause__ or current.__context__
    return None
