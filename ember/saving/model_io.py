"""``model.save(path)`` and ``ember.load_model(path)``: a whole model in one ``.h5`` file.

The file (layout in :mod:`ember.saving.format`) holds the architecture as JSON (the model's
registered class and ``get_config()``: every layer by registered name), the compile
configuration (optimizer, losses, metrics, loss weights, ...), every variable of the
model state, and by default the optimizer state and the training progress (see
:mod:`ember.saving.training_state`) so ``fit`` resumes exactly.

``load_model`` rebuilds the model on the **active** backend, whichever backend wrote the
file: configs are backend-free and arrays are converted. No code is ever loaded: classes and
functions are looked up by registered name (``@ember.saving.register_serializable()``), and
an unknown name raises an error saying what to register.

Example:
    >>> import os, tempfile
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers, ops
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((3,)), layers.Dense(4, activation="relu", name="hidden"),
    ...                           layers.Dense(1, name="out")])
    >>> _ = model.build(seed=0)
    >>> model.compile(optimizer="adam", loss="mse")
    >>> path = os.path.join(tempfile.mkdtemp(), "model.h5")
    >>> model.save(path)
    >>> ember.set_backend("torch")
    >>> restored = ember.load_model(path)
    >>> type(restored.state["params"]["out"]["kernel"]).__module__, restored.optimizer.name
    ('torch', 'adam')
    >>> bool(np.array_equal(ops.to_numpy(restored.state["params"]["out"]["kernel"]),
    ...                     np.asarray(model.state["params"]["out"]["kernel"])))
    True
    >>> ember.set_backend("numpy")
"""

from __future__ import annotations

import warnings
from typing import Any

from ember.saving import _arrays, keras_format, training_state
from ember.saving import format as fmt
from ember.saving.reader import CheckpointReader
from ember.saving.weights import match_state, state_template
from ember.saving.writer import write_checkpoint
from ember.serialization import custom_object_scope, deserialize, registered_name, serialize


# ----------------------------------------------------------------------------- configs
def model_config(model: Any) -> dict:
    """``{"class_name": registered name, "config": model.get_config()}``."""
    return {"class_name": registered_name(type(model)), "config": model.get_config()}


def compile_config(model: Any) -> dict | None:
    """The arguments ``compile`` was called with (the optimizer as it is now), serialized; None when
    the model is not compiled.

    Raises:
        TypeError: an argument cannot be serialized (an unregistered function or class).
    """
    training = getattr(model, "_training", None)
    trainer = getattr(training, "trainer", None)
    if training is None or trainer is None:
        return None
    arguments = dict(training.compile_config or {"loss": trainer.loss})
    arguments["optimizer"] = trainer.optimizer
    return serialize(arguments)


def compile_from_config(model: Any, config: dict) -> None:
    """``model.compile(**config)`` for a config from :func:`compile_config`."""
    model.compile(**deserialize(config))


# ------------------------------------------------------------------------------- save
def save_model(model: Any, filepath: Any, overwrite: bool = True, include_optimizer: bool = True) -> None:
    """Save the architecture, compile config, weights and (by default) training state, atomically.

    Args:
        model: an ``ember.Model`` / ``Sequential`` (an unbuilt one is saved without weights).
        filepath: the target ``.h5`` path, or a ``.keras`` path for a Keras 3 archive (see
            :mod:`ember.saving.keras_format`; architecture and weights only).
        overwrite: replace an existing file (False raises ``FileExistsError``).
        include_optimizer: also save the optimizer state and training progress (for exact resume).

    Raises:
        TypeError: the architecture holds an object that cannot be serialized (an unregistered
            custom function or class: the message says what to register).

    Example:
        >>> import os, tempfile
        >>> import ember
        >>> from ember import layers
        >>> from ember.saving import save_model
        >>> ember.set_backend("numpy")
        >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
        >>> _ = model.build(seed=0)
        >>> path = os.path.join(tempfile.mkdtemp(), "model.h5")
        >>> save_model(model, path)  # the same as model.save(path)
        >>> os.path.exists(path)
        True
    """
    if keras_format.is_keras_path(filepath):
        keras_format.save_keras_model(model, filepath, overwrite=overwrite, include_optimizer=include_optimizer)
        return
    documents: dict = {"config": model_config(model)}
    trees: dict = {}
    try:
        compiled = compile_config(model)
    except TypeError as error:
        warnings.warn(f"save: the compile configuration is not saved ({error}); ember.load_model will return an "
                      "uncompiled model: register the custom objects with @ember.saving.register_serializable() "
                      "to save it", UserWarning, stacklevel=3)
        compiled = None
    if compiled is not None:
        documents["compile"] = compiled
    if model.state is not None:
        trees[fmt.STATE] = model.state
    if include_optimizer and compiled is not None:
        opt_state, progress = training_state.capture(model)
        if training_state.is_sharded(opt_state):
            raise ValueError("save: this rank holds only its shard of the optimizer state (ember.distribute with "
                             "shard_optimizer=True); call ember.saving.save_sharded(model, directory) on every rank "
                             "(ember.saving.export_sharded makes one file of it), or save with "
                             "include_optimizer=False / save_weights")
        if opt_state is not None:
            trees[fmt.OPTIMIZER] = opt_state
        if progress is not None:
            documents["training"] = progress
    write_checkpoint(filepath, "model", trees=trees, documents=documents, overwrite=overwrite, caller="save")


# ------------------------------------------------------------------------------- load
def _rebuild(reader: CheckpointReader, config: Any, custom_objects: Any) -> Any:
    if not isinstance(config, dict) or "class_name" not in config:
        raise reader.error("the model config is missing or malformed")
    try:
        with custom_object_scope(custom_objects):
            model = deserialize(config)
    except fmt.CheckpointError:
        raise
    except RecursionError:
        raise fmt.CheckpointError(reader.path, "cannot rebuild the model: its config nests too deeply") from None
    except (ValueError, TypeError, KeyError, AttributeError, IndexError) as error:
        raise fmt.CheckpointError(reader.path, f"cannot rebuild the model from its config: {error}") from None
    if not (callable(getattr(model, "apply", None)) and callable(getattr(model, "build", None))):
        kind = "function" if callable(model) and not isinstance(model, type) else type(model).__name__
        raise fmt.CheckpointError(reader.path, f"the model config names {config['class_name']!r}, which is a "
                                               f"registered {kind}, not a model class")
    return model


def load_model(filepath: Any, custom_objects: dict | None = None, compile: bool = True,
               safe_mode: bool = True) -> Any:
    """Load a model saved by ``model.save``, on the active backend.

    Args:
        filepath: the ``.h5`` file, or a ``.keras`` archive written by Keras 3 or Ember (see
            :mod:`ember.saving.keras_format`).
        custom_objects: ``{name: class or function}`` for custom objects that are not registered
            with ``@ember.saving.register_serializable()`` (used for this call only).
        compile: compile the model as it was saved, with its optimizer state (if saved), so that
            ``fit`` continues the saved training.
        safe_mode: Keras's flag for allowing ``Lambda`` bytecode; Ember never executes code from a
            file whatever its value, so a ``.keras`` file with a ``Lambda`` layer is refused either way.

    Returns:
        The model, its ``state`` set from the file (nothing is initialized randomly).

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: (a ``ValueError``) not an Ember checkpoint, a weights-only file, a truncated
            or corrupted file, an unknown class (the message says what to register), or weights that
            do not match the rebuilt architecture.

    Example:
        >>> import os, tempfile
        >>> import ember
        >>> from ember import layers
        >>> ember.set_backend("numpy")
        >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)], name="tiny")
        >>> _ = model.build(seed=0)
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.h5")
        >>> model.save(path)
        >>> with ember.using_backend("mlx"):
        ...     restored = ember.load_model(path)
        ...     print(restored.name, type(restored.layers[0].weights[0].value).__module__)
        tiny mlx.core
    """
    del safe_mode  # nothing to relax: no code is ever executed from a file (documented above)
    if keras_format.is_keras_path(filepath):
        return keras_format.load_keras_model(filepath, custom_objects=custom_objects, compile=compile)
    with CheckpointReader(filepath, caller="load_model") as reader:
        if reader.kind == "weights":
            raise reader.error("holds only weights (written by save_weights), not a model: create the model in "
                               "code and call model.load_weights(path)")
        if reader.kind != "model":
            raise reader.error(f"holds a saved {reader.kind}, not a model: load it with ember.saving.load_object")
        config = reader.document("config")
        compiled = reader.document("compile") if compile else None
        progress = reader.document("training") if compile else None
        arrays = reader.arrays(fmt.STATE, _arrays.host_writable) if reader.has(fmt.STATE) else None
        opt_arrays = (reader.arrays(fmt.OPTIMIZER, _arrays.host_writable)
                      if compiled is not None and reader.has(fmt.OPTIMIZER) else None)
        model = _rebuild(reader, config, custom_objects)
        if arrays is not None:
            template = state_template(model, "load_model")
            model.state, _ = match_state(template, arrays, reader.path, skip_mismatch=False)
        if compiled is not None:
            try:
                with custom_object_scope(custom_objects):
                    compile_from_config(model, compiled)
            except (ValueError, TypeError, KeyError) as error:
                raise reader.error(f"cannot compile the model from its saved compile config: {error}; load it with "
                                   "compile=False and call compile() yourself") from None
            opt_state = None
            if opt_arrays is not None and model.state is not None:
                template = training_state.optimizer_template(model)
                opt_state, _ = match_state(template, opt_arrays, reader.path, skip_mismatch=False,
                                           what="optimizer state")
            training_state.restore(model, opt_state, progress)
    return model


def read_training_checkpoint(model: Any, filepath: Any, caller: str = "BackupAndRestore") -> tuple[dict, Any, dict]:
    """``(model state, optimizer state or None, training document)`` of a full checkpoint, matched to
    ``model`` (compiled, with a state) and converted to the active backend; the model is not changed.

    Raises:
        CheckpointError: a bad file, or one that does not match the model (nothing is returned).
    """
    with CheckpointReader(filepath, caller=caller) as reader:
        if reader.kind != "model":
            raise reader.error(f"holds a saved {reader.kind}, expected a full model checkpoint (model.save)")
        arrays = reader.arrays(fmt.STATE, _arrays.host_writable) if reader.has(fmt.STATE) else {}
        opt_arrays = reader.arrays(fmt.OPTIMIZER, _arrays.host_writable) if reader.has(fmt.OPTIMIZER) else None
        progress = reader.document("training") or {}
        path = reader.path
    model_state, _ = match_state(state_template(model, caller), arrays, path, skip_mismatch=False)
    opt_state = None
    if opt_arrays is not None:
        opt_state, _ = match_state(training_state.optimizer_template(model), opt_arrays, path, skip_mismatch=False,
                                   what="optimizer state")
    return model_state, opt_state, progress
