"""``StrideAwareCfC``: a CfC whose time gate reads the stride (time between steps) of every step.

A multi-timescale network runs several CfCs over the same signal, each subsampled with its
own stride ``k`` (every ``k``-th sample): one step of the ``k``-stride cell covers ``k``
base ticks. The stride-aware CfC (Ember's origin, ember-ml's ``StrideAwareCfC``, with
``stride_length`` and ``time_scale_factor``) is the CfC (:mod:`ember.layers.ncp.cfc_cell`,
:mod:`ember.layers.ncp.wired_cfc_cell`, same weights, same equations) whose elapsed time
in the interpolation is::

    t_eff = stride * stride_length * time_scale_factor
    gate  = sigmoid((z @ W_ta + b_ta) * t_eff + (z @ W_tb + b_tb))        # default, no_gate
    h'    = A - A * exp(-t_eff * (|w_tau| + |f|)) * f                     # pure

where ``stride`` ``(batch, 1)`` is the step's own stride, per sample, given like the CfC's
elapsed times (``layer.apply(state, x, timespans=strides)`` with ``strides`` of shape
``(batch, time)``; 1.0 per step by default), ``stride_length`` the cell's fixed number of
base ticks per step and ``time_scale_factor`` the length of one tick in the units the time
heads were trained on. So ``StrideAwareCfC(units, stride_length=k)`` on a sequence sampled
every ``k`` ticks computes what ``CfC(units)`` computes with ``timespans = k`` everywhere,
and a per-step ``stride`` handles irregular gaps on top of it. With ``stride_length = 1``
and ``time_scale_factor = 1`` it is exactly the CfC.
"""

from __future__ import annotations

import numbers
from typing import Any, ClassVar

from ember import ops
from ember.layers.layer import Layer
from ember.layers.ncp._common import default_name
from ember.layers.ncp.cfc import CfC
from ember.layers.ncp.cfc_cell import CfCCell
from ember.layers.ncp.wired_cfc_cell import WiredCfCCell


def check_scale(layer: Layer, field: str) -> None:
    """``layer.<field>`` as a positive finite float (ValueError naming the layer otherwise)."""
    value = getattr(layer, field)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 < float(value) < float("inf"):
        raise ValueError(f"{layer.name}: {field} must be a positive number, received {value!r}")
    layer._normalize(field, float(value))


def effective_time(stride: Any, factor: float) -> Any:
    """``stride * factor`` (``factor`` itself when the cell runs without a stride).

    Example:
        >>> effective_time(None, 2.0)
        2.0
    """
    if stride is None:
        return factor
    return stride if factor == 1.0 else ops.multiply(stride, factor)


class StrideAwareCell:
    """What both stride-aware cells add to their CfC cell (listed before it among the bases): the
    checks of their ``stride_length`` and ``time_scale_factor`` fields and the effective elapsed
    time of every step. A cell names its default layer name in ``_default_name``.

    Example:
        >>> from ember import layers, wirings
        >>> cells = layers.StrideAwareCfCCell(3), layers.StrideAwareWiredCfCCell(wirings.FullyConnected(3, 1))
        >>> [isinstance(cell, StrideAwareCell) for cell in cells], cells[0].name.startswith("stride_aware_cfc_cell")
        ([True, True], True)
    """

    _default_name: ClassVar[str]

    def __post_init__(self) -> None:
        layer: Any = self  # a CfC cell: the fields and _normalize are its own
        default_name(layer, self._default_name)
        super().__post_init__()  # type: ignore[misc]  # the CfC cell's, next in the MRO
        check_scale(layer, "stride_length")
        check_scale(layer, "time_scale_factor")

    def prepared_step(self, params: dict, step_input: Any, states: list, context: Any, *,
                      training: bool = False, rng: Any = None, timespan: Any = None) -> tuple[Any, list]:
        layer: Any = self
        return super().prepared_step(  # type: ignore[misc]  # the CfC cell's
            params, step_input, states, context, training=training, rng=rng,
            timespan=effective_time(timespan, layer.stride_length * layer.time_scale_factor))


class StrideAwareCfCCell(StrideAwareCell, CfCCell):
    """A dense CfC cell whose elapsed time is ``stride * stride_length * time_scale_factor``.

    Args:
        units, mode, activation, backbone_units, backbone_layers, backbone_dropout,
            kernel_initializer, bias_initializer, seed: as for :class:`CfCCell`.
        stride_length: base ticks per step (positive number, 1.0).
        time_scale_factor: length of one tick (positive number, 1.0).

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> cell = layers.StrideAwareCfCCell(3, stride_length=4, backbone_units=4)
        >>> state = cell.build((None, 2), seed=0)
        >>> strides = ops.ones((2, 5))
        >>> ops.shape(layers.RNN(cell).apply(state, ops.ones((2, 5, 2)), timespans=strides)[0])
        (2, 3)
    """

    stride_length: float = 1.0
    time_scale_factor: float = 1.0

    _default_name = "stride_aware_cfc_cell"


class StrideAwareWiredCfCCell(StrideAwareCell, WiredCfCCell):
    """A wired CfC cell whose elapsed time is ``stride * stride_length * time_scale_factor``.

    Args:
        wiring, mode, fully_recurrent, kernel_initializer, bias_initializer: as for
            :class:`WiredCfCCell`.
        stride_length: base ticks per step (positive number, 1.0).
        time_scale_factor: length of one tick (positive number, 1.0).

    Example:
        >>> import ember
        >>> from ember import layers, ops, wirings
        >>> ember.set_backend("numpy")
        >>> cell = layers.StrideAwareWiredCfCCell(wirings.AutoNCP(6, 1, seed=0), stride_length=2)
        >>> state = cell.build((None, 2), seed=0)
        >>> ops.shape(layers.RNN(cell).apply(state, ops.ones((2, 5, 2)))[0])
        (2, 1)
    """

    stride_length: float = 1.0
    time_scale_factor: float = 1.0

    _default_name = "stride_aware_wired_cfc_cell"


class StrideAwareCfC(CfC):
    """Stride-aware CfC layer: a :class:`CfC` whose elapsed time is ``stride * stride_length *
    time_scale_factor`` (module docstring); the per-step ``stride`` comes through ``timespans=``.

    Args:
        units: an int (a dense :class:`StrideAwareCfCCell`) or an
            :class:`~ember.wirings.Wiring` (a :class:`StrideAwareWiredCfCCell`).
        stride_length: base ticks per step (positive number, 1.0).
        time_scale_factor: length of one tick (positive number, 1.0).
        mixed_memory, mode, activation, backbone_units, backbone_layers, backbone_dropout,
            fully_recurrent, seed: as for :class:`CfC`.
        return_sequences, return_state, go_backwards, stateful, unroll, time_major,
            zero_output_for_mask: as for :class:`~ember.layers.RNN` (keyword-only).

    Example:
        >>> import ember
        >>> from ember import layers, ops, wirings
        >>> ember.set_backend("numpy")
        >>> layer = layers.StrideAwareCfC(wirings.AutoNCP(8, 2, seed=0), stride_length=3, return_sequences=True)
        >>> state = layer.build((None, 4, 3), seed=0)
        >>> ops.shape(layer.apply(state, ops.ones((2, 4, 3)), timespans=ops.ones((2, 4)))[0])
        (2, 4, 2)
    """

    stride_length: float = 1.0
    time_scale_factor: float = 1.0

    _dense_cell = StrideAwareCfCCell
    _wired_cell = StrideAwareWiredCfCCell

    def __post_init__(self) -> None:
        default_name(self, "stride_aware_cfc")
        super().__post_init__()

    def _extra_cell_fields(self) -> dict:
        return {"stride_length": self.stride_length, "time_scale_factor": self.time_scale_factor}

    def _make_cell(self) -> Any:
        cell = super()._make_cell()
        inner = getattr(cell, "cell", cell)  # the stride-aware cell, inside a MixedMemoryCell or not
        for field in ("stride_length", "time_scale_factor"):
            self._normalize(field, getattr(inner, field))
        return cell
