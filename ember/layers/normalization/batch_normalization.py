"""``BatchNormalization``: normalize with batch statistics while training, running ones after."""

from __future__ import annotations

from typing import Any, ClassVar

from ember import initializers, ops
from ember.layers.core._checks import input_shape_of
from ember.layers.layer import DeclarativeLayer
from ember.layers.normalization import _common
from ember.layers.weights import WeightSpec, resolve_options


class BatchNormalization(DeclarativeLayer):
    """Batch normalization (Ioffe & Szegedy, 2015), Keras semantics.

    ``y = (x - mean) / sqrt(variance + epsilon) * gamma + beta`` per feature of ``axis``.

    * ``training=True`` (and ``trainable=True``): ``mean``/``variance`` are the batch's
      (biased variance, over every axis but ``axis``), and the running statistics
      are returned updated in the new state's buffers:
      ``moving = moving * momentum + batch * (1 - momentum)``. (PyTorch's ``momentum``
      is ``1 - `` this one, and PyTorch tracks the *unbiased* batch variance.)
    * Otherwise (inference, or a frozen layer): the running statistics
      ``moving_mean``/``moving_variance`` are used and the state is returned unchanged.
      As in Keras 3, ``trainable=False`` means inference mode even with ``training=True``.

    State: params ``gamma`` (if ``scale``) and ``beta`` (if ``center``); buffers
    ``moving_mean`` and ``moving_variance``, all of shape ``(input_shape[axis],)``.
    :meth:`apply` never changes arrays in place: it returns new buffers. The buffer
    updates are cut from the gradient (``stop_gradient``), as Keras's variable assignment.
    ``float16``/``bfloat16`` inputs are computed in float32 and cast back. Training without a
    mask runs ``ops.nn.fused_batch_norm`` (statistics and normalization in one
    ``torch.native_batch_norm`` call on torch; the composite on NumPy and MLX).

    Args:
        axis: the features axis (an int; ``-1`` for channels-last, ``1`` for channels-first).
        momentum: running-average momentum in ``[0, 1]``.
        epsilon: added to the variance (``> 0``).
        center: learn the offset ``beta``.
        scale: learn the scale ``gamma``.
        beta_initializer, gamma_initializer: initializers of the params.
        moving_mean_initializer, moving_variance_initializer: initializers of the buffers.
        beta_regularizer, gamma_regularizer: weight penalties (:mod:`ember.regularizers`).
        beta_constraint, gamma_constraint: projections applied after optimizer steps
            (:mod:`ember.constraints`), reported by :meth:`constraints`.
        synchronized: Keras's cross-replica statistics; Ember runs on one device, so
            only ``False`` is accepted.

    ``apply`` also takes ``mask`` (shape ``inputs.shape[:-1]``, True where a position
    counts): while training, masked-out positions do not enter the batch statistics.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> bn = layers.BatchNormalization(momentum=0.9, name="bn")
        >>> state = bn.build((None, 2))
        >>> x = ops.convert_to_tensor([[0.0, 1.0], [2.0, 3.0]])
        >>> y, new_state = bn.apply(state, x, training=True)
        >>> ops.to_numpy(y).astype(float).round(4).tolist()   # (x - mean) / sqrt(var + 0.001)
        [[-0.9995, -0.9995], [0.9995, 0.9995]]
        >>> ops.to_numpy(new_state["buffers"]["moving_mean"]).astype(float).round(3).tolist()
        [0.1, 0.2]
        >>> ops.to_numpy(state["buffers"]["moving_mean"]).tolist()  # the old state is untouched
        [0.0, 0.0]
    """

    axis: int = -1
    momentum: float = 0.99
    epsilon: float = 1e-3
    center: bool = True
    scale: bool = True
    beta_initializer: Any = "zeros"
    gamma_initializer: Any = "ones"
    moving_mean_initializer: Any = "zeros"
    moving_variance_initializer: Any = "ones"
    beta_regularizer: Any = None
    gamma_regularizer: Any = None
    beta_constraint: Any = None
    gamma_constraint: Any = None
    synchronized: bool = False

    supports_masking = True
    float32_compute = True  # statistics in float32 under a mixed policy (ember.layers.autocast), as Keras
    _apply_ignores_rng: ClassVar[bool] = True  # draws no random numbers: models pass it no step seed

    def __post_init__(self) -> None:
        super().__post_init__()
        self._normalize("axis", _common.check_axis(self, self.axis, allow_list=False))
        _common.check_real(self, "momentum", 0.0, 1.0)
        _common.check_real(self, "epsilon", 0.0, low_open=True)
        _common.check_bools(self, "center", "scale", "synchronized")
        if self.synchronized:
            raise ValueError(f"{self.name}: synchronized=True (cross-replica statistics) is not supported: "
                             "Ember runs each model on one device; use synchronized=False")
        initializer_fields = ("beta_initializer", "gamma_initializer", "moving_mean_initializer",
                              "moving_variance_initializer")
        for field in initializer_fields:
            self._normalize(field, initializers.get(getattr(self, field)))
        resolve_options(self, "beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint")

    # --- state -----------------------------------------------------------------------------
    def _feature_axis(self, shape: tuple) -> int:
        (axis,) = _common.resolve_axes(self, self.axis, len(shape), shape)
        return axis

    def weight_specs(self, input_shape: Any = None) -> list[WeightSpec]:
        """``gamma``/``beta`` (when ``scale``/``center``) and the non-trainable moving statistics, one
        value per feature."""
        dims: tuple = (None,)
        if input_shape is not None:
            shape = input_shape_of(self, input_shape, min_rank=2)
            dims = _common.known_dims(self, shape, (self._feature_axis(shape),))
        specs = []
        if self.scale:
            specs.append(WeightSpec("gamma", dims, self.gamma_initializer, self.gamma_regularizer,
                                    self.gamma_constraint))
        if self.center:
            specs.append(WeightSpec("beta", dims, self.beta_initializer, self.beta_regularizer, self.beta_constraint))
        specs.append(WeightSpec("moving_mean", dims, self.moving_mean_initializer, trainable=False))
        specs.append(WeightSpec("moving_variance", dims, self.moving_variance_initializer, trainable=False))
        return specs

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape = input_shape_of(self, input_shape, min_rank=2)
        self._feature_axis(shape)
        return shape

    # --- computation ---------------------------------------------------------------------------
    def apply(self, state: dict, inputs: Any, *, training: bool = False, rng: Any = None,
              mask: Any = None) -> tuple[Any, dict]:
        shape = _common.input_shape(self, inputs)
        if len(shape) < 2:
            raise ValueError(f"layer {self.name!r} expects inputs of rank >= 2, received shape {shape}")
        axis = self._feature_axis(shape)
        buffers = state["buffers"]
        params = state["params"]
        channels = tuple(ops.shape(buffers["moving_mean"]))[0]
        if shape[axis] != channels:
            raise ValueError(f"layer {self.name!r} was built for {channels} features on axis {self.axis}, "
                             f"received inputs of shape {shape}")
        x, input_dtype = _common.compute_input(self, inputs)
        reduction = tuple(a for a in range(len(shape)) if a != axis)

        fused = None
        if training and self.trainable and mask is None:
            # One fused op: the batch statistics, the normalized outputs and the moving averages.
            fused, moving_mean, moving_variance = ops.nn.fused_batch_norm(
                x, params["gamma"] if self.scale else None, params["beta"] if self.center else None,
                axis=axis, epsilon=self.epsilon, moving_mean=buffers["moving_mean"],
                moving_variance=buffers["moving_variance"], momentum=self.momentum)
            new_state = {"params": params, "buffers": {**buffers, "moving_mean": moving_mean,
                                                       "moving_variance": moving_variance}}
        elif training and self.trainable:
            mean, variance = self._moments(x, reduction, mask, shape)
            momentum = self.momentum
            new_buffers = dict(buffers)
            for key, batch in (("moving_mean", mean), ("moving_variance", variance)):
                old = buffers[key]
                moved = ops.add(ops.multiply(ops.cast(old, ops.dtype(batch)), momentum),
                                ops.multiply(batch, 1.0 - momentum))
                new_buffers[key] = ops.stop_gradient(ops.cast(moved, ops.dtype(old)))
            new_state = {"params": params, "buffers": new_buffers}
        else:
            mean = ops.cast(buffers["moving_mean"], ops.dtype(x))
            variance = ops.cast(buffers["moving_variance"], ops.dtype(x))
            new_state = state
        outputs = self._normalized(x, params, mean, variance, axis, shape) if fused is None else fused
        if input_dtype != ops.dtype(outputs):
            outputs = ops.cast(outputs, input_dtype)
        return outputs, new_state

    def _normalized(self, x: Any, params: dict, mean: Any, variance: Any, axis: int, shape: tuple) -> Any:
        """``x * inv + (beta - mean * inv)``: two passes over x, the rest on (C,) vectors."""
        inv = ops.rsqrt(ops.add(variance, self.epsilon))
        if self.scale:
            inv = ops.multiply(inv, ops.cast(params["gamma"], ops.dtype(x)))
        offset = ops.negative(ops.multiply(mean, inv))
        if self.center:
            offset = ops.add(offset, ops.cast(params["beta"], ops.dtype(x)))
        inv = _common.broadcast_param(inv, (axis,), shape)
        offset = _common.broadcast_param(offset, (axis,), shape)
        return ops.add(ops.multiply(x, inv), offset)

    def _moments(self, x: Any, reduction: tuple[int, ...], mask: Any, shape: tuple) -> tuple[Any, Any]:
        if mask is None:
            return ops.nn.moments(x, axes=reduction)
        if reduction != tuple(range(len(shape) - 1)):
            raise ValueError(f"layer {self.name!r}: a mask (one value per position, Keras's convention) needs "
                             f"the features on the last axis, but axis={self.axis} for inputs of shape {shape}")
        mask_shape = tuple(ops.shape(mask))
        if mask_shape != shape[:-1]:
            raise ValueError(f"layer {self.name!r}: the mask must have the inputs' shape without the last axis, "
                             f"{shape[:-1]}, received {mask_shape}")
        # Keras's masked moments: weights broadcast over the last axis.
        weights = ops.expand_dims(ops.cast(mask, ops.dtype(x)), -1)
        count = ops.add(ops.sum(weights, axis=reduction, keepdims=True), 1e-7)
        mean = ops.divide(ops.sum(ops.multiply(weights, x), axis=reduction, keepdims=True), count)
        squared = ops.square(ops.subtract(x, mean))
        variance = ops.divide(ops.sum(ops.multiply(weights, squared), axis=reduction, keepdims=True), count)
        return ops.reshape(mean, (-1,)), ops.reshape(variance, (-1,))

    # --- regularization ------------------------------------------------------------------------
