"""What ``compile`` resolves: the losses, loss weights and metrics of every model output.

A model has one or more outputs, each with a name (the output layer's name, or the key of
a dict of outputs). ``loss``, ``loss_weights``, ``metrics`` and ``weighted_metrics`` follow
Keras: a single loss applies to every output; a list gives one entry per output (in order);
a dict maps output names to entries (outputs without one get no loss/metric). Metrics may
be a list applied to every output, a list of lists (one list per output) or a dict.

Logs are named as in Keras: ``loss`` (the total), ``<output>_loss`` per output when there
are several, and metric names prefixed with ``<output>_`` when there are several outputs.

Example:
    >>> import ember
    >>> from ember.training.compile_utils import CompileLoss
    >>> ember.set_backend("numpy")
    >>> loss = CompileLoss("mse", None, output_names=["out"])
    >>> [entry.name for entry in loss.entries]
    ['mse']
"""

from __future__ import annotations

import numbers
from typing import Any

from ember import ops
from ember.training import losses, metrics
from ember.training.data.convert import is_array_like


# ------------------------------------------------------------------------------- outputs
def output_names(model: Any) -> list[str]:
    """The names of a model's outputs, in the order of its flat outputs."""
    outputs = getattr(model, "_outputs_struct", None)
    if outputs is None or not hasattr(model, "_output_list"):
        return [getattr(model, "name", "output")]
    if isinstance(outputs, dict):
        return list(outputs)
    names = []
    for tensor in model._output_list:
        name = tensor.node.layer.name if tensor.node is not None else tensor.name
        if name in names:
            name = tensor.name.replace(":", "_")
        names.append(name)
    return names


def flatten_outputs(value: Any, names: list[str], what: str) -> list:
    """``y_pred`` / ``y`` / ``sample_weight`` as one entry per output (None where missing)."""
    count = len(names)
    if value is None:
        return [None] * count
    if isinstance(value, dict):
        unknown = set(value) - set(names)
        if unknown:
            raise ValueError(f"{what}: unknown output name(s) {sorted(unknown)}; the model's outputs are {names}")
        return [value.get(name) for name in names]
    if not isinstance(value, (list, tuple)) or is_array_like(value):
        if count == 1:
            return [value]
        if what == "sample_weight":
            return [value] * count  # one weight array for every output
        raise ValueError(f"{what}: the model has {count} outputs {names}, so {what} must be a list or dict with "
                         f"one entry per output; received a single array")
    if len(value) != count:
        raise ValueError(f"{what}: expected {count} entries (one per output {names}), received {len(value)}")
    return list(value)


def _per_output(argument: str, value: Any, names: list[str], single_ok: bool) -> list:
    """``value`` spread to one entry per output (list/dict/single)."""
    if isinstance(value, dict):
        unknown = set(value) - set(names)
        if unknown:
            raise ValueError(f"compile: {argument} names unknown output(s) {sorted(unknown)}; the model's "
                             f"outputs are {names}")
        return [value.get(name) for name in names]
    if isinstance(value, (list, tuple)):
        if len(value) != len(names):
            raise ValueError(f"compile: {argument} is a list of {len(value)} entries but the model has "
                             f"{len(names)} output(s) {names}")
        return list(value)
    if not single_ok and len(names) > 1:
        raise ValueError(f"compile: {argument} must be a list or dict for a model with outputs {names}")
    return [value] * len(names)


# ---------------------------------------------------------------------------------- losses
class LossEntry:
    """One output's loss: ``fn(y_true, y_pred, sample_weight) -> scalar``, its weight and log name."""

    def __init__(self, index: int, name: str, fn: Any, weight: float, log_name: str) -> None:
        self.index, self.name, self.fn, self.weight, self.log_name = index, name, fn, weight, log_name


def resolve_loss(identifier: Any) -> tuple[Any, str]:
    """A :class:`~ember.losses.Loss` (functions wrapped) and its display name."""
    obj = losses.get(identifier)
    if obj is None:
        return None, ""
    if not isinstance(obj, losses.Loss):
        if not callable(obj):
            raise TypeError(f"compile: loss must be a name, a Loss or a function, received {identifier!r}")
        obj = losses.LossFunctionWrapper(obj)
    name = identifier if isinstance(identifier, str) else obj.name
    return obj, name


class CompileLoss:
    """The losses of every output, their weights, and the total (see the module docstring)."""

    def __init__(self, loss: Any, loss_weights: Any, output_names: list[str]) -> None:
        self.output_names = list(output_names)
        multi = len(self.output_names) > 1
        specs = _per_output("loss", loss, self.output_names, single_ok=True)
        if loss_weights is None:
            weights = [1.0] * len(self.output_names)
        elif isinstance(loss_weights, numbers.Real) and not isinstance(loss_weights, bool):
            weights = [float(loss_weights)] * len(self.output_names)
        else:
            weights = _per_output("loss_weights", loss_weights, self.output_names, single_ok=False)
            weights = [1.0 if w is None else w for w in weights]
        for w in weights:
            if isinstance(w, bool) or not isinstance(w, numbers.Real):
                raise TypeError(f"compile: loss_weights must be numbers, received {loss_weights!r}")
        self.entries: list[LossEntry] = []
        for index, (spec, weight) in enumerate(zip(specs, weights)):
            fn, name = resolve_loss(spec)
            if fn is None:
                continue
            log_name = f"{self.output_names[index]}_loss" if multi else "loss"
            self.entries.append(LossEntry(index, name, fn, float(weight), log_name))
        self.specs = specs

    @property
    def per_output_logs(self) -> bool:
        return len(self.output_names) > 1

    def loss_for_output(self, index: int) -> Any:
        for entry in self.entries:
            if entry.index == index:
                return entry.fn
        return None

    def __call__(self, y_true: list, y_pred: list, sample_weight: list) -> tuple[Any, list]:
        """``(weighted total or None, [loss per entry])`` over flat per-output lists."""
        total = None
        values = []
        for entry in self.entries:
            target = y_true[entry.index]
            if target is None:
                raise ValueError(f"the model's output {self.output_names[entry.index]!r} has a loss but no target "
                                 "y was given for it")
            value = entry.fn(target, y_pred[entry.index], sample_weight[entry.index])
            values.append(value)
            weighted = value if entry.weight == 1.0 else ops.multiply(value, entry.weight)
            total = weighted if total is None else ops.add(total, weighted)
        return total, values


# --------------------------------------------------------------------------------- metrics
class MetricEntry:
    """One metric on one output: the pure metric, its log name, output index and weighting."""

    def __init__(self, metric: Any, log_name: str, index: int, weighted: bool) -> None:
        self.metric, self.log_name, self.index, self.weighted = metric, log_name, index, weighted


def _metric_lists(argument: str, value: Any, names: list[str]) -> list[list]:
    if value is None:
        return [[] for _ in names]
    if isinstance(value, dict):
        per = _per_output(argument, value, names, single_ok=False)
        return [[] if v is None else (list(v) if isinstance(v, (list, tuple)) else [v]) for v in per]
    if isinstance(value, (list, tuple)):
        nested = len(names) > 1 and len(value) == len(names) and all(
            v is None or isinstance(v, (list, tuple)) for v in value)
        if nested:
            return [[] if v is None else list(v) for v in value]
        return [list(value) for _ in names]
    raise TypeError(f"compile: {argument} must be a list or dict of metrics, received {type(value).__name__}")


def resolve_metric(identifier: Any, loss: Any) -> Any:
    """A pure :class:`~ember.metrics.Metric` for ``identifier`` (named as given, like Keras)."""
    obj = metrics.get(identifier, loss=loss)
    if not isinstance(obj, metrics.Metric):
        if not callable(obj):
            raise TypeError(f"compile: a metric must be a name, a Metric or a function, received {identifier!r}")
        obj = metrics.MeanMetricWrapper(obj, name=getattr(obj, "__name__", None))
    if isinstance(identifier, str):
        obj.name = identifier
    return obj


class CompileMetrics:
    """Every (output, metric) pair with its log name (see the module docstring)."""

    def __init__(self, metrics_arg: Any, weighted_metrics: Any, output_names: list[str],
                 compile_loss: CompileLoss) -> None:
        self.output_names = list(output_names)
        multi = len(self.output_names) > 1
        self.entries: list[MetricEntry] = []
        taken = {"loss"} | {entry.log_name for entry in compile_loss.entries}
        for argument, weighted in (("metrics", False), ("weighted_metrics", True)):
            lists = _metric_lists(argument, metrics_arg if not weighted else weighted_metrics, self.output_names)
            for index, identifiers in enumerate(lists):
                for identifier in identifiers:
                    if identifier is None:
                        continue
                    metric = resolve_metric(identifier, compile_loss.loss_for_output(index))
                    name = metric.name
                    log_name = f"{self.output_names[index]}_{name}" if multi else name
                    if log_name in taken and weighted:
                        log_name = f"{self.output_names[index]}_weighted_{name}" if multi else f"weighted_{name}"
                    if log_name in taken:
                        raise ValueError(f"compile: two metrics would both be logged as {log_name!r}; give them "
                                         "distinct names (e.g. metrics.Accuracy(name='acc2'))")
                    taken.add(log_name)
                    self.entries.append(MetricEntry(metric, log_name, index, weighted))

    @property
    def names(self) -> list[str]:
        return [entry.log_name for entry in self.entries]

    def init_states(self, output_shapes: list) -> list:
        states = []
        for entry in self.entries:
            shape = output_shapes[entry.index] if entry.metric.state_needs_shape else None
            states.append(entry.metric.init_state(shape) if shape is not None else entry.metric.init_state())
        return states

    def update(self, states: list, y_true: list, y_pred: list, sample_weight: list) -> list:
        new = []
        for entry, state in zip(self.entries, states):
            target = y_true[entry.index]
            if target is None:
                new.append(state)
                continue
            weight = sample_weight[entry.index] if entry.weighted else None
            new.append(entry.metric.stateless_update_state(state, target, y_pred[entry.index], weight))
        return new

    def results(self, states: list) -> dict:
        return {entry.log_name: entry.metric.stateless_result(state) for entry, state in zip(self.entries, states)}
