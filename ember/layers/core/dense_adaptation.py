"""Keras's int8 quantization and LoRA on ``Dense`` and ``Embedding`` (``layer.quantize("int8")``,
``layer.enable_lora(rank)``), over Ember's pure state.

**int8** (weight ``W``: Dense's ``kernel``, Embedding's ``embeddings``). ``quantize("int8")``
replaces the float ``W`` with an int8 ``W`` and a float ``<W>_scale`` (Keras's variable names), both
non-trainable (``"buffers"``), and sets the layer's policy to ``"int8_from_<policy>"``. Scales are
abs-max per output channel for Dense (``scale_j = 127 / max_i |W_ij|``, ``W ≈ W_int8 / scale``),
per row for Embedding, as Keras. Dense also quantizes its inputs per row on the fly (Keras's
default ``AbsMaxQuantizer``) and multiplies int8 by int8 exactly (in float32 while the sums stay
below 2**24, else in int32); ``quantize(config=Int8QuantizationConfig(activation_quantizer=None))``
is weight-only. Error bound for one output of Dense, input row ``x``, channel ``j``: every weight
is off by at most ``1 / (2 scale_j)`` and every quantized input by ``1 / (2 s_x)``, so
``|y_q - y| <= sum_i |x_i| / (2 scale_j) + sum_i |W_q,ij| / (2 s_x)`` (the second term only when
the inputs are quantized).

**LoRA.** ``enable_lora(rank)`` freezes ``W`` (it moves to ``"buffers"``) and adds trainable
``lora_<W>_a`` ``(W.shape[0], rank)`` and ``lora_<W>_b`` ``(rank, W.shape[1])`` in float32; the
layer computes with ``W + (lora_alpha / rank) * a @ b`` (``lora_alpha`` defaults to ``rank``).
Keras-format files hold the merged ``W`` and no factors (Keras's ``save_own_variables``); the
config keeps ``lora_rank``, so a loaded layer has LoRA enabled with zero factors.

Example:
    >>> import ember
    >>> from ember import layers, ops
    >>> ember.set_backend("numpy")
    >>> dense = layers.Dense(3)
    >>> _ = dense(ops.ones((1, 4)))
    >>> dense.quantize("int8")
    >>> dense.dtype_policy.name, [(w.path, w.dtype) for w in dense.weights]
    ('int8_from_float32', [('bias', 'float32'), ('kernel', 'int8'), ('kernel_scale', 'float32')])
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ember import dtype_policies, initializers, ops
from ember.layers.state_check import check_state_dict
from ember.layers.weights import WeightSpec
from ember.quantizers import AbsMaxQuantizer, Int8QuantizationConfig, QuantizationConfig, validate_and_resolve_config
from ember.validation import check_positive_int

EXACT_FLOAT32_SUM = 2 ** 24  # float32 adds integers exactly up to here


class QuantizeLoRAMixin:
    """``quantize``/``enable_lora`` for a layer with one 2-d weight (see the module docstring).

    A class sets ``_adapted_weight`` (``"kernel"``), ``_scale_axis`` (the axis its scales reduce)
    and ``_quantizable`` (the exact class Keras quantizes: subclasses are refused, as in Keras),
    declares the fields ``lora_rank``, ``lora_alpha`` and ``quantization_config``, and calls
    :meth:`_adapt_specs` from ``weight_specs`` and :meth:`_weight` in ``call``. The mixin checks
    those fields after the layer base's own checks and writes them into the config as Keras does.
    """

    _adapted_weight: ClassVar[str] = "kernel"
    _scale_axis: ClassVar[int] = 0
    _quantizable: ClassVar[Any] = None
    # False where the layer has no inputs to quantize (Embedding): its quantization_config stays None.
    _keeps_quantization_config: ClassVar[bool] = True

    # ------------------------------------------------------------------ config
    def __post_init__(self) -> None:
        super().__post_init__()  # type: ignore[misc]  # the layer base's, next in the MRO
        layer: Any = self  # the fields below are the layer's
        if layer.lora_rank is not None:
            layer._normalize("lora_rank", check_positive_int(layer.name, "lora_rank", layer.lora_rank))
            layer._normalize("lora_alpha", layer.lora_rank if layer.lora_alpha is None else layer.lora_alpha)
        if isinstance(layer.quantization_config, dict):
            restored = config_from_dict(layer.quantization_config) if self._keeps_quantization_config else None
            layer._normalize("quantization_config", restored)

    def get_config(self) -> dict:
        config = super().get_config()  # type: ignore[misc]  # the layer base's: every field
        layer: Any = self
        config["quantization_config"] = (config_to_dict(layer.quantization_config)
                                         if self._keeps_quantization_config else None)
        if layer.lora_rank is None:  # Keras writes the LoRA keys only when LoRA is on
            config.pop("lora_rank", None)
            config.pop("lora_alpha", None)
        return config

    # ------------------------------------------------------------------ names and modes
    @property
    def quantization_mode(self) -> str | None:
        """The quantization mode (``"int8"``), None when the layer is not quantized."""
        dtype = self.dtype  # type: ignore[attr-defined]  # a policy name: cheap to read in every call
        if dtype is None or "_from_" not in dtype:
            return None
        return dtype.partition("_from_")[0]

    @property
    def lora_enabled(self) -> bool:
        """Whether LoRA is enabled (``lora_rank`` set)."""
        return self.lora_rank is not None  # type: ignore[attr-defined]

    def _lora_names(self) -> tuple[str, str]:
        return f"lora_{self._adapted_weight}_a", f"lora_{self._adapted_weight}_b"

    def _scale_name(self) -> str:
        return f"{self._adapted_weight}_scale"

    def _lora_factor(self) -> float:
        return float(self.lora_alpha) / float(self.lora_rank)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ declarations
    def _adapt_specs(self, specs: list[WeightSpec]) -> list[WeightSpec]:
        """The float layer's specs as the quantized and/or LoRA layer declares them."""
        name = self._adapted_weight
        quantized = self.quantization_mode == "int8"
        out: list[WeightSpec] = []
        base: WeightSpec | None = None
        for spec in specs:
            if spec.name != name:
                out.append(spec)
                continue
            base = spec
            if quantized:
                out.append(WeightSpec(name, spec.shape, "zeros", trainable=False, dtype="int8"))
            elif self.lora_enabled:
                out.append(WeightSpec(name, spec.shape, spec.initializer, spec.regularizer, trainable=False))
            else:
                out.append(spec)
        if base is None:
            return out
        if quantized:
            out.append(WeightSpec(self._scale_name(), self._scale_shape(base.shape), "ones", trainable=False))
        if self.lora_enabled:
            a_init, b_init = self.__dict__.get("_lora_initializers", ("he_uniform", "zeros"))
            rank = self.lora_rank  # type: ignore[attr-defined]
            a_name, b_name = self._lora_names()
            out.append(WeightSpec(a_name, base.shape[:-1] + (rank,), a_init, base.regularizer, dtype="float32"))
            out.append(WeightSpec(b_name, (rank, base.shape[-1]), b_init, base.regularizer, dtype="float32"))
        return out

    def _scale_shape(self, weight_shape: tuple) -> tuple:
        """The stored scale's shape: the weight's without the reduced axis."""
        return tuple(d for axis, d in enumerate(weight_shape) if axis != self._scale_axis % 2)

    def _quantize_weight(self, weight: Any, config: Any = None) -> tuple[Any, Any]:
        """``(int8 weight, stored scale)`` (abs-max over ``_scale_axis``, on the host as Keras)."""
        quantizer = QuantizationConfig.weight_quantizer_or_default(config, AbsMaxQuantizer(axis=self._scale_axis))
        values, scale = quantizer(weight, to_numpy=True)
        return values, ops.convert_to_tensor(np.squeeze(np.asarray(ops.to_numpy(scale)), axis=self._scale_axis))

    # ------------------------------------------------------------------ forward
    def apply(self, state: dict, inputs: Any, *, training: bool = False, rng: Any = None) -> tuple[Any, dict]:
        """Float layers run as before; quantized or LoRA layers read their frozen weights from
        ``"buffers"`` too."""
        buffers = state.get("buffers") if type(state) is dict else None
        if not buffers:
            return super().apply(state, inputs, training=training, rng=rng)  # type: ignore[misc]
        check_state_dict(self, state)
        return self._forward({**buffers, **state["params"]}, inputs, training), state

    def _forward(self, params: dict, inputs: Any, training: bool) -> Any:
        """The layer's computation given its params and frozen/int8 buffers (each adapted layer defines it)."""
        raise NotImplementedError(f"{type(self).__name__} must define _forward(params, inputs, training)")

    def _float_weight(self, params: dict) -> Any:
        """The float weight with the LoRA delta added (the float path)."""
        weight = params[self._adapted_weight]
        if self.lora_enabled:
            a_name, b_name = self._lora_names()
            delta = ops.multiply(ops.matmul(params[a_name], params[b_name]), self._lora_factor())
            weight = ops.add(weight, ops.cast(delta, ops.dtype(weight)))
        return weight

    def _dequantized(self, params: dict) -> Any:
        """``W_int8 / scale`` in the compute dtype."""
        scale = params[self._scale_name()]
        scale = ops.expand_dims(scale, self._scale_axis % 2)
        return ops.divide(ops.cast(params[self._adapted_weight], ops.dtype(scale)), scale)

    # ------------------------------------------------------------------ quantize
    def quantize(self, mode: str | None = None, type_check: bool = True, config: Any = None) -> None:
        """Quantize the layer's weight in place (Keras's ``layer.quantize``; int8 only).

        Args:
            mode: ``"int8"`` (or None with a ``config``).
            type_check: refuse subclasses (as Keras: their ``call`` may not use the quantized weights).
            config: an :class:`~ember.quantizers.Int8QuantizationConfig` (``activation_quantizer=None``:
                weight-only).

        Raises:
            ValueError: an unbuilt layer, a layer already quantized, an unknown mode, a float16 policy.
            NotImplementedError: a mode Ember does not implement (float8, int4, GPTQ, AWQ), a subclass.
        """
        where = f"layer {self.name!r} ({type(self).__name__}).quantize"  # type: ignore[attr-defined]
        config = validate_and_resolve_config(mode, config, where)
        mode = config.mode if config is not None else mode
        if type_check and type(self) is not self._quantizable:
            raise NotImplementedError(f"{where}: subclasses of {self._quantizable.__name__} are not quantized "
                                      f"(pass type_check=False if its call uses the quantized weights)")
        state = self._read_state_for(where, "quantize")
        if self.quantization_mode is not None:
            raise ValueError(f"{where}: the layer is already quantized with dtype_policy="
                             f"{self.dtype_policy.name!r}; received mode={mode!r}")  # type: ignore[attr-defined]
        if mode != "int8":
            raise NotImplementedError(f"{where}: mode {mode!r} is not implemented in Ember (Keras's int8 is; "
                                      f"float8, int4, GPTQ and AWQ are not yet)")
        source = self.dtype_policy.name  # type: ignore[attr-defined]
        policy = dtype_policies.quantized_policy(f"int8_from_{source}", where)  # float16 refused here
        name = self._adapted_weight
        collection = "params" if name in state["params"] else "buffers"
        values, scale = self._quantize_weight(state[collection][name], config)
        params = {k: v for k, v in state["params"].items() if k != name}
        buffers = {k: v for k, v in state["buffers"].items() if k != name}
        buffers[name], buffers[self._scale_name()] = values, scale
        self._reconfigure(dtype=policy.name, quantization_config=config)
        self._write_state_ordered(params, buffers)

    def _read_state_for(self, where: str, action: str) -> dict:
        try:
            return self._read_state()  # type: ignore[attr-defined]
        except ValueError:
            raise ValueError(f"{where}: cannot {action} a layer that isn't built yet: call it on data or build "
                             f"the model that holds it first") from None

    def _reconfigure(self, **fields: Any) -> None:
        """Change config fields of this (frozen) layer: quantize and enable_lora are Keras's in-place changes."""
        for key, value in fields.items():
            object.__setattr__(self, key, value)
        self.__dict__.pop("_declared_cache", None)

    def _write_state_ordered(self, params: dict, buffers: dict) -> None:
        """Write the new state with its entries in declaration order (Keras's weight order)."""
        names = [self._adapted_weight, "bias", self._scale_name(), *self._lora_names()]
        order = {name: i for i, name in enumerate(names)}
        def rank(key: str) -> int:
            return order.get(key, len(order))
        self._write_state({"params": {k: params[k] for k in sorted(params, key=rank)},  # type: ignore[attr-defined]
                           "buffers": {k: buffers[k] for k in sorted(buffers, key=rank)}})

    # ------------------------------------------------------------------ LoRA
    def enable_lora(self, rank: int, lora_alpha: float | None = None, a_initializer: Any = "he_uniform",
                    b_initializer: Any = "zeros") -> None:
        """Freeze the weight and train a low-rank update instead (Keras's ``enable_lora``).

        Args:
            rank: the rank of the update (positive int).
            lora_alpha: the update is scaled by ``lora_alpha / rank``; None is ``rank``.
            a_initializer: initializer of ``lora_<W>_a`` (drawn from the global initializer stream).
            b_initializer: initializer of ``lora_<W>_b`` (zeros: the layer starts unchanged).

        Raises:
            ValueError: a kernel constraint, an unbuilt layer, LoRA already enabled, a bad rank.
        """
        where = f"layer {self.name!r} ({type(self).__name__}).enable_lora"  # type: ignore[attr-defined]
        if getattr(self, f"{self._adapted_weight}_constraint", None) is not None:
            raise ValueError(f"{where}: LoRA is incompatible with {self._adapted_weight}_constraint; "
                             f"remove the constraint to enable LoRA")
        state = self._read_state_for(where, "enable LoRA on")
        if self.lora_enabled:
            raise ValueError(f"{where}: LoRA is already enabled (rank {self.lora_rank}); it can be enabled "  # type: ignore[attr-defined]
                             f"once per layer")
        rank = check_positive_int(where, "rank", rank)
        if lora_alpha is not None and (isinstance(lora_alpha, bool) or not isinstance(lora_alpha, (int, float))):
            raise TypeError(f"{where}: lora_alpha must be a number or None, received {lora_alpha!r}")
        a_init, b_init = initializers.get(a_initializer), initializers.get(b_initializer)
        name = self._adapted_weight
        params, buffers = dict(state["params"]), dict(state["buffers"])
        if name in params:
            buffers[name] = params.pop(name)
        shape = tuple(ops.shape(buffers[name]))
        a_name, b_name = self._lora_names()
        params[a_name] = a_init(shape[:-1] + (rank,), "float32", None)
        params[b_name] = b_init((rank, shape[-1]), "float32", None)
        self._reconfigure(lora_rank=rank, lora_alpha=rank if lora_alpha is None else lora_alpha,
                          _lora_initializers=(a_init, b_init))
        self._write_state_ordered(params, buffers)

    def merged_state(self, state: dict) -> dict:
        """``state`` with the LoRA update merged into the weight and zero factors (what Keras saves and
        loads back): the float weight ``W + (alpha / rank) a @ b``, or, quantized, re-quantized from
        ``W_int8 / scale + (alpha / rank) a @ b``. The state itself when LoRA is off.

        Example:
            >>> import ember
            >>> from ember import layers, ops
            >>> ember.set_backend("numpy")
            >>> dense = layers.Dense(2)
            >>> _ = dense(ops.ones((1, 3)))
            >>> dense.enable_lora(1, b_initializer="ones")
            >>> merged = dense.merged_state(dense._read_state())
            >>> float(ops.to_numpy(merged["params"]["lora_kernel_b"]).sum())
            0.0
        """
        if not self.lora_enabled:
            return state
        name = self._adapted_weight
        a_name, b_name = self._lora_names()
        params = {**state["buffers"], **state["params"]}
        buffers = dict(state["buffers"])
        delta = ops.multiply(ops.matmul(params[a_name], params[b_name]), self._lora_factor())
        if self.quantization_mode == "int8":
            merged = ops.add(self._dequantized(params), ops.cast(delta, ops.dtype(params[self._scale_name()])))
            buffers[name], buffers[self._scale_name()] = self._quantize_weight(merged)
        else:
            buffers[name] = self._float_weight(params)
        new_params = dict(state["params"])
        new_params[a_name] = ops.zeros_like(new_params[a_name])
        new_params[b_name] = ops.zeros_like(new_params[b_name])
        return {"params": new_params, "buffers": buffers}


def exact_in_float32(contracted: int) -> bool:
    """Whether a sum of ``contracted`` int8 x int8 products is exact in float32 (|sum| <= K * 127**2 < 2**24)."""
    return contracted * 127 * 127 < EXACT_FLOAT32_SUM


def int8_matmul(inputs: Any, kernel: Any, contracted: int) -> Any:
    """``inputs @ kernel`` for int8-valued arrays, exactly: a float32 GEMM while the sums stay exact,
    else an int32 one."""
    if exact_in_float32(contracted):
        return ops.matmul(ops.cast(inputs, "float32"), ops.cast(kernel, "float32"))
    return ops.cast(ops.matmul(ops.cast(inputs, "int32"), ops.cast(kernel, "int32")), "float32")


def config_to_dict(config: Any) -> dict | None:
    """A quantization config as Keras serializes it (None stays None)."""
    if config is None:
        return None
    return {"module": "keras.quantizers", "class_name": type(config).__name__, "config": config.get_config(),
            "registered_name": None}


def config_from_dict(config: dict) -> Any:
    """Inverse of :func:`config_to_dict` (Int8QuantizationConfig only)."""
    if str(config.get("class_name", "")).rpartition(">")[2] != "Int8QuantizationConfig":
        raise ValueError(f"quantization_config: only Int8QuantizationConfig is supported, received "
                         f"{config.get('class_name')!r}")
    return Int8QuantizationConfig.from_config(dict(config.get("config") or {}))

