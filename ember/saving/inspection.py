"""``python -m ember inspect FILE.h5``: a checkpoint's metadata and variable tree, as text.

The file is fully validated first (format, manifest, every checksum), so ``inspect`` also
answers "is this file intact?": a damaged file gives the same error ``load_model`` would.

Example:
    >>> import os, tempfile
    >>> import ember
    >>> from ember import layers
    >>> from ember.saving.inspection import describe
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((3,)), layers.Dense(2, name="dense")], name="tiny")
    >>> _ = model.build(seed=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.h5")
    >>> model.save(path)
    >>> print(describe(path).split("variables")[1])  # doctest: +NORMALIZE_WHITESPACE
     (2 arrays, 8 values, 32 bytes):
    state/
      params/
        dense/
          bias    (2,)    float32
          kernel  (3, 2)  float32
"""

from __future__ import annotations

import math
from typing import Any

from ember.saving import format as fmt
from ember.saving.reader import CheckpointReader


def _is_input_layer(layer: Any) -> bool:
    return isinstance(layer, dict) and str(layer.get("class_name", "")).split(">")[-1] == "InputLayer"


def layer_count(inner: dict) -> int | None:
    """How many layers ``model.layers`` (and ``model.summary()``) lists for a model config's ``config``
    part; None when it lists none. A functional model's graph (``inputs``, ``nodes``) counts its
    InputLayers, which are among its layers; a Sequential's plain list keeps its ``Input`` as an
    InputLayer entry, which is not (both as in Keras).

    Example:
        >>> dense, inputs = {"class_name": "ember>Dense"}, {"class_name": "ember>InputLayer"}
        >>> layer_count({"layers": [inputs, dense, dense]}), layer_count({"layers": [inputs, dense], "nodes": []})
        (2, 2)
    """
    layers = inner.get("layers")
    if not isinstance(layers, list):
        return None
    if "nodes" in inner or "inputs" in inner:
        return len(layers)
    return sum(not _is_input_layer(layer) for layer in layers)


def _summary_of_config(config: Any) -> str:
    if not isinstance(config, dict):
        return "-"
    inner = config.get("config") or {}
    name = inner.get("name") if isinstance(inner, dict) else None
    text = f"{config.get('class_name')} {name!r}"
    count = layer_count(inner) if isinstance(inner, dict) else None
    if count is not None:
        text += f", {count} layer{'' if count == 1 else 's'}"
    return text


def _summary_of_compile(config: Any) -> str:
    if not isinstance(config, dict):
        return "not compiled"

    def name(value: Any) -> str:
        if isinstance(value, dict) and "class_name" in value:
            return str(value["class_name"]).split(">", 1)[-1]
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(name(v) for v in value) + "]"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k}: {name(v)}" for k, v in value.items()) + "}"
        return repr(value)

    parts = [f"optimizer={name(config.get('optimizer'))}", f"loss={name(config.get('loss'))}"]
    if config.get("metrics"):
        parts.append(f"metrics={name(config.get('metrics'))}")
    return ", ".join(parts)


def _tree_lines(variables: list[tuple[str, tuple, str]]) -> list[str]:
    rows: list[tuple[str, str, str]] = []
    opened: list[str] = []
    for path, shape, dtype in variables:
        parts = path.split("/")
        common = 0
        while common < min(len(opened), len(parts) - 1) and opened[common] == parts[common]:
            common += 1
        opened = opened[:common]
        for depth in range(common, len(parts) - 1):
            rows.append(("  " * depth + parts[depth] + "/", "", ""))
            opened.append(parts[depth])
        rows.append(("  " * (len(parts) - 1) + parts[-1], str(tuple(shape)), dtype))
    width = max((len(r[0]) for r in rows if r[1]), default=0)
    shape_width = max((len(r[1]) for r in rows), default=0)
    return [f"{a.ljust(width)}  {b.ljust(shape_width)}  {c}".rstrip() if b else a for a, b, c in rows]


def describe(path: Any) -> str:
    """The metadata and variable tree of a checkpoint (raises ``CheckpointError`` for a bad file).

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> from ember.saving.writer import write_checkpoint
        >>> path = os.path.join(tempfile.mkdtemp(), "raw.h5")
        >>> write_checkpoint(path, "weights", trees={"state": {"params": {"w": np.zeros(2, "int32")}}})
        >>> describe(path).splitlines()[-3:]
        ['state/', '  params/', '    w  (2,)  int32']
    """
    with CheckpointReader(path, caller="inspect") as reader:
        for prefix in {p.split("/", 1)[0] for p, _, _ in reader.variables()}:
            reader.arrays(prefix)  # verify every checksum
        lines = [f"Ember checkpoint {reader.path}"]
        for key in fmt.ROOT_ATTRIBUTES:
            if key in reader.attrs:
                lines.append(f"  {key + ':':15} {reader.attrs[key]}")
        if reader.kind == "model":
            lines.append(f"  {'model:':15} {_summary_of_config(reader.document('config'))}")
            lines.append(f"  {'compile:':15} {_summary_of_compile(reader.document('compile'))}")
            progress = reader.document("training")
            if progress and progress.get("epoch") is not None:
                lines.append(f"  {'training:':15} next epoch {progress.get('epoch')}, fit seed {progress.get('seed')}, "
                             f"step rng {progress.get('rng')}, fits {progress.get('fits')}")
            elif progress is not None:
                lines.append(f"  {'training:':15} not trained yet")
            if reader.has(fmt.OPTIMIZER):
                lines.append(f"  {'optimizer:':15} state saved (training/optimizer)")
        elif reader.kind == "weights":
            model = reader.document("model") or {}
            lines.append(f"  {'model:':15} {model.get('class_name')} {model.get('name')!r} (weights only)")
        else:
            lines.append(f"  {'object:':15} {_summary_of_config(reader.document('config'))}")
        variables = reader.variables()
        values = sum(math.prod(shape) for _, shape, _ in variables)
        nbytes = sum(math.prod(shape) * fmt.stored_dtype(dtype).itemsize for _, shape, dtype in variables)
        lines.append(f"variables ({len(variables)} arrays, {values} values, {nbytes} bytes):")
        lines.extend(_tree_lines(variables))
    return "\n".join(lines)
