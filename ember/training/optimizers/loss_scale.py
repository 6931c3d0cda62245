"""``LossScaleOptimizer``: dynamic loss scaling for ``mixed_float16`` training (Keras's).

float16 gradients underflow to zero below ~6e-8 (and lose precision below ~6e-5). The
loss is multiplied by a large *scale* before differentiation, so the gradients flowing
back through float16 activations stay representable; the optimizer divides them by the
scale again before the update. The scale adapts:

* a step whose gradients are all finite updates the weights; after ``dynamic_growth_steps``
  such steps in a row the scale doubles;
* a step with an ``inf``/``nan`` gradient (the scale was too large: an overflow) is skipped
  (weights, slots and ``iterations`` unchanged) and the scale halves.

The decision is made on the device with ``where`` (no host synchronisation, and the same
graph every step under ``mx.compile``). The optimizer state is the inner optimizer's plus
``dynamic_scale`` (float32) and ``step_counter`` (finite steps since the last change), so
checkpoints save and restore the scale with the slots. ``model.compile`` wraps the
optimizer in one automatically when a layer of the model computes in float16 (as Keras
does under ``mixed_float16``); every backend's training step then differentiates the loss times
the state's scale (``StepCore.loss_scale_of``; :mod:`ember.training.loss_scaling`).

Example:
    >>> import ember
    >>> from ember import ops, optimizers
    >>> ember.set_backend("numpy")
    >>> opt = optimizers.LossScaleOptimizer(optimizers.SGD(0.5), initial_scale=8.0, dynamic_growth_steps=2)
    >>> params = {"w": ops.ones((2,))}
    >>> state = opt.init(params)
    >>> params, state = opt.apply_gradients({"w": ops.convert_to_tensor([8.0, float("inf")])}, state, params)
    >>> ops.to_numpy(params["w"]).tolist(), float(state["dynamic_scale"]), int(state["iterations"])
    ([1.0, 1.0], 4.0, 0)
    >>> params, state = opt.apply_gradients({"w": ops.convert_to_tensor([4.0, 4.0])}, state, params)
    >>> ops.to_numpy(params["w"]).tolist(), float(state["dynamic_scale"]), int(state["step_counter"])
    ([0.5, 0.5], 4.0, 1)
"""

from __future__ import annotations

import numbers
from typing import Any

import optree

from ember import backends, dtypes, ops
from ember.serialization import deserialize, register_serializable, serialize
from ember.training.optimizers.base import Optimizer

SCALE_KEYS = ("dynamic_scale", "step_counter")


@register_serializable("ember")
class LossScaleOptimizer(Optimizer):
    """An optimizer wrapper applying dynamic loss scaling (see the module docstring).

    Args:
        inner_optimizer: the optimizer that updates the weights (an :class:`Optimizer`, or its serialized config).
        initial_scale: the first loss scale (> 0; Keras's default ``2**15``).
        dynamic_growth_steps: finite steps in a row after which the scale doubles (a positive int).
        name: the optimizer's name.

    Raises:
        TypeError/ValueError: a bad argument (named).

    Example:
        >>> import ember
        >>> opt = ember.optimizers.LossScaleOptimizer(ember.optimizers.SGD(0.1), initial_scale=1024.0)
        >>> opt.inner_optimizer.get_config()["name"], opt.initial_scale, opt.dynamic_growth_steps
        ('SGD', 1024.0, 2000)
    """

    default_name = "loss_scale_optimizer"
    inner_optimizer: Optimizer
    initial_scale: float
    dynamic_growth_steps: int

    def __init__(self, inner_optimizer: Any, initial_scale: float = 2.0 ** 15, dynamic_growth_steps: int = 2000,
                 name: str | None = None, **kwargs: Any) -> None:
        owner = type(self).__name__
        if not kwargs.pop("dynamic", True):
            raise ValueError(f"{owner}: dynamic=False is not supported (as in Keras 3): set `loss_scale_factor` "
                             "on the inner optimizer for a fixed scale")
        for key, default in (("weight_decay", None), ("clipnorm", None), ("global_clipnorm", None),
                             ("clipvalue", None), ("loss_scale_factor", None), ("learning_rate", None)):
            if key in kwargs and kwargs.pop(key) != default:
                raise ValueError(f"{owner}: set `{key}` on the inner optimizer, not on the LossScaleOptimizer")
        super().__init__(name=name, **kwargs)
        from_registry = deserialize(inner_optimizer) if isinstance(inner_optimizer, dict) else inner_optimizer
        if not isinstance(from_registry, Optimizer) or isinstance(from_registry, LossScaleOptimizer):
            raise TypeError(f"{owner}: inner_optimizer must be an ember optimizer (not a LossScaleOptimizer), "
                            f"received {inner_optimizer!r}")
        if isinstance(initial_scale, bool) or not isinstance(initial_scale, numbers.Real) or not initial_scale > 0 \
                or initial_scale == float("inf"):
            raise ValueError(f"{owner}: initial_scale must be a finite number > 0, received {initial_scale!r}")
        if isinstance(dynamic_growth_steps, bool) or not isinstance(dynamic_growth_steps, numbers.Integral) \
                or dynamic_growth_steps < 1:
            raise ValueError(f"{owner}: dynamic_growth_steps must be an int >= 1, received {dynamic_growth_steps!r}")
        self.inner_optimizer = from_registry
        self.writes_given_arrays = from_registry.writes_given_arrays  # it writes only through the inner one
        self.initial_scale = float(initial_scale)
        self.dynamic_growth_steps = int(dynamic_growth_steps)

    # --- the inner optimizer's learning rate ----------------------------------------------------
    @property
    def learning_rate(self) -> Any:
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        if "inner_optimizer" not in self.__dict__:  # Optimizer.__init__ sets the base's own
            self._learning_rate = value
            return
        self.inner_optimizer.learning_rate = value

    @property
    def has_schedule(self) -> bool:
        return self.inner_optimizer.has_schedule

    def learning_rate_at(self, iterations: Any, opt_state: dict | None = None) -> Any:
        return self.inner_optimizer.learning_rate_at(iterations, opt_state)

    def set_learning_rate(self, opt_state: dict, value: float) -> dict:
        return self.inner_optimizer.set_learning_rate(opt_state, value)

    def exclude_from_weight_decay(self, var_list: Any = None, var_names: Any = None) -> None:
        self.inner_optimizer.exclude_from_weight_decay(var_list, var_names)

    def slot_initializers(self) -> dict[str, float]:
        return self.inner_optimizer.slot_initializers()

    def shared_initializers(self) -> dict[str, float]:
        return self.inner_optimizer.shared_initializers()

    # --- loss scaling ------------------------------------------------------------------------------
    def scale_loss(self, loss: Any) -> Any:
        """``loss`` times the current scale, for a custom loop with ``apply(grads, variables)`` (Keras's):
        the scale of the last ``apply``, or ``initial_scale`` before any. ``fit`` scales with the scale
        of its own optimizer state instead."""
        states = self.__dict__.get("_variable_states")
        scale = next(reversed(states.values()))[1]["dynamic_scale"] if states else self.initial_scale
        return ops.multiply(loss, ops.cast(scale, ops.dtype(loss)) if ops.is_array(scale) else scale)

    def init(self, params: Any) -> dict:
        """The inner optimizer's state plus ``dynamic_scale`` (``initial_scale``) and ``step_counter`` (0)."""
        state = dict(self.inner_optimizer.init(params))
        state["dynamic_scale"] = ops.convert_to_tensor(self.initial_scale, dtype="float32")
        state["step_counter"] = ops.zeros((), dtype=ops.dtype(state["iterations"]))
        return state

    def _split(self, opt_state: Any) -> tuple[dict, Any, Any]:
        if not isinstance(opt_state, dict) or any(key not in opt_state for key in SCALE_KEYS):
            received = sorted(opt_state) if isinstance(opt_state, dict) else opt_state
            raise ValueError(f"{type(self).__name__}: opt_state must be the dict made by init(params) (with "
                             f"{SCALE_KEYS}), received {received!r}")
        inner = {k: v for k, v in opt_state.items() if k not in SCALE_KEYS}
        return inner, opt_state["dynamic_scale"], opt_state["step_counter"]

    def apply_gradients(self, grads: Any, opt_state: Any = None, params: Any = None) -> Any:
        """One update from gradients of the *scaled* loss: unscaled, applied by the inner optimizer when
        all are finite (the scale grows after ``dynamic_growth_steps`` such steps), else skipped with the
        scale halved. Keras's ``apply_gradients(zip(grads, variables))`` form works too."""
        if opt_state is None and params is None:
            return super().apply_gradients(grads)
        inner_state, scale, counter = self._split(opt_state)
        finite = _all_finite(grads)
        new_params, new_inner = self.inner_optimizer.apply_gradients(_unscaled(grads, scale), inner_state, params)
        new_params = optree.tree_map(lambda new, old: ops.where(finite, new, old), new_params, params)
        new_inner = optree.tree_map(lambda new, old: ops.where(finite, new, old), new_inner, inner_state)
        return new_params, self._with_next_scale(new_inner, finite, scale, counter)

    def apply_gradients_inplace(self, grads: Any, opt_state: dict, params: Any) -> tuple[Any, dict]:
        """:meth:`apply_gradients` through the inner optimizer's fused in-place update where the host
        reads the gradients' finiteness without waiting (torch on the CPU): a finite step updates
        ``params`` and the inner slots in place from the unscaled gradients, an overflowing one
        leaves them as they are (the scale follows the same rule). Elsewhere (an accelerator, whose
        step must not wait for the device; the other backends) the pure :meth:`apply_gradients`."""
        inner_state, scale, counter = self._split(opt_state)
        present = [g for g in optree.tree_leaves(grads) if g is not None]
        if not present or not _host_decides(present):
            return self.apply_gradients(grads, opt_state, params)
        finite = _all_finite(grads)
        if bool(ops.to_numpy(finite)):
            params, inner_state = self.inner_optimizer.apply_gradients_inplace(_unscaled(grads, scale), inner_state,
                                                                               params)
        return params, self._with_next_scale(inner_state, finite, scale, counter)

    def _with_next_scale(self, inner_state: dict, finite: Any, scale: Any, counter: Any) -> dict:
        """``inner_state`` with the scale and counter after a step: doubled after
        ``dynamic_growth_steps`` finite steps in a row, halved by an overflow."""
        grow = ops.greater_equal(ops.add(counter, 1), self.dynamic_growth_steps)
        new_scale = ops.where(finite, ops.where(grow, ops.multiply(scale, 2.0), scale), ops.multiply(scale, 0.5))
        zero = ops.zeros_like(counter)
        new_counter = ops.where(finite, ops.where(grow, zero, ops.add(counter, 1)), zero)
        state = dict(inner_state)
        state["dynamic_scale"] = ops.cast(new_scale, "float32")
        state["step_counter"] = ops.cast(new_counter, ops.dtype(counter))
        return state

    def get_config(self) -> dict:
        return {"name": self.name, "inner_optimizer": serialize(self.inner_optimizer),
                "initial_scale": self.initial_scale, "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config: dict) -> LossScaleOptimizer:
        config = dict(config)
        inner = config.pop("inner_optimizer")
        return cls(deserialize(inner) if isinstance(inner, dict) else inner, **config)

    def __repr__(self) -> str:
        return f"LossScaleOptimizer(inner_optimizer={self.inner_optimizer!r}, scale={self.initial_scale})"


def _all_finite(grads: Any) -> Any:
    """A 0-d boolean array: whether every gradient (None entries skipped) is finite (True for none)."""
    finite = None
    for grad in optree.tree_leaves(grads):
        ok = ops.all(ops.isfinite(grad))
        finite = ok if finite is None else ops.logical_and(finite, ok)
    return ops.convert_to_tensor(True) if finite is None else finite


def _unscaled(grads: Any, scale: Any) -> Any:
    """The floating gradients divided by ``scale`` (None entries and integer ones as they are)."""
    leaves, treedef = optree.tree_flatten(grads, none_is_leaf=True)
    return treedef.unflatten([None if g is None else ops.divide(g, ops.cast(scale, ops.dtype(g)))
                              if dtypes.is_float(ops.dtype(g)) else g for g in leaves])


def _host_decides(grads: list) -> bool:
    """Whether the skip decision is read on the host: torch tensors on the CPU (a read waits for
    nothing there, and the inner optimizer's fused in-place kernels need a decided step)."""
    return backends.get_backend() == "torch" and all(str(ops.get_device(g)).startswith("cpu") for g in grads)

