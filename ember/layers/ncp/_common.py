"""Helpers shared by the NCP cells: wiring arguments, weight masks, dense params, the CfC update."""

from __future__ import annotations

import numbers
from typing import Any, Protocol

import numpy as np

from ember import dtypes, ops
from ember.layers.layer import Layer, unique_name
from ember.seeds import sub_seed
from ember.wirings import FullyConnected, Wiring

CFC_MODES = ("default", "pure", "no_gate")


def default_name(layer: Layer, base: str) -> None:
    """Name an unnamed layer ``base``, ``base_1``, ... (``"cfc"`` rather than the generic ``"cf_c"``)."""
    if layer.name is None:
        object.__setattr__(layer, "name", unique_name(base))


def compact_repr(layer: Layer) -> str:
    """The layer's repr with wirings and sub-layers shown by their own short reprs (not their
    full configs, which hold the adjacency matrices)."""
    parts = []
    for key, value in layer.get_config().items():
        if key == "name":
            continue
        attribute = getattr(layer, key, None)
        parts.append(f"{key}={attribute!r}" if isinstance(attribute, (Wiring, Layer)) else f"{key}={value!r}")
    return f"{type(layer).__name__}(name={layer.name!r}{', ' if parts else ''}{', '.join(parts)})"


def normalize_wiring(layer: Layer, field: str = "wiring", allow_units: bool = True) -> None:
    """Replace ``layer.<field>`` by a private copy of the wiring (or a ``FullyConnected(units)`` for an int).

    The copy keeps the layer immutable from the outside: building or editing the caller's
    wiring afterwards does not change the layer.
    """
    value = getattr(layer, field)
    if isinstance(value, Wiring):
        layer._normalize(field, value.copy())
        return
    if allow_units and isinstance(value, numbers.Integral) and not isinstance(value, bool):
        if value <= 0:
            raise ValueError(f"{layer.name}: {field} must be a positive number of units or an ember.wirings.Wiring, "
                             f"received {value!r}")
        layer._normalize(field, FullyConnected(int(value)))
        return
    expected = "a positive int (units) or an ember.wirings.Wiring" if allow_units else "an ember.wirings.Wiring"
    raise TypeError(f"{layer.name}: {field} must be {expected}, received {value!r}")


def built_wiring(layer: Layer, wiring: Any, features: int) -> Any:
    """``wiring`` built for ``features`` inputs (never modifying it); ValueError naming the layer otherwise."""
    try:
        return wiring.built(features)
    except ValueError as error:
        raise ValueError(f"layer {layer.name!r}: {error}") from None


def check_features(layer: Layer, x: Any, features: int) -> None:
    got = ops.shape(x)[-1]
    if got != features:
        raise ValueError(f"layer {layer.name!r} expects {features} input features (the last axis), received {got}")


def to_mask(matrix: np.ndarray, dtype: str) -> Any:
    """``|matrix|`` (synapse present: 1, absent: 0) as a backend array of ``dtype`` on the default device."""
    return ops.convert_to_tensor(np.abs(matrix).astype(dtypes.to_numpy_dtype(dtype)), dtype=dtype)


def to_array(matrix: np.ndarray, dtype: str) -> Any:
    """``matrix`` (e.g. synapse polarities) as a backend array of ``dtype``."""
    return ops.convert_to_tensor(np.asarray(matrix).astype(dtypes.to_numpy_dtype(dtype)), dtype=dtype)


class CfCFields(Protocol):
    """The config of a CfC cell (``CfCCell``, ``WiredCfCCell``) that the helpers below read."""

    @property
    def name(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def kernel_initializer(self) -> Any: ...
    @property
    def bias_initializer(self) -> Any: ...
    @property
    def variable_dtype(self) -> str: ...


def dense_params(layer: CfCFields, fan_in: int, units: int, seed: int | None, *path: str) -> dict:
    """``{"kernel": (fan_in, units), "bias": (units,)}`` from the layer's kernel/bias initializers."""
    dtype = layer.variable_dtype
    return {
        "kernel": layer.kernel_initializer((fan_in, units), dtype, sub_seed(seed, *path, "kernel")),
        "bias": layer.bias_initializer((units,), dtype, sub_seed(seed, *path, "bias")),
    }


def check_mode(layer: CfCFields) -> None:
    if layer.mode not in CFC_MODES:
        raise ValueError(f"{layer.name}: mode must be one of {CFC_MODES}, received {layer.mode!r}")


def cfc_head_names(mode: str) -> tuple[str, ...]:
    """The linear heads a CfC update reads: ``ff1`` alone in pure mode, else ff1, ff2, time_a, time_b."""
    return ("ff1",) if mode == "pure" else ("ff1", "ff2", "time_a", "time_b")


def cfc_heads(params: dict, mode: str, mask: Any = None) -> tuple[Any, Any]:
    """The heads' kernels side by side ``(fan_in, k * units)`` and biases ``(k * units,)``.

    ``mask`` (the wiring's synapses, ``(fan_in, units)``) multiplies the ``ff1``/``ff2``
    kernels; the time heads are never masked (the ncps package's convention).
    """
    kernels, biases = [], []
    for name in cfc_head_names(mode):
        kernel = params[name]["kernel"]
        if mask is not None and name in ("ff1", "ff2"):
            kernel = ops.multiply(kernel, mask)
        kernels.append(kernel)
        biases.append(params[name]["bias"])
    if len(kernels) == 1:
        return kernels[0], biases[0]
    return ops.concatenate(kernels, axis=1), ops.concatenate(biases, axis=0)


def cfc_update(heads: Any, params: dict, mode: str, timespan: Any) -> Any:
    """The CfC state update from the heads' pre-activations ``heads`` (see :mod:`ember.layers.ncp.cfc_cell`).

    * default: ``tanh(ff1) * (1 - g) + g * tanh(ff2)`` with ``g = sigmoid(time_a * t + time_b)``;
    * no_gate: ``tanh(ff1) + g * tanh(ff2)``;
    * pure: ``A - A * exp(-t * (|w_tau| + |ff1|)) * ff1``.
    """
    def times_t(x: Any) -> Any:
        return x if timespan is None else ops.multiply(x, timespan)

    if mode == "pure":
        ff1 = heads
        decay = ops.exp(ops.negative(times_t(ops.add(ops.abs(params["w_tau"]), ops.abs(ff1)))))
        return ops.subtract(params["A"], ops.multiply(ops.multiply(params["A"], decay), ff1))
    ff1, ff2, t_a, t_b = ops.split(heads, 4, axis=-1)
    ff1 = ops.tanh(ff1)
    ff2 = ops.tanh(ff2)
    gate = ops.nn.sigmoid(ops.add(times_t(t_a), t_b))
    if mode == "no_gate":
        return ops.add(ff1, ops.multiply(gate, ff2))
    # ff1 * (1 - gate) + gate * ff2, with one multiply fewer.
    return ops.add(ff1, ops.multiply(gate, ops.subtract(ff2, ff1)))


def pure_params(layer: Layer, units: int) -> dict:
    """``w_tau`` (zeros) and ``A`` (ones), ``(units,)``: the pure-mode time constant and amplitude."""
    return {"w_tau": ops.zeros((units,), dtype=layer.variable_dtype),
            "A": ops.ones((units,), dtype=layer.variable_dtype)}


def split_rows(kernel: Any, rows: int) -> tuple[Any, Any]:
    """``kernel[:rows]``, ``kernel[rows:]``."""
    top, bottom = ops.split(kernel, [rows], axis=0)
    return top, bottom
