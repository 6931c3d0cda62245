"""Learning rate schedules (Keras 3 names and semantics), exported as ``ember.optimizers.schedules``.

A schedule is called with the optimizer's step (an int or a 0-d integer array: the number
of updates already applied) and returns a 0-d ``floatx()`` array. Everything is computed
with ``ember.ops`` from the step array (no Python-side reads of its value), so a schedule
runs inside ``mx.compile`` and never syncs a device.

Example:
    >>> import ember
    >>> from ember import ops
    >>> from ember.optimizers import schedules
    >>> ember.set_backend("numpy")
    >>> schedule = schedules.CosineDecay(0.0, decay_steps=10, warmup_target=1.0, warmup_steps=5)
    >>> [round(float(ops.to_numpy(schedule(s))), 3) for s in (0, 5, 10, 15, 20)]
    [0.0, 1.0, 0.5, 0.0, 0.0]
"""

from __future__ import annotations

import math
from typing import Any

from ember import dtypes, ops
from ember.serialization import add_keras_names, register_serializable
from ember.serialization import deserialize as _deserialize
from ember.serialization import serialize as _serialize
from ember.training.optimizers._math import check_number, is_number, power


def _as_float(step: Any) -> Any:
    return ops.cast(step, dtypes.floatx())


def _positive_steps(owner: str, argument: str, value: Any) -> Any:
    if not is_number(value) or value <= 0:
        raise ValueError(f"{owner}: `{argument}` must be > 0, received {argument}={value!r}")
    return value


@register_serializable("ember")
class LearningRateSchedule:
    """Base class: ``schedule(step) -> learning rate``; subclasses implement ``__call__`` and ``get_config``.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.optimizers import schedules
        >>> class Halving(schedules.LearningRateSchedule):
        ...     def __call__(self, step):
        ...         return ops.divide(1.0, ops.add(ops.cast(step, "float32"), 1.0))
        ...     def get_config(self):
        ...         return {}
        >>> ember.set_backend("numpy")
        >>> float(ops.to_numpy(Halving()(1)))
        0.5
    """

    def __call__(self, step: Any) -> Any:
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must override __call__(self, step)")

    def get_config(self) -> dict:
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must override get_config()")

    @classmethod
    def from_config(cls, config: dict) -> LearningRateSchedule:
        """Rebuild from :meth:`get_config` output."""
        return cls(**config)

    def __repr__(self) -> str:
        try:
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        except NotImplementedError:
            args = ""
        return f"{type(self).__name__}({args})"


def _whole_periods(step: Any, period: float) -> Any:
    """``floor(step / period)``, exact at multiples of ``period`` on every device.

    CUDA divides by a scalar as a multiplication by its reciprocal: ``90 / 30`` can come out a
    hair off 3, which ``floor``/``ceil`` would turn into 2 or 4. The remainder is exact, the
    quotient of the exact multiple ``step - remainder`` is within an ulp of an integer, and
    rounding recovers it.
    """
    return ops.round(ops.divide(ops.subtract(step, ops.mod(step, period)), period))


class _PeriodDecay(LearningRateSchedule):
    """What ExponentialDecay and InverseTimeDecay share: the rate decays by ``decay_rate`` over each
    ``decay_steps`` (continuously, or at whole periods when ``staircase``)."""

    def __init__(self, owner: str, initial_learning_rate: float, decay_steps: int, decay_rate: float,
                 staircase: bool, name: str, decay_rate_low: float | None = None) -> None:
        self.initial_learning_rate = check_number(owner, "initial_learning_rate", initial_learning_rate)
        self.decay_steps = _positive_steps(owner, "decay_steps", decay_steps)
        self.decay_rate = check_number(owner, "decay_rate", decay_rate, decay_rate_low)
        self.staircase = bool(staircase)
        self.name = name

    def _periods(self, step: Any) -> Any:
        """``step / decay_steps`` as a float array (``floor`` of it when ``staircase``)."""
        step = _as_float(step)
        period = float(self.decay_steps)
        return _whole_periods(step, period) if self.staircase else ops.divide(step, period)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase, "name": self.name}


@register_serializable("ember")
class ExponentialDecay(_PeriodDecay):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)`` (integer division when ``staircase``).

    Args:
        initial_learning_rate: the learning rate at step 0.
        decay_steps: positive; the step count over which the rate is multiplied by ``decay_rate``.
        decay_rate: the decay factor.
        staircase: decay at discrete intervals (``floor(step / decay_steps)``).
        name: the schedule's name.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.optimizers import schedules
        >>> ember.set_backend("numpy")
        >>> schedule = schedules.ExponentialDecay(1.0, decay_steps=2, decay_rate=0.5, staircase=True)
        >>> [float(ops.to_numpy(schedule(s))) for s in (0, 1, 2, 3, 4)]
        [1.0, 1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float, staircase: bool = False,
                 name: str = "ExponentialDecay") -> None:
        super().__init__("ExponentialDecay", initial_learning_rate, decay_steps, decay_rate, staircase, name, 0.0)

    def __call__(self, step: Any) -> Any:
        return ops.multiply(power(self.decay_rate, self._periods(step)), self.initial_learning_rate)


@register_serializable("ember")
class PiecewiseConstantDecay(LearningRateSchedule):
    """A piecewise constant learning rate.

    ``values[0]`` while ``step <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i-1] < step <= boundaries[i]``, and ``values[-1]`` after ``boundaries[-1]``.

    Args:
        boundaries: strictly increasing step numbers.
        values: learning rates, one more than ``boundaries``.
        name: the schedule's name.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.optimizers import schedules
        >>> ember.set_backend("numpy")
        >>> schedule = schedules.PiecewiseConstantDecay([2, 4], [1.0, 0.5, 0.25])
        >>> [float(ops.to_numpy(schedule(s))) for s in (0, 2, 3, 4, 5)]
        [1.0, 1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, boundaries: list, values: list, name: str = "PiecewiseConstant") -> None:
        boundaries, values = list(boundaries), list(values)
        if len(boundaries) != len(values) - 1:
            raise ValueError(
                "PiecewiseConstantDecay: the length of boundaries should be 1 less than the length of values, "
                f"received boundaries={boundaries} of length {len(boundaries)} and values={values} of length "
                f"{len(values)}")
        if not all(is_number(b) for b in boundaries) or not all(is_number(v) for v in values):
            raise ValueError(f"PiecewiseConstantDecay: boundaries and values must be numbers, received "
                             f"boundaries={boundaries}, values={values}")
        if any(b >= a for b, a in zip(boundaries, boundaries[1:])):
            raise ValueError(f"PiecewiseConstantDecay: boundaries must be strictly increasing, received {boundaries}")
        self.boundaries = boundaries
        self.values = values
        self.name = name

    def __call__(self, step: Any) -> Any:
        step = ops.convert_to_tensor(step)
        result = ops.full((), float(self.values[-1]), dtype=dtypes.floatx())
        for boundary, value in zip(reversed(self.boundaries), reversed(self.values[:-1])):
            result = ops.where(ops.less_equal(step, boundary), float(value), result)
        return result

    def get_config(self) -> dict:
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


def _cycles(step: Any, period: float) -> Any:
    """``ceil(step / period)``, 1 at step 0 (exact as :func:`_whole_periods`)."""
    whole = _whole_periods(step, period)
    cycles = ops.add(whole, ops.cast(ops.greater(ops.mod(step, period), 0.0), ops.dtype(whole)))
    return ops.where(ops.equal(step, 0.0), 1.0, cycles)


@register_serializable("ember")
class PolynomialDecay(LearningRateSchedule):
    """Polynomial decay from ``initial_learning_rate`` to ``end_learning_rate`` over ``decay_steps``.

    ``(initial - end) * (1 - min(step, decay_steps) / decay_steps) ** power + end``; with
    ``cycle``, ``decay_steps`` is multiplied by ``ceil(step / decay_steps)`` (1 at step 0).

    Args:
        initial_learning_rate: the learning rate at step 0.
        decay_steps: positive.
        end_learning_rate: the final learning rate. Defaults to 0.0001.
        power: the polynomial's power. Defaults to 1.0.
        cycle: restart the decay after each ``decay_steps`` multiple. Defaults to False.
        name: the schedule's name.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.optimizers import schedules
        >>> ember.set_backend("numpy")
        >>> schedule = schedules.PolynomialDecay(1.0, decay_steps=4, end_learning_rate=0.0)
        >>> [float(ops.to_numpy(schedule(s))) for s in (0, 2, 4, 8)]
        [1.0, 0.5, 0.0, 0.0]
    """

    def __init__(self, initial_learning_rate: float, decay_steps: int, end_learning_rate: float = 0.0001,
                 power: float = 1.0, cycle: bool = False, name: str = "PolynomialDecay") -> None:
        self.initial_learning_rate = check_number("PolynomialDecay", "initial_learning_rate", initial_learning_rate)
        self.decay_steps = _positive_steps("PolynomialDecay", "decay_steps", decay_steps)
        self.end_learning_rate = check_number("PolynomialDecay", "end_learning_rate", end_learning_rate)
        self.power = check_number("PolynomialDecay", "power", power)
        self.cycle = bool(cycle)
        self.name = name

    def __call__(self, step: Any) -> Any:
        step = _as_float(step)
        decay_steps = float(self.decay_steps)
        if self.cycle:
            decay = ops.multiply(_cycles(step, decay_steps), decay_steps)
        else:
            step = ops.minimum(step, decay_steps)
            decay = decay_steps
        remaining = ops.subtract(1.0, ops.divide(step, decay))
        delta = self.initial_learning_rate - self.end_learning_rate
        return ops.add(ops.multiply(ops.power(remaining, self.power), delta), self.end_learning_rate)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "end_learning_rate": self.end_learning_rate, "power": self.power, "cycle": self.cycle,
                "name": self.name}


@register_serializable("ember")
class InverseTimeDecay(_PeriodDecay):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (``floor`` of the ratio when ``staircase``).

    Args:
        initial_learning_rate: the learning rate at step 0.
        decay_steps: positive.
        decay_rate: the decay rate.
        staircase: decay at discrete intervals.
        name: the schedule's name.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.optimizers import schedules
        >>> ember.set_backend("numpy")
        >>> schedule = schedules.InverseTimeDecay(1.0, decay_steps=1, decay_rate=1.0)
        >>> [float(ops.to_numpy(schedule(s))) for s in (0, 1, 3)]
        [1.0, 0.5, 0.25]
    """

    def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float, staircase: bool = False,
                 name: str = "InverseTimeDecay") -> None:
        super().__init__("InverseTimeDecay", initial_learning_rate, decay_steps, decay_rate, staircase, name)

    def __call__(self, step: Any) -> Any:
        p = self._periods(step)
        return ops.divide(self.initial_learning_rate, ops.add(ops.multiply(p, self.decay_rate), 1.0))


def _cosine(fraction: Any, alpha: float, scale: Any = 1.0) -> Any:
    """``(1 - alpha) * scale * 0.5 * (1 + cos(pi * fraction)) + alpha``."""
    cosine = ops.multiply(ops.add(ops.cos(ops.multiply(fraction, math.pi)), 1.0), 0.5)
    return ops.add(ops.multiply(ops.multiply(cosine, scale), 1.0 - alpha), alpha)


@register_serializable("ember")
class CosineDecay(LearningRateSchedule):
    """Cosine decay (Loshchilov & Hutter) with an optional linear warmup (Goyal et al.).

    Without ``warmup_target``: ``initial * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) /
    decay_steps)) + alpha)``. With it: a linear ramp from ``initial_learning_rate`` to
    ``warmup_target`` over ``warmup_steps``, then the cosine decay from ``warmup_target``
    over the next ``decay_steps`` (constant after them).

    Args:
        initial_learning_rate: the learning rate at step 0.
        decay_steps: positive; number of steps to decay over.
        alpha: the final learning rate as a fraction of the decay's starting rate. Defaults to 0.0.
        name: the schedule's name.
        warmup_target: the learning rate reached at the end of warmup; None for no warmup.
        warmup_steps: number of warmup steps. Defaults to 0.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.optimizers import schedules
        >>> ember.set_backend("numpy")
        >>> schedule = schedules.CosineDecay(1.0, decay_steps=4)
        >>> [round(float(ops.to_numpy(schedule(s))), 4) for s in (0, 2, 4, 6)]
        [1.0, 0.5, 0.0, 0.0]
    """

    def __init__(self, initial_learning_rate: float, decay_steps: int, alpha: float = 0.0, name: str = "CosineDecay",
                 warmup_target: float | None = None, warmup_steps: int = 0) -> None:
        self.initial_learning_rate = check_number("CosineDecay", "initial_learning_rate", initial_learning_rate)
        self.decay_steps = _positive_steps("CosineDecay", "decay_steps", decay_steps)
        self.alpha = check_number("CosineDecay", "alpha", alpha)
        self.name = name
        self.warmup_target = None if warmup_target is None else check_number(
            "CosineDecay", "warmup_target", warmup_target)
        check_number("CosineDecay", "warmup_steps", warmup_steps, 0.0)
        self.warmup_steps = warmup_steps

    def __call__(self, step: Any) -> Any:
        step = _as_float(step)
        decay_steps = float(self.decay_steps)
        if self.warmup_target is None:
            fraction = ops.divide(ops.minimum(step, decay_steps), decay_steps)
            return ops.multiply(_cosine(fraction, self.alpha), self.initial_learning_rate)
        warmup_steps = float(self.warmup_steps)
        step = ops.minimum(step, decay_steps + warmup_steps)
        decayed = ops.multiply(_cosine(ops.divide(ops.subtract(step, warmup_steps), decay_steps), self.alpha),
                               self.warmup_target)
        if warmup_steps == 0.0:
            return decayed
        delta = self.warmup_target - self.initial_learning_rate
        warm = ops.add(ops.multiply(ops.divide(step, warmup_steps), delta), self.initial_learning_rate)
        return ops.where(ops.less(step, warmup_steps), warm, decayed)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "alpha": self.alpha, "name": self.name, "warmup_target": self.warmup_target,
                "warmup_steps": self.warmup_steps}


@register_serializable("ember")
class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR, Loshchilov & Hutter).

    The multiplier decays from 1 to ``alpha`` over ``first_decay_steps``; then it restarts,
    each period ``t_mul`` times longer and starting ``m_mul`` times lower than the previous.
    The restart index is computed from the step with a float32-safe correction, so steps
    exactly on a period boundary always start the new period.

    Args:
        initial_learning_rate: the learning rate at step 0.
        first_decay_steps: positive; the first period's length.
        t_mul: period length multiplier. Defaults to 2.0.
        m_mul: initial learning rate multiplier per period. Defaults to 1.0.
        alpha: the minimum as a fraction of ``initial_learning_rate``. Defaults to 0.0.
        name: the schedule's name.

    Example:
        >>> import ember
        >>> from ember import ops
        >>> from ember.optimizers import schedules
        >>> ember.set_backend("numpy")
        >>> schedule = schedules.CosineDecayRestarts(1.0, first_decay_steps=2, t_mul=2.0, m_mul=0.5)
        >>> [round(float(ops.to_numpy(schedule(s))), 4) for s in (0, 1, 2, 4, 6)]
        [1.0, 0.5, 0.5, 0.25, 0.25]
    """

    def __init__(self, initial_learning_rate: float, first_decay_steps: int, t_mul: float = 2.0, m_mul: float = 1.0,
                 alpha: float = 0.0, name: str = "SGDRDecay") -> None:
        self.initial_learning_rate = check_number(
            "CosineDecayRestarts", "initial_learning_rate", initial_learning_rate)
        self.first_decay_steps = _positive_steps("CosineDecayRestarts", "first_decay_steps", first_decay_steps)
        self.t_mul = check_number("CosineDecayRestarts", "t_mul", t_mul, 0.0, low_open=True)
        self.m_mul = check_number("CosineDecayRestarts", "m_mul", m_mul, 0.0)
        self.alpha = check_number("CosineDecayRestarts", "alpha", alpha)
        self.name = name

    def _sum_periods(self, index: Any) -> Any:
        """Total length (in first periods) of the first ``index`` periods: ``(1 - t**i) / (1 - t)``."""
        return ops.divide(ops.subtract(1.0, ops.power(self.t_mul, index)), 1.0 - self.t_mul)

    def __call__(self, step: Any) -> Any:
        step = _as_float(step)
        fraction = ops.divide(step, float(self.first_decay_steps))
        if self.t_mul == 1.0:
            restart = _whole_periods(step, float(self.first_decay_steps))
            fraction = ops.divide(ops.mod(step, float(self.first_decay_steps)), float(self.first_decay_steps))
        else:
            t = self.t_mul
            guess = ops.floor(ops.divide(ops.log(ops.subtract(1.0, ops.multiply(fraction, 1.0 - t))), math.log(t)))
            # float32 rounding can put a boundary step one period early or late: correct by one.
            guess = ops.add(guess, ops.cast(ops.less_equal(self._sum_periods(ops.add(guess, 1.0)), fraction),
                                            dtypes.floatx()))
            restart = ops.subtract(guess, ops.cast(ops.greater(self._sum_periods(guess), fraction), dtypes.floatx()))
            fraction = ops.divide(ops.subtract(fraction, self._sum_periods(restart)), ops.power(t, restart))
        scale = ops.power(ops.cast(self.m_mul, dtypes.floatx()), restart)
        return ops.multiply(_cosine(fraction, self.alpha, scale), self.initial_learning_rate)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate, "first_decay_steps": self.first_decay_steps,
                "t_mul": self.t_mul, "m_mul": self.m_mul, "alpha": self.alpha, "name": self.name}


add_keras_names("keras.optimizers.schedules", (LearningRateSchedule, ExponentialDecay, PiecewiseConstantDecay,
                                               PolynomialDecay, InverseTimeDecay, CosineDecay, CosineDecayRestarts))

def serialize(schedule: LearningRateSchedule) -> dict:
    """``{"class_name": "ember>CosineDecay", "config": {...}}`` for a registered schedule.

    Example:
        >>> from ember.optimizers import schedules
        >>> schedules.serialize(schedules.InverseTimeDecay(0.1, 10, 0.5))["class_name"]
        'ember>InverseTimeDecay'
    """
    return _serialize(schedule)


def deserialize(config: dict) -> LearningRateSchedule:
    """Inverse of :func:`serialize` (also accepts Keras's ``{"class_name": "CosineDecay", ...}``).

    Example:
        >>> from ember.optimizers import schedules
        >>> schedules.deserialize({"class_name": "ExponentialDecay",
        ...                        "config": {"initial_learning_rate": 0.1, "decay_steps": 5, "decay_rate": 0.9}})
        ... # doctest: +NORMALIZE_WHITESPACE
        ExponentialDecay(initial_learning_rate=0.1, decay_steps=5, decay_rate=0.9, staircase=False,
        name='ExponentialDecay')
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"schedules.deserialize: expected {{'class_name': ..., 'config': ...}}, received {config!r}")
    return _deserialize({"class_name": config["class_name"], "config": config.get("config", {})})
