"""A ``.keras`` file's compile configuration and optimizer variables, to Ember and back.

Keras's ``compile_config`` (optimizer, loss, metrics, loss weights) maps argument for
argument onto ``Model.compile``: Ember's optimizers, losses and metrics take Keras's names.
The optimizer's variables map for the optimizers whose slot layout is known here. Keras
stores ``iterations``, ``learning_rate``, then its slot groups one after the other: a group
created together (Adam's momentum and velocity) holds each trainable variable's slots in turn,
in the order of ``model.trainable_variables``. Mapped: SGD, Adam, AdamW, Adamax (without
``amsgrad``), RMSprop (momentum and centered included), Adagrad and Lion. For any other
optimizer, or a file without optimizer variables, the model is compiled with a fresh optimizer
state and a warning says so.

Example:
    >>> from ember.saving.keras_format import compile_bridge
    >>> compile_bridge.slot_groups(type("Adam", (), {})())
    [('momentum', 'velocity')]
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ember.saving import _arrays, training_state
from ember.saving.keras_format.objects import (
    KerasFormatError,
    accepted_arguments,
    drop_unknown,
    from_keras,
    function_reference,
    resolve_key,
)
from ember.saving.keras_format.weights_layout import model_paths
from ember.saving.weights import match_state
from ember.serialization import (
    deserialize,
    is_builtin_key,
    keras_registered_name,
    registered_function_name,
    registered_name,
)

# Keras's slot groups (Ember's slot names) of the optimizers whose state is carried; optional groups
# are kept only when the optimizer has that slot (SGD/RMSprop momentum, centered RMSprop).
SLOT_GROUPS: dict[str, list[tuple[str, ...]]] = {
    "SGD": [("momentum",)], "Adam": [("momentum", "velocity")], "AdamW": [("momentum", "velocity")],
    "Adamax": [("momentum", "norm")], "RMSprop": [("velocity",), ("momentum",), ("average_gradient",)],
    "Adagrad": [("accumulator",)], "Lion": [("momentum",)],
}


def slot_groups(optimizer: Any) -> list[tuple[str, ...]] | None:
    """Keras's slot groups for ``optimizer`` (None when its state is not mapped)."""
    kind = type(optimizer).__name__
    if kind not in SLOT_GROUPS or getattr(optimizer, "amsgrad", False):
        return None
    own = optimizer.slot_initializers() if hasattr(optimizer, "slot_initializers") else None
    if own is None:
        return SLOT_GROUPS[kind]
    return [group for group in SLOT_GROUPS[kind] if all(slot in own for slot in group)]


def _keras_order(groups: list[tuple[str, ...]], paths: list[str]) -> list[str]:
    """Ember optimizer-state paths (``slot/param path``) in Keras's order of its optimizer variables."""
    return [f"{slot}/{path}" for group in groups for path in paths for slot in group]
OPTIMIZER_GROUP = "optimizer/vars"
COMPILE_KEYS = ("optimizer", "loss", "loss_weights", "metrics", "weighted_metrics")


# ------------------------------------------------------------------------------ Keras -> Ember
# Keras's namespace of each compile slot: its own objects there resolve through the registry's aliases
# (``keras.metrics>MeanSquaredError`` is the metric, ``keras.losses>MeanSquaredError`` the loss).
NAMESPACES = {"optimizer": "keras.optimizers", "loss": "keras.losses", "metric": "keras.metrics"}


def _is_builtin(value: Any) -> bool:
    key = vars(value).get("_ember_registered_name") if isinstance(value, type) else registered_function_name(value)
    return isinstance(key, str) and is_builtin_key(key)


def _namespace_object(value: Any, kind: str) -> Any:
    """A Keras loss/metric/optimizer (a name or a serialized object) as an Ember object or name, resolved
    as an ``.h5`` file's compile configuration is (the one lookup, the same rebuild)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return [_namespace_object(v, kind) for v in value]
    if isinstance(value, dict) and "class_name" not in value:
        return {k: _namespace_object(v, kind) for k, v in value.items()}
    class_name = value["class_name"]
    where = f"compile: {kind} {class_name}"
    if class_name == "function":
        function = function_reference(str(value["config"]), f"compile: {kind}", NAMESPACES[kind])
        return value["config"] if _is_builtin(function) else function  # Ember's own by name, as compile takes it
    key, cls = resolve_key(value, where, NAMESPACES[kind])
    if not isinstance(cls, type):
        raise KerasFormatError(f"{where}: {key!r} is a function, not a {kind} class")
    config = from_keras(value.get("config") or {}, f"{kind} {class_name}")
    config = drop_unknown(config, accepted_arguments(cls), f"{kind} {class_name}",
                          {"ema_momentum": 0.99, "reduction": "sum_over_batch_size"})
    return deserialize({"class_name": key, "config": config})


def compile_arguments(config: dict) -> dict:
    """``Model.compile`` keyword arguments for a Keras ``compile_config``.

    Raises:
        KerasFormatError: an optimizer, loss or metric Ember lacks, or an argument it cannot honour.
    """
    unknown = sorted(set(config) - set(COMPILE_KEYS) - {"run_eagerly", "steps_per_execution", "jit_compile"})
    if unknown:
        raise KerasFormatError(f"compile: unknown compile_config keys {unknown}")
    if config.get("steps_per_execution", 1) not in (None, 1):
        raise KerasFormatError(f"compile: steps_per_execution={config['steps_per_execution']} is not supported")
    return {
        "optimizer": _namespace_object(config.get("optimizer") or "rmsprop", "optimizer"),
        "loss": _namespace_object(config.get("loss"), "loss"),
        "loss_weights": config.get("loss_weights"),
        "metrics": _namespace_object(config.get("metrics"), "metric"),
        "weighted_metrics": _namespace_object(config.get("weighted_metrics"), "metric"),
        "run_eagerly": bool(config.get("run_eagerly", False)),
    }


def _trainable_paths(model: Any) -> list[tuple[str, str]]:
    """``(keras path, ember path)`` of the trainable variables, in Keras's ``trainable_variables`` order."""
    template = training_state.optimizer_template(model)
    slot = next((k for k, v in template.items() if isinstance(v, dict)), None)
    trainable = _flat_keys(template[slot]) if slot else None
    pairs = [(k, e) for k, e in model_paths(model, model.placeholder_state()) if e.startswith("params/")]
    if trainable is None:
        return pairs
    return [(k, e) for k, e in pairs if e[len("params/"):] in trainable]


def _flat_keys(tree: dict, prefix: str = "") -> set[str]:
    keys = set()
    for key, value in tree.items():
        path = f"{prefix}{key}"
        keys |= _flat_keys(value, path + "/") if isinstance(value, dict) else {path}
    return keys


def restore_optimizer(model: Any, handle: Any, label: str) -> str | None:
    """Load Keras's optimizer variables into a compiled model; returns why not, or None when loaded."""
    optimizer = _trainer(model).optimizer
    kind = type(optimizer).__name__
    groups = slot_groups(optimizer)
    if groups is None:
        return f"the state of optimizer {kind} is not mapped (carried: {sorted(SLOT_GROUPS)}, without amsgrad)"
    if OPTIMIZER_GROUP not in handle:
        return "the file holds no optimizer variables"
    group = handle[OPTIMIZER_GROUP]
    stored = [group[str(i)] for i in range(len(group))]
    order = _keras_order(groups, [e[len("params/"):] for _, e in _trainable_paths(model)])
    if len(stored) != 2 + len(order):
        return f"the file's optimizer has {len(stored)} variables, the model's {kind} needs {2 + len(order)}"
    arrays = {"iterations": np.asarray(stored[0][()]), "learning_rate": np.asarray(stored[1][()])}
    for path, dataset in zip(order, stored[2:]):
        arrays[path] = np.asarray(dataset[()])
    template = training_state.optimizer_template(model)
    state, _ = match_state(template, arrays, label, skip_mismatch=False, what="optimizer state")
    training_state.restore(model, state, None)
    return None


def compile_from_keras(model: Any, config: dict, handle: Any, label: str) -> None:
    """Compile ``model`` as Keras's ``compile_config`` says and load the optimizer variables where
    they map; warn (and leave the model uncompiled, or with a fresh optimizer) where they do not."""
    try:
        model.compile(**compile_arguments(config))
    except (KerasFormatError, TypeError, ValueError) as error:
        warnings.warn(f"load_model({label!r}): the model is returned uncompiled: {error}; call model.compile(...)",
                      UserWarning, stacklevel=4)
        return
    why = restore_optimizer(model, handle, label) if handle is not None else "the file holds no weights"
    if why is not None:
        warnings.warn(f"load_model({label!r}): compiled with a fresh optimizer state: {why}", UserWarning,
                      stacklevel=4)


# ------------------------------------------------------------------------------ Ember -> Keras
def _keras_object(value: Any, module: str) -> Any:
    """A compile argument in Keras's form: Ember's own functions and classes by name, Ember's objects in
    the slot's Keras namespace, custom ones (registered, or loadable through ``custom_objects``) under
    Keras's ``registered_name``, as Keras writes them."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [_keras_object(v, module) for v in value]
    if isinstance(value, dict):
        return {k: _keras_object(v, module) for k, v in value.items()}
    if isinstance(value, type) or (callable(value) and not hasattr(value, "get_config")):  # given by reference
        if _is_builtin(value):
            return value.__name__
        key = None if isinstance(value, type) else registered_function_name(value)
        if key is None:
            raise KerasFormatError(f"compile: cannot write {value!r} to a Keras file: only Ember's own classes and "
                                   "functions, functions registered with @ember.saving.register_keras_serializable() "
                                   "(by name) and objects are saved")
        return {"module": "builtins", "class_name": "function", "config": key, "registered_name": "function"}
    key = registered_name(type(value))
    config = value.get_config()
    inner = getattr(value, "inner_optimizer", None)  # LossScaleOptimizer: its inner optimizer in Keras's form too
    if inner is not None:
        config = {**config, "inner_optimizer": _keras_object(inner, module)}
    if not is_builtin_key(key):
        return {"module": type(value).__module__, "class_name": type(value).__name__, "config": config,
                "registered_name": keras_registered_name(key)}
    return {"module": module, "class_name": type(value).__name__, "config": config, "registered_name": None}


def _trainer(model: Any) -> Any:
    """The ``Trainer`` of a compiled model (its training handle's), or None."""
    return getattr(getattr(model, "_training", None), "trainer", None)


def keras_compile_config(model: Any) -> dict | None:
    """Keras's ``compile_config`` for a compiled Ember model (None when not compiled or not expressible)."""
    trainer = _trainer(model)
    if trainer is None:
        return None
    arguments = dict(model._training.compile_config or {})
    return {
        "optimizer": _keras_object(trainer.optimizer, "keras.optimizers"),
        "loss": _keras_object(arguments.get("loss"), "keras.losses"),
        "loss_weights": arguments.get("loss_weights"),
        "metrics": _keras_object(arguments.get("metrics"), "keras.metrics"),
        "weighted_metrics": _keras_object(arguments.get("weighted_metrics"), "keras.metrics"),
        "run_eagerly": bool(arguments.get("run_eagerly", False)), "steps_per_execution": 1, "jit_compile": False,
    }


def optimizer_arrays(model: Any) -> list[np.ndarray] | None:
    """Keras's ``optimizer/vars`` list for a compiled model whose optimizer state maps (else None)."""
    trainer = _trainer(model)
    opt_state, _ = training_state.capture(model) if trainer is not None else (None, None)
    groups = slot_groups(trainer.optimizer) if trainer is not None else None
    if opt_state is None or groups is None:
        return None
    host: dict[str, np.ndarray] = {}
    for key, value in opt_state.items():
        if isinstance(value, dict):
            for path in _flat_keys(value):
                leaf = value
                for part in path.split("/"):
                    leaf = leaf[part]
                host[f"{key}/{path}"] = np.asarray(_arrays.to_host(leaf)[0])
        else:
            host[key] = np.asarray(_arrays.to_host(value)[0])
    order = _keras_order(groups, [e[len("params/"):] for _, e in _trainable_paths(model)])
    counters: list[np.ndarray] = [host["iterations"].astype(np.int64), host["learning_rate"].astype(np.float32)]
    return counters + [host[p] for p in order]


def keras_optimizer(model: Any) -> tuple[str, list[np.ndarray]] | None:
    """``(optimizer name, Keras's optimizer/vars arrays)`` of a built, compiled model whose optimizer
    state maps (see :data:`SLOT_GROUPS`), else None."""
    if model.state is None:
        return None
    arrays = optimizer_arrays(model)
    return None if arrays is None else (_trainer(model).optimizer.name, arrays)
