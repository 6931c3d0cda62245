"""``Optimizer``: the pure base every optimizer shares (clipping, weight decay, learning rate).

An optimizer is configuration only. Its state lives in an *opt_state* pytree that
:meth:`Optimizer.init` creates and :meth:`Optimizer.apply_gradients` replaces::

    opt_state = {
        "iterations": 0-d int64 array (int32 on MLX): updates applied so far,
        "learning_rate": 0-d floatx array (absent when the learning rate is a schedule),
        "<slot>": a tree mirroring params, per slot ("momentum", "velocity", ...),
        "<shared>": optimizer-wide scalars some optimizers keep (Nadam's "u_product"),
    }

``apply_gradients(grads, opt_state, params) -> (new_params, new_opt_state)`` is pure
(inputs are never mutated) and uses only ``ember.ops`` without reading array values
on the host, so a whole training step can run under ``mx.compile`` on MLX. Per step,
following Keras 3: gradients are cast to their parameter's dtype and clipped
(``clipnorm`` per variable, ``global_clipnorm`` over all of them, or ``clipvalue``),
decoupled weight decay ``param -= lr * weight_decay * param`` is applied, then the
subclass's :meth:`Optimizer.update_variable` runs for every parameter, with the learning
rate ``learning_rate_at(iterations)`` (schedules see the 0-based count of updates already
applied) and the 1-based step number ``t = iterations + 1``. A ``None`` gradient (a
frozen or unused parameter) leaves that parameter and its slots exactly as they were.

Backends may provide a fused in-place path, ``ember/backends/<name>/optim.py``
(torch: ``torch._foreach_*`` kernels); :meth:`Optimizer.apply_gradients_inplace` uses it
when the active backend has one and falls back to the pure path otherwise.

Example:
    >>> import ember
    >>> from ember import ops, optimizers
    >>> ember.set_backend("numpy")
    >>> opt = optimizers.SGD(learning_rate=0.5)
    >>> params = {"w": ops.ones((2,))}
    >>> state = opt.init(params)
    >>> params, state = opt.apply_gradients({"w": ops.ones((2,))}, state, params)
    >>> ops.to_numpy(params["w"]).tolist(), int(ops.to_numpy(state["iterations"]))
    ([0.5, 0.5], 1)
"""

from __future__ import annotations

import inspect
import math
import re
from typing import Any, ClassVar

import optree

from ember import backends, dtypes, ops
from ember.serialization import deserialize, serialize
from ember.training.optimizers import variable_updates
from ember.training.optimizers._math import check_number, is_number
from ember.training.optimizers.clipping import clip_by_global_norm, clip_by_norm

_KERAS_FORM = object()  # apply_gradients called with one argument: Keras's zip(grads, variables)
_UNSUPPORTED = {
    # Keras 3 arguments Ember accepts at their defaults only (configs written by Keras load).
    "use_ema": False,
    "ema_momentum": 0.99,
    "ema_overwrite_frequency": None,
    "gradient_accumulation_steps": None,
}


def _update_keywords(cls: type) -> Any:
    """True when ``cls.update_variable`` takes ``**kwargs``, else the names of the keywords it takes."""
    parameters = inspect.signature(cls.update_variable).parameters.values()  # type: ignore[attr-defined]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return True
    return frozenset(p.name for p in parameters if p.kind in (
        inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD))


class Optimizer:
    """Base class: pure ``init`` / ``apply_gradients`` over a parameter pytree.

    Subclasses declare their per-parameter slots in :meth:`slot_initializers` and implement
    :meth:`update_variable` (optionally :meth:`step_scalars` for per-step factors such as bias
    corrections, and :meth:`shared_initializers` / :meth:`update_shared` for optimizer-wide
    scalar state); the base handles validation, clipping, weight decay, the learning rate (a
    float or a schedule called with the step array), ``None`` gradients and config.

    Args:
        learning_rate: a float, a :class:`~ember.optimizers.schedules.LearningRateSchedule`, or
            a callable ``f(iterations) -> learning rate`` built from ``ember.ops``.
        weight_decay: if set, decoupled weight decay ``param -= lr * weight_decay * param``
            before each update (Keras 3 semantics).
        clipnorm: clip each gradient to this L2 norm.
        clipvalue: clip each gradient element to ``[-clipvalue, clipvalue]``.
        global_clipnorm: clip all gradients together to this global L2 norm.
        loss_scale_factor: if set, gradients are divided by it (the trainer multiplies the
            loss by it: :meth:`scale_loss`).
        name: the optimizer's name.

    The math of each optimizer is written once, in :meth:`update_variable`. A backend may run
    it as a fused kernel of its own (``ember/backends/<name>/optim.py``, tested equal to this
    generic path): the class names the kernel in its ``fused_kernel`` attribute (see
    :attr:`kernel_name`), so a backend needs no import of the optimizer classes.

    Only one of ``clipnorm``, ``clipvalue`` and ``global_clipnorm`` may be set. Keras's
    ``use_ema``, ``ema_momentum``, ``ema_overwrite_frequency`` and
    ``gradient_accumulation_steps`` are accepted at their defaults only (so Keras configs
    load); other values raise ``NotImplementedError``.

    Example:
        >>> import ember
        >>> from ember import ops, optimizers
        >>> ember.set_backend("numpy")
        >>> opt = optimizers.Adam(learning_rate=0.1, global_clipnorm=1.0)
        >>> params = {"w": ops.zeros((3,))}
        >>> state = opt.init(params)
        >>> sorted(state)
        ['iterations', 'learning_rate', 'momentum', 'velocity']
        >>> params, state = opt.apply_gradients({"w": ops.ones((3,))}, state, params)
        >>> [round(v, 4) for v in ops.to_numpy(params["w"]).tolist()]
        [-0.1, -0.1, -0.1]
    """

    default_name = "optimizer"
    # Whether apply_gradients_inplace may write the arrays it is given (a fused kernel does). False: it
    # always returns new arrays (the ZeRO ShardedOptimizer), so a caller need not copy its own first.
    writes_given_arrays: bool = True
    # The name of the backends' fused kernels for this exact class's math (None: no kernel).
    fused_kernel: str | None = None
    # Per class, set by __init_subclass__ when the class is made: the step scalars its update_variable
    # takes (True: all of them).
    _ember_update_keywords: ClassVar[bool | frozenset[str]] = True

    def __init__(self, learning_rate: Any = 0.001, weight_decay: float | None = None, clipnorm: float | None = None,
                 clipvalue: float | None = None, global_clipnorm: float | None = None, use_ema: bool = False,
                 ema_momentum: float = 0.99, ema_overwrite_frequency: int | None = None,
                 loss_scale_factor: float | None = None, gradient_accumulation_steps: int | None = None,
                 name: str | None = None, **kwargs: Any) -> None:
        owner = type(self).__name__
        kwargs.pop("decay", None)  # Keras 3 ignores the legacy `decay` too
        if kwargs:
            raise TypeError(f"{owner}: unknown argument(s) {sorted(kwargs)}")
        given = {"use_ema": use_ema, "ema_momentum": ema_momentum, "ema_overwrite_frequency": ema_overwrite_frequency,
                 "gradient_accumulation_steps": gradient_accumulation_steps}
        for argument, value in given.items():
            if value != _UNSUPPORTED[argument]:
                raise NotImplementedError(
                    f"{owner}: `{argument}={value!r}` is not supported by Ember optimizers (on any backend); "
                    f"keep the default {_UNSUPPORTED[argument]!r} (for EMA weights, average the params in a callback; "
                    "for gradient accumulation, use a larger batch)")
        clips = {"clipnorm": clipnorm, "clipvalue": clipvalue, "global_clipnorm": global_clipnorm}
        if sum(v is not None for v in clips.values()) > 1:
            raise ValueError(
                f"{owner}: only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set, received "
                + ", ".join(f"{k}={v!r}" for k, v in clips.items()))
        for argument, value in clips.items():
            if value is not None:
                check_number(owner, argument, value, 0.0)
        if weight_decay is not None:
            check_number(owner, "weight_decay", weight_decay, 0.0)
        if loss_scale_factor is not None:
            check_number(owner, "loss_scale_factor", loss_scale_factor, 0.0, low_open=True)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"{owner}: `name` must be a string, received {name!r}")
        self.name = name if name is not None else self.default_name
        self.weight_decay = None if weight_decay is None else float(weight_decay)
        self.clipnorm = None if clipnorm is None else float(clipnorm)
        self.clipvalue = None if clipvalue is None else float(clipvalue)
        self.global_clipnorm = None if global_clipnorm is None else float(global_clipnorm)
        self.loss_scale_factor = None if loss_scale_factor is None else float(loss_scale_factor)
        self._exclude_pattern: re.Pattern | None = None
        self._learning_rate = self._check_learning_rate(learning_rate)

    # --- learning rate ------------------------------------------------------------------------
    def _check_learning_rate(self, value: Any) -> Any:
        if is_number(value):  # a finite, non-negative rate (a negative one would climb the loss)
            return check_number(type(self).__name__, "learning_rate", value, 0.0, math.inf, high_open=True)
        if callable(value):
            return value
        raise ValueError(
            f"{type(self).__name__}: `learning_rate` must be a float, a LearningRateSchedule or a callable "
            f"taking the iteration count, received learning_rate={value!r}")

    @property
    def learning_rate(self) -> Any:
        """The configured learning rate: a float or a schedule (settable for float learning rates).

        A running ``opt_state`` keeps its own copy: after setting, apply it with
        :meth:`set_learning_rate` (no recompilation needed).
        """
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        if not is_number(self._learning_rate) and is_number(value):
            raise TypeError(
                f"{type(self).__name__}: this optimizer was created with a learning rate schedule, so its "
                "learning rate is not settable to a float; create it with a float learning_rate instead")
        self._learning_rate = self._check_learning_rate(value)

    @property
    def has_schedule(self) -> bool:
        """True when the learning rate is a schedule (computed from the step each update)."""
        return not is_number(self._learning_rate)

    def learning_rate_at(self, iterations: Any, opt_state: dict | None = None) -> Any:
        """The learning rate for the update after ``iterations`` updates.

        A schedule is called with ``iterations`` (an array or int); a constant learning rate
        comes from ``opt_state["learning_rate"]`` when ``opt_state`` is given, else the float.

        Example:
            >>> import ember
            >>> from ember import ops, optimizers
            >>> ember.set_backend("numpy")
            >>> schedule = optimizers.schedules.ExponentialDecay(1.0, decay_steps=1, decay_rate=0.5)
            >>> float(ops.to_numpy(optimizers.SGD(schedule).learning_rate_at(2)))
            0.25
        """
        if self.has_schedule:
            return self._learning_rate(iterations)
        if opt_state is not None and "learning_rate" in opt_state:
            return opt_state["learning_rate"]
        return self._learning_rate

    def set_learning_rate(self, opt_state: dict, value: float) -> dict:
        """A copy of ``opt_state`` with the constant learning rate ``value`` (also stored on the optimizer).

        Example:
            >>> import ember
            >>> from ember import ops, optimizers
            >>> ember.set_backend("numpy")
            >>> opt = optimizers.SGD(0.1)
            >>> state = opt.set_learning_rate(opt.init({"w": ops.ones((1,))}), 0.01)
            >>> round(float(ops.to_numpy(state["learning_rate"])), 6)
            0.01
        """
        self.learning_rate = value
        new_state = dict(opt_state)
        new_state["learning_rate"] = ops.convert_to_tensor(float(value), dtype=dtypes.floatx())
        return new_state

    def scale_loss(self, loss: Any) -> Any:
        """``loss * loss_scale_factor`` when a factor is set, else ``loss``."""
        if self.loss_scale_factor is None:
            return loss

        return ops.multiply(loss, self.loss_scale_factor)

    # --- weight decay exclusions --------------------------------------------------------------
    def exclude_from_weight_decay(self, var_list: Any = None, var_names: Any = None) -> None:
        """Skip weight decay for parameters whose path (``"dense/bias"``) matches any of ``var_names``.

        ``var_names`` are regular expressions searched in the ``/``-joined path of each
        parameter in the params tree (Keras searches the variable name; here the path is the name).

        Example:
            >>> from ember import optimizers
            >>> opt = optimizers.AdamW()
            >>> opt.exclude_from_weight_decay(var_names=["bias"])
            >>> opt.uses_weight_decay("dense/bias"), opt.uses_weight_decay("dense/kernel")
            (False, True)
        """
        if var_list:
            raise TypeError(
                f"{type(self).__name__}.exclude_from_weight_decay: Ember parameters are arrays in a tree, not "
                "variable objects: pass var_names (regular expressions matched against paths like 'dense/bias')")
        if var_names:
            if isinstance(var_names, str) or not all(isinstance(n, str) for n in var_names):
                raise TypeError(f"{type(self).__name__}.exclude_from_weight_decay: var_names must be a list of "
                                f"strings, received {var_names!r}")
            self._exclude_pattern = re.compile("|".join(sorted(set(var_names))))
        else:
            self._exclude_pattern = None

    def uses_weight_decay(self, path: str) -> bool:
        """Whether the parameter at ``path`` gets weight decay."""
        return self.weight_decay is not None and (
            self._exclude_pattern is None or self._exclude_pattern.search(path) is None)

    def decay_mask(self, params: Any) -> list[bool]:
        """Whether weight decay applies to each leaf of ``params`` (in flattening order).

        Example:
            >>> from ember import optimizers
            >>> opt = optimizers.AdamW(weight_decay=0.1)
            >>> opt.exclude_from_weight_decay(var_names=["bias"])
            >>> opt.decay_mask({"dense": {"bias": 0.0, "kernel": 0.0}})
            [False, True]
        """
        return self._decay_mask(params, len(optree.tree_leaves(params)))

    def _decay_mask(self, params: Any, count: int) -> list[bool]:
        if self.weight_decay is None:
            return [False] * count
        if self._exclude_pattern is None:
            return [True] * count
        paths = optree.tree_paths(params)
        return [self.uses_weight_decay("/".join(str(k) for k in path)) for path in paths]

    # --- subclass interface -------------------------------------------------------------------
    def slot_initializers(self) -> dict[str, float]:
        """``{slot_name: initial value}`` for the per-parameter slots this optimizer keeps."""
        return {}

    def shared_initializers(self) -> dict[str, float]:
        """``{name: initial value}`` for optimizer-wide scalar state (e.g. Nadam's ``u_product``)."""
        return {}

    def update_shared(self, shared: dict, step: Any) -> dict:
        """New optimizer-wide scalars (stored in opt_state) for the 1-based float32 step ``step``."""
        return shared

    def step_scalars(self, lr: Any, step: Any, shared: dict) -> dict:
        """Scalars every parameter's update shares (bias corrections...), passed to update_variable as keywords.

        Computed once per step and parameter dtype (``lr``, ``step`` and ``shared`` already in
        that dtype) rather than once per parameter: cheaper, and under ``mx.compile`` it keeps
        scalar chains out of the fused per-element kernels. Default: ``shared`` itself.
        """
        return shared

    def update_variable(self, grad: Any, param: Any, slots: dict, lr: Any, step: Any) -> tuple:
        """One parameter's update: ``(new_param, new_slots)``.

        A subclass adds a keyword argument for each entry of :meth:`step_scalars` it uses (or
        ``**scalars`` for all of them): the step passes it only the entries its signature names.

        Args:
            grad: the (clipped) gradient, in ``param``'s dtype.
            param: the parameter (after weight decay).
            slots: ``{slot_name: array}`` for this parameter.
            lr: the learning rate, a 0-d array of ``param``'s dtype.
            step: the 1-based step number ``iterations + 1``, a 0-d array of ``param``'s dtype.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement update_variable")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Read from update_variable's signature when the class is made, not inside a step (where
        # torch.compile could not trace inspect, nor the first step's write of the cache).
        cls._ember_update_keywords = _update_keywords(cls)

    def _accepted(self, scalars: dict) -> dict:
        """The entries of ``scalars`` this class's update_variable takes (a subclass may override it narrower)."""
        accepted = type(self)._ember_update_keywords  # each subclass's own (__init_subclass__)
        if not isinstance(accepted, frozenset):  # True: update_variable takes **scalars
            return scalars
        return {k: v for k, v in scalars.items() if k in accepted}

    @property
    def kernel_name(self) -> str | None:
        """The name of the backends' fused kernels for this optimizer's math, or None.

        Only the class that declares ``fused_kernel`` has one: a subclass (which may override
        :meth:`update_variable`) runs the generic path unless it declares its own.

        Example:
            >>> from ember import optimizers
            >>> optimizers.AdamW().kernel_name
            'adam'
            >>> class MyAdam(optimizers.Adam):
            ...     pass
            >>> MyAdam().kernel_name is None
            True
        """
        return type(self).__dict__.get("fused_kernel")

    # --- pure core ----------------------------------------------------------------------------
    def init(self, params: Any) -> dict:
        """The initial opt_state for ``params`` (a pytree of floating native arrays).

        Raises:
            TypeError: a leaf is not an array of the active backend or not floating.
        """
        leaves, treedef = optree.tree_flatten(params)
        for path, leaf in zip(optree.tree_paths(params), leaves):
            self._check_param(path, leaf)
        int_dtype = "int32" if backends.get_backend() == "mlx" else "int64"
        state: dict[str, Any] = {"iterations": ops.zeros((), dtype=int_dtype)}
        if not self.has_schedule:
            state["learning_rate"] = ops.convert_to_tensor(self._learning_rate, dtype=dtypes.floatx())
        for slot, value in self.slot_initializers().items():
            made = [ops.zeros_like(p) if value == 0.0 else ops.full_like(p, value) for p in leaves]
            state[slot] = treedef.unflatten(made)
        for key, value in self.shared_initializers().items():
            state[key] = ops.convert_to_tensor(value, dtype=dtypes.floatx())
        return state

    def _check_param(self, path: tuple, leaf: Any) -> None:
        where = "/".join(str(k) for k in path) or "<root>"
        if not ops.is_array(leaf):
            raise TypeError(f"{type(self).__name__}: parameter {where!r} must be a native "
                            f"{backends.get_backend()} array, received {type(leaf).__name__}")
        if not dtypes.is_float(ops.dtype(leaf)):
            raise TypeError(f"{type(self).__name__}: parameter {where!r} must be floating, "
                            f"received dtype {ops.dtype(leaf)}")

    def _flatten_state(self, treedef: Any, opt_state: Any) -> dict[str, list]:
        owner = type(self).__name__
        if not isinstance(opt_state, dict) or "iterations" not in opt_state:
            raise ValueError(f"{owner}: opt_state must be the dict made by {owner}.init(params), received "
                             f"{type(opt_state).__name__}")
        expected = set(self.slot_initializers()) | set(self.shared_initializers())
        missing = sorted(expected - set(opt_state))
        if missing:
            raise ValueError(f"{owner}: opt_state lacks {missing} (keys: {sorted(opt_state)}); "
                             f"was it made by another optimizer's init()?")
        slots = {}
        for slot in self.slot_initializers():
            try:
                slots[slot] = treedef.flatten_up_to(opt_state[slot])
            except (ValueError, TypeError) as error:
                raise ValueError(f"{owner}: opt_state[{slot!r}] does not mirror params: {error}") from None
        return slots

    def _flatten_grads(self, treedef: Any, grads: Any) -> list:
        try:
            return treedef.flatten_up_to(grads)
        except (ValueError, TypeError) as error:
            raise ValueError(f"{type(self).__name__}: grads must mirror params (None for no gradient): "
                             f"{error}") from None

    def _prepare(self, grads: Any, opt_state: Any, params: Any) -> tuple:
        """Validated flat views: (leaves, treedef, grad_leaves, slots, active indices)."""
        leaves, treedef = optree.tree_flatten(params)
        grad_leaves = self._flatten_grads(treedef, grads)
        slots = self._flatten_state(treedef, opt_state)
        active = [i for i, g in enumerate(grad_leaves) if g is not None]
        if leaves and not active:
            raise ValueError(f"{type(self).__name__}: no gradients provided for any variable (every grad is None)")
        for i in active:
            if ops.shape(grad_leaves[i]) != ops.shape(leaves[i]):
                path = "/".join(str(k) for k in optree.tree_paths(params)[i]) or "<root>"
                raise ValueError(f"{type(self).__name__}: gradient for {path!r} has shape "
                                 f"{ops.shape(grad_leaves[i])}, expected the parameter's shape {ops.shape(leaves[i])}")
        return leaves, treedef, grad_leaves, slots, active

    def clip_gradients(self, grads: list) -> list:
        """Apply ``loss_scale_factor``, then ``clipnorm`` / ``global_clipnorm`` / ``clipvalue`` to a list of arrays."""
        if self.loss_scale_factor is not None:
            grads = [ops.divide(g, self.loss_scale_factor) for g in grads]
        if self.clipnorm:
            return [clip_by_norm(g, self.clipnorm) for g in grads]
        if self.global_clipnorm:
            return clip_by_global_norm(grads, self.global_clipnorm)
        if self.clipvalue:
            return [ops.clip(g, -self.clipvalue, self.clipvalue) for g in grads]
        return grads

    def apply(self, grads: Any, trainable_variables: Any) -> None:
        """Keras's stateful update of ``ember.Variable``s (``model.trainable_variables``); the owning
        model's state is replaced whole. See :mod:`ember.training.optimizers.variable_updates`."""
        variable_updates.apply_to_variables(self, grads, trainable_variables)

    @property
    def iterations(self) -> Any:
        """Updates applied through :meth:`apply` / ``apply_gradients(zip(grads, vars))``."""
        return variable_updates.iterations(self)

    def apply_gradients(self, grads: Any, opt_state: Any = _KERAS_FORM, params: Any = _KERAS_FORM) -> Any:
        """One update: ``(new_params, new_opt_state)``; the inputs are not modified.

        Keras's form ``apply_gradients(zip(grads, variables))`` (one argument: pairs of gradient and
        ``ember.Variable``) updates the variables' owner instead and returns None (see :meth:`apply`).

        Args:
            grads: a pytree mirroring ``params``; ``None`` leaves skip that parameter.
            opt_state: from :meth:`init` or a previous call.
            params: the current parameters.

        Raises:
            ValueError: grads or opt_state do not mirror params, a gradient's shape differs
                from its parameter's, or every gradient is None.
        """
        if opt_state is _KERAS_FORM and params is _KERAS_FORM:
            pairs = list(grads)
            if not all(isinstance(p, (tuple, list)) and len(p) == 2 for p in pairs):
                raise TypeError(f"{type(self).__name__}.apply_gradients: give (grads, opt_state, params), or "
                                "Keras's zip(grads, variables)")
            return self.apply([g for g, _ in pairs], [v for _, v in pairs])
        if opt_state is _KERAS_FORM or params is _KERAS_FORM:
            raise TypeError(f"{type(self).__name__}.apply_gradients: give grads, opt_state and params together")
        leaves, treedef, grad_leaves, slots, active = self._prepare(grads, opt_state, params)
        if not leaves:
            return params, opt_state
        iterations = opt_state["iterations"]
        lr = self.learning_rate_at(iterations, opt_state)
        step = ops.add(ops.cast(iterations, "float32"), 1.0)
        shared = {key: opt_state[key] for key in self.shared_initializers()}
        shared = self.update_shared(shared, step)
        decay = self._decay_mask(params, len(leaves))
        clipped = self.clip_gradients([ops.cast(grad_leaves[i], ops.dtype(leaves[i])) for i in active])
        new_leaves = list(leaves)
        new_slots = {slot: list(values) for slot, values in slots.items()}
        scalars: dict[str, tuple] = {}
        for i, grad in zip(active, clipped):
            param = leaves[i]
            dtype = ops.dtype(param)
            if dtype not in scalars:
                lr_d, step_d = ops.cast(lr, dtype), ops.cast(step, dtype)
                extra = self._accepted(self.step_scalars(lr_d, step_d, {k: ops.cast(v, dtype)
                                                                        for k, v in shared.items()}))
                decay_d = None if self.weight_decay is None else ops.multiply(lr_d, self.weight_decay)
                scalars[dtype] = (lr_d, step_d, extra, decay_d)
            lr_d, step_d, extra, decay_d = scalars[dtype]
            if decay[i]:
                param = ops.subtract(param, ops.multiply(param, decay_d))
            param, updated = self.update_variable(grad, param, {s: v[i] for s, v in slots.items()}, lr_d, step_d,
                                                  **extra)
            new_leaves[i] = param
            for slot in new_slots:
                new_slots[slot][i] = updated[slot]
        new_state = dict(opt_state)
        new_state["iterations"] = ops.add(iterations, 1)
        for slot, values in new_slots.items():
            new_state[slot] = treedef.unflatten(values)
        new_state.update(shared)
        return treedef.unflatten(new_leaves), new_state

    def apply_gradients_inplace(self, grads: Any, opt_state: dict, params: Any) -> tuple[Any, dict]:
        """Like :meth:`apply_gradients`, through the active backend's fused path when it has one.

        With the torch backend the arrays in ``params`` and ``opt_state`` are updated in
        place with ``torch._foreach_*`` kernels (same numbers as the pure path) and returned;
        elsewhere this is :meth:`apply_gradients`. Always use the returned values. Only for
        arrays the caller owns (``fit``'s updates that must not write its state run on copies).

        Example:
            >>> import ember
            >>> from ember import ops, optimizers
            >>> ember.set_backend("numpy")
            >>> opt = optimizers.SGD(1.0)
            >>> params = {"w": ops.ones((2,))}
            >>> params, state = opt.apply_gradients_inplace({"w": ops.ones((2,))}, opt.init(params), params)
            >>> ops.to_numpy(params["w"]).tolist()
            [0.0, 0.0]
        """
        fast = _fast_path()
        if fast is None or not fast.supports(self):
            return self.apply_gradients(grads, opt_state, params)
        leaves, treedef, grad_leaves, slots, active = self._prepare(grads, opt_state, params)
        if not leaves:
            return params, opt_state

        iterations = opt_state["iterations"]
        lr = self.learning_rate_at(iterations, opt_state)
        step = ops.add(iterations, 1)
        shared = {key: opt_state[key] for key in self.shared_initializers()}
        fast.apply_gradients_inplace(self, grad_leaves, leaves, slots, step, lr, shared=shared,
                                     decay=self._decay_mask(params, len(leaves)))
        new_state = dict(opt_state)
        new_state["iterations"] = step
        return params, new_state

    def plan_in_place(self, grads: Any, opt_state: dict, params: Any, scratch: Any = None,
                      step: int | None = None) -> Any:
        """The first half of an all-or-nothing in-place update: everything computed, nothing written.

        Where the active backend has in-place kernels that run without entering Python code
        (``SGD``/``Adam``/``AdamW``: torch on any device, NumPy), returns a plan its
        ``write_in_place`` carries out: it updates the arrays of ``params``, the slots of
        ``opt_state`` and ``opt_state["iterations"]`` in place, with the numbers of
        :meth:`apply_gradients_inplace`. ``fit`` writes under held signals
        (``ember.backends._held_signals``), so a step once begun finishes.

        Args:
            grads: gradients mirroring ``params`` (None for no gradient).
            opt_state: the optimizer state of ``params`` (the caller owns its arrays).
            params: the parameters (the caller owns them).
            scratch: spare arrays mirroring ``params`` (their values are overwritten); Adam needs them.
            step: the 1-based number of this update (``iterations + 1``) when the caller knows it on
                the host; None: computed from ``opt_state["iterations"]`` (on the device).

        Raises:
            TypeError: no in-place plan on the active backend for this optimizer and these arrays.

        Example:
            >>> import ember
            >>> from ember import ops, optimizers
            >>> from ember.backends.torch import optim
            >>> ember.set_backend("torch")
            >>> opt = optimizers.SGD(0.5)
            >>> params = {"w": ops.ones((2,))}
            >>> state = opt.init(params)
            >>> optim.write_in_place(opt.plan_in_place({"w": ops.ones((2,))}, state, params))
            >>> ops.to_numpy(params["w"]).tolist(), int(state["iterations"])
            ([0.5, 0.5], 1)
        """
        fast = _fast_path()
        plan = getattr(fast, "plan_in_place", None)
        leaves, treedef, grad_leaves, slots, active = self._prepare(grads, opt_state, params)
        slots_written = getattr(fast, "in_place_slots", None)
        if plan is None or slots_written is None or not leaves or slots_written(self, leaves) is None:
            raise TypeError(f"{type(self).__name__}.plan_in_place: no in-place kernel on the "
                            f"{backends.get_backend()} backend for these arrays; use apply_gradients")
        iterations = opt_state["iterations"]
        lr = self.learning_rate_at(iterations, opt_state)
        if step is None:
            step = ops.add(iterations, 1)
        spare = treedef.flatten_up_to(scratch) if scratch is not None else [None] * len(leaves)
        return plan(self, grad_leaves, leaves, slots, step, lr, self._decay_mask(params, len(leaves)), spare,
                    iterations)

    # --- config -------------------------------------------------------------------------------
    def get_config(self) -> dict:
        """The constructor arguments (a schedule learning rate as its serialized config), Keras's keys."""
        learning_rate = self._learning_rate if not self.has_schedule else serialize(self._learning_rate)
        return {
            "name": self.name,
            "learning_rate": learning_rate,
            "weight_decay": self.weight_decay,
            "clipnorm": self.clipnorm,
            "global_clipnorm": self.global_clipnorm,
            "clipvalue": self.clipvalue,
            "use_ema": False,
            "ema_momentum": 0.99,
            "ema_overwrite_frequency": None,
            "loss_scale_factor": self.loss_scale_factor,
            "gradient_accumulation_steps": None,
        }

    @classmethod
    def from_config(cls, config: dict) -> Optimizer:
        """Rebuild an optimizer from :meth:`get_config` output (no state)."""
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = deserialize(config["learning_rate"])
        return cls(**config)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, learning_rate={self._learning_rate!r})"


def _fast_path() -> Any:
    """The active backend's fused update kernels (its ``optim`` part), or None where it has none."""
    return backends.current().optim
