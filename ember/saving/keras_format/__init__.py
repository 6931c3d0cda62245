"""Keras 3 interoperability: ``.keras`` archives and Keras ``.weights.h5`` files, both ways.

* :func:`load_keras_model`: a model saved by Keras 3 (``model.save("m.keras")``) as an Ember
  model on the active backend, weights included (``ember.load_model`` dispatches here for
  ``.keras`` paths);
* :func:`save_keras_model`: an Ember ``Sequential``/functional model as a ``.keras`` file that
  ``keras.saving.load_model`` opens (``model.save("m.keras")``);
* :func:`load_keras_weights` / :func:`save_keras_weights`: weights only, in Keras's layout
  (``model.load_weights`` recognises a Keras file by its content).

The compile configuration (optimizer, loss, metrics) travels both ways, and so does the optimizer
state for SGD, Adam, AdamW, Adamax, RMSprop, Adagrad and Lion (see
:mod:`ember.saving.keras_format.compile_bridge`). What a
``.keras`` file cannot carry, and Ember's ``.h5`` does: other optimizers' state, the training
progress (seeds, epoch) for an exact resume, bfloat16 variables, checksums, and Ember-only layers
or arguments (refused with an error naming them). Keras layers Ember lacks, and ``Lambda``
layers (stored as bytecode, never executed), are refused the same way.

Example:
    >>> import os, tempfile
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((3,)), layers.Dense(2, activation="relu"), layers.Dense(1)])
    >>> _ = model.build(seed=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.keras")
    >>> model.save(path)
    >>> restored = ember.load_model(path)
    >>> x = np.ones((2, 3), "float32")
    >>> bool(np.allclose(restored.predict(x, verbose=0), model.predict(x, verbose=0)))
    True
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from collections.abc import Iterator
from typing import Any

from ember.saving.format import CheckpointError
from ember.saving.keras_format import compile_bridge
from ember.saving.keras_format.archive import CONFIG, WEIGHTS, KerasArchive, read_archive, write_archive
from ember.saving.keras_format.keras_weights import (
    h5_bytes,
    is_keras_weights_file,
    load_keras_weights,
    read_arrays,
    save_keras_weights,
)
from ember.saving.keras_format.lookup_assets import with_vocabularies
from ember.saving.keras_format.model_config import model_from_keras, model_to_keras
from ember.saving.keras_format.objects import KerasFormatError
from ember.serialization import custom_object_scope

KERAS_SUFFIX = ".keras"


def is_keras_path(filepath: Any) -> bool:
    """Whether ``filepath`` names a ``.keras`` archive."""
    return isinstance(filepath, (str, os.PathLike)) and os.fspath(filepath).endswith(KERAS_SUFFIX)


def load_keras_model(filepath: Any, custom_objects: dict | None = None, compile: bool = True) -> Any:
    """Load a ``.keras`` file (Keras 3's or Ember's) as an Ember model with its weights.

    Args:
        filepath: the ``.keras`` file.
        custom_objects: ``{name: class or function}`` for custom objects in the file's config.
        compile: compile the model as the file's ``compile_config`` says, with the optimizer
            state where it maps (a warning says what could not be carried).

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: (a ``ValueError``) not a ``.keras`` archive, a layer or object Ember cannot
            rebuild (named), or weights that do not match.
    """
    contents = read_archive(filepath, caller="load_model")
    config = with_vocabularies(contents.config, contents.assets, contents.path)  # lookup layers' assets
    try:
        with custom_object_scope(custom_objects):
            model = model_from_keras(config)
    except RecursionError:
        raise CheckpointError(contents.path, f"cannot rebuild the Keras model: its {CONFIG} nests too "
                                             "deeply") from None
    except (KerasFormatError, TypeError, ValueError) as error:
        raise CheckpointError(contents.path, f"cannot rebuild the Keras model: {error}") from None
    compile_config = contents.config.get("compile_config") if compile else None
    with _weights_member(contents) as handle:
        model.state, _ = read_arrays(model, handle, contents.path, skip_mismatch=False)
        if compile_config:
            with custom_object_scope(custom_objects):
                compile_bridge.compile_from_keras(model, compile_config, handle, contents.path)
    return model


@contextlib.contextmanager
def _weights_member(contents: KerasArchive) -> Iterator[Any]:
    """The archive's ``model.weights.h5`` opened with h5py; h5py's errors on a truncated or damaged
    member (OSError, RuntimeError, KeyError) become a CheckpointError naming the archive and member."""
    import h5py

    try:
        with h5py.File(io.BytesIO(contents.weights), "r") as handle:
            yield handle
    except (OSError, RuntimeError, KeyError) as error:  # h5py's errors on a damaged member, as it is opened or read
        raise CheckpointError(contents.path, f"the member {WEIGHTS!r} is truncated, corrupted or not an HDF5 file "
                                             f"({type(error).__name__}: {error}); nothing was loaded") from None


def save_keras_model(model: Any, filepath: Any, overwrite: bool = True, include_optimizer: bool = True) -> None:
    """Write ``model`` (a built ``Sequential`` or functional model) as a Keras 3 ``.keras`` file: the
    architecture, the weights and, for a compiled model, its compile configuration and (with
    ``include_optimizer``, where it maps) its optimizer variables.

    Raises:
        ValueError: the model is not built, or the path does not end with ``.keras``.
        KerasFormatError: (a ``ValueError``) a layer, argument or dtype Keras cannot express (named).
    """
    config = model_to_keras(model)
    optimizer = None
    try:
        compile_config = compile_bridge.keras_compile_config(model)
    except KerasFormatError as error:
        warnings.warn(f"save({os.fspath(filepath)!r}): the compile configuration is not written ({error})",
                      UserWarning, stacklevel=3)
        compile_config = None
    if compile_config is not None:
        config["compile_config"] = compile_config
        optimizer = compile_bridge.keras_optimizer(model) if include_optimizer else None
    write_archive(filepath, config, h5_bytes(model, optimizer), overwrite=overwrite)


__all__ = [
    "KerasFormatError",
    "is_keras_path",
    "is_keras_weights_file",
    "load_keras_archive_weights",
    "load_keras_model",
    "load_keras_weights",
    "save_keras_model",
    "save_keras_weights",
]


def load_keras_archive_weights(model: Any, filepath: Any, skip_mismatch: bool = False) -> Any:
    """``model.load_weights("m.keras")``: the weights inside a ``.keras`` archive, into ``model``.

    Raises:
        CheckpointError: the archive has no weights or they do not match the model.
    """
    contents = read_archive(filepath, caller="load_weights")
    with _weights_member(contents) as handle:
        state, report = read_arrays(model, handle, contents.path, skip_mismatch)
    model.state = state
    return report
