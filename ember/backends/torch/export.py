"""A model's inference forward as a ``torch.nn.Module``, traced to ONNX or a ``torch.export`` file.

``ember.models.export`` (``Model.export``) hands this module a pure forward function
``forward(state, *inputs) -> tuple of outputs`` that runs on the torch backend, the model's state
as torch tensors, and one :class:`InputSpec` per flat input. :class:`ForwardModule` registers every
array of the state as a buffer (so the weights are the program's constants, named by their state
path) and calls the forward with them; :func:`save_torch` traces it with ``torch.export.export``
(non-strict: the Python of the layers runs on fake tensors) and writes the ``ExportedProgram`` with
``torch.export.save``, which loads and runs with torch alone (``torch.export.load(path).module()``);
:func:`save_onnx` runs torch's ONNX exporter (``torch.onnx.export(..., dynamo=True)``, which needs
``onnxscript``) on the same module. A ``None`` dimension of an input spec is dynamic (``"batch"``
for the first one); it is traced at size 2, since torch specialises sizes 0 and 1.

Example:
    >>> import torch
    >>> from ember.backends.torch.export import ForwardModule, InputSpec, sample_inputs
    >>> module = ForwardModule(lambda state, x: (x @ state["w"],), {"w": torch.ones(3, 2)})
    >>> module(torch.ones(4, 3))[0].shape
    torch.Size([4, 2])
    >>> sample_inputs([InputSpec("x", (None, 3), "float32")])[0].shape
    torch.Size([2, 3])
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import optree
import torch

# The size a dynamic dimension is traced at: torch.export specialises sizes 0 and 1 to constants.
TRACED_SIZE = 2

_NOT_A_NAME = re.compile(r"[^0-9A-Za-z_]")


class InputSpec(NamedTuple):
    """One flat input of the exported forward: its name, shape (``None``: dynamic) and dtype name."""

    name: str
    shape: tuple
    dtype: str


def _buffer_name(path: tuple, taken: set) -> str:
    """A valid, unique buffer name for a state path (``("params", "dense", "kernel")`` ->
    ``"params__dense__kernel"``)."""
    name = _NOT_A_NAME.sub("_", "__".join(str(part) for part in path)) or "weight"
    if name[0].isdigit():
        name = f"w_{name}"
    unique, count = name, 1
    while unique in taken:
        unique, count = f"{name}_{count}", count + 1
    taken.add(unique)
    return unique


class ForwardModule(torch.nn.Module):
    """``forward(state, *inputs)`` with ``state``'s tensors held as the module's buffers.

    Args:
        forward: a pure function of the state and the flat inputs returning a tuple of tensors.
        state: a pytree (dicts, lists) of torch tensors and Python values; tensors become buffers
            (on the CPU, detached), other leaves stay constants of the forward.
    """

    def __init__(self, forward: Callable[..., Any], state: Any) -> None:
        super().__init__()
        paths, leaves, spec = optree.tree_flatten_with_path(state, none_is_leaf=False)
        self._forward = forward
        self._spec = spec
        self._constants: list[Any] = []
        self._names: list[str | None] = []
        taken: set = set()
        for path, leaf in zip(paths, leaves):
            if isinstance(leaf, torch.Tensor):
                name = _buffer_name(path, taken)
                self.register_buffer(name, leaf.detach().to("cpu"))
                self._names.append(name)
                self._constants.append(None)
            else:
                self._names.append(None)
                self._constants.append(leaf)

    def forward(self, *inputs: torch.Tensor) -> Any:
        leaves = [const if name is None else getattr(self, name) for name, const in zip(self._names, self._constants)]
        state = optree.tree_unflatten(self._spec, leaves)
        return self._forward(state, *inputs)


def sample_inputs(specs: Sequence[InputSpec]) -> tuple[torch.Tensor, ...]:
    """Zero tensors in the specs' shapes (dynamic dimensions at :data:`TRACED_SIZE`) on the CPU."""
    return tuple(
        torch.zeros(tuple(TRACED_SIZE if size is None else size for size in spec.shape),
                    dtype=getattr(torch, spec.dtype), device="cpu")
        for spec in specs
    )


def dynamic_shapes(specs: Sequence[InputSpec]) -> tuple[tuple[dict, ...]]:
    """``torch.export`` dynamic shapes: every input's dynamic axis 0 is one ``"batch"`` dimension, each
    other dynamic axis a dimension of its own (``"<input>_<axis>"``). A forward that fixes one makes
    ``torch.export`` raise (:func:`is_fixed_dimension_error`)."""
    batch = torch.export.Dim("batch")
    shapes = []
    for spec in specs:
        dims: dict = {}
        for axis, size in enumerate(spec.shape):
            if size is None:
                dims[axis] = batch if axis == 0 else torch.export.Dim(_NOT_A_NAME.sub("_", f"{spec.name}_{axis}"))
        shapes.append(dims)
    return (tuple(shapes),)  # forward(*inputs): torch.export sees one positional argument, the tuple


def is_fixed_dimension_error(error: BaseException) -> bool:
    """Whether ``torch.export`` raised ``error`` because the forward fixed a dynamic dimension."""
    return "Constraints violated" in str(error) or "specialized it to be a constant" in str(error)


def export_program(forward: Callable[..., Any], state: Any, specs: Sequence[InputSpec], **kwargs: Any) -> Any:
    """The ``torch.export.ExportedProgram`` of ``forward`` with ``state`` (non-strict by default;
    ``kwargs`` go to ``torch.export.export``)."""
    module = ForwardModule(forward, state).eval()
    kwargs.setdefault("strict", False)
    kwargs.setdefault("dynamic_shapes", dynamic_shapes(specs))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\).*")
        return torch.export.export(module, sample_inputs(specs), **kwargs)


def save_torch(program: Any, filepath: str) -> None:
    """Write ``program`` with ``torch.export.save`` to ``filepath`` (any name: written through an open
    file); load it with ``torch.export.load``."""
    with open(filepath, "wb") as file:
        torch.export.save(program, file)


def save_onnx(program: Any, specs: Sequence[InputSpec], output_names: Sequence[str], filepath: str,
              opset_version: int | None = None, **kwargs: Any) -> None:
    """Convert the exported ``program`` with torch's ONNX exporter and write it to ``filepath``
    (one file: the weights inside it; ``kwargs`` go to ``torch.onnx.export``)."""
    external_data = kwargs.pop("external_data", False)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*isinstance\(treespec, LeafSpec\).*")
        onnx_program = torch.onnx.export(
            program, (), None, input_names=[spec.name for spec in specs], output_names=list(output_names),
            opset_version=opset_version, dynamo=True, verbose=False, **kwargs)
    assert onnx_program is not None  # dynamo=True returns the program
    onnx_program.save(filepath, external_data=external_data)
