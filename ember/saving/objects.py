"""``save_object`` / ``load_object``: a fitted object (a feature transformer) in one ``.h5`` file.

Any registered object with ``get_config()`` whose fitted arrays live in a ``state`` dict
(``ember.features.PCA``, ``StandardScaler``, ...) is saved as its config plus those arrays,
and loaded on the active backend with ``from_config`` and ``obj.state = arrays``. Models
are passed on to ``save_model``/``load_model``.

Example:
    >>> import os, tempfile
    >>> import ember
    >>> from ember import features, ops
    >>> from ember.saving import load_object, save_object
    >>> ember.set_backend("numpy")
    >>> scaler = features.StandardScaler().fit([[0.0, 1.0], [2.0, 5.0]])
    >>> path = os.path.join(tempfile.mkdtemp(), "scaler.h5")
    >>> save_object(scaler, path)
    >>> ember.set_backend("torch")
    >>> restored = load_object(path)
    >>> ops.to_numpy(restored.transform([[1.0, 3.0]])).tolist()
    [[0.0, 0.0]]
    >>> ember.set_backend("numpy")
"""

from __future__ import annotations

from typing import Any

import optree

from ember.layers.layer import Layer
from ember.saving import _arrays
from ember.saving import format as fmt
from ember.saving.model_io import load_model, save_model
from ember.saving.reader import CheckpointReader
from ember.saving.writer import write_checkpoint
from ember.serialization import custom_object_scope, deserialize, serialize


def _is_model(obj: Any) -> bool:
    """A model is a layer that saves itself (``ember.Model`` and its subclasses).

    Checked by protocol rather than by class: ``saving`` sits below ``models`` in the
    import graph (see ARCHITECTURE.md), so it cannot import ``Model``.
    """
    return isinstance(obj, Layer) and callable(getattr(obj, "save", None))


def save_object(obj: Any, filepath: Any, overwrite: bool = True) -> None:
    """Save a registered object's config and fitted ``state`` (a model: its full checkpoint).

    Raises:
        TypeError: ``obj`` has no ``get_config`` or is not registered for serialization.

    Example:
        >>> import os, tempfile
        >>> import ember
        >>> from ember import features
        >>> ember.set_backend("numpy")
        >>> path = os.path.join(tempfile.mkdtemp(), "minmax.h5")
        >>> save_object(features.MinMaxScaler().fit([[0.0], [4.0]]), path)
        >>> load_object(path).transform([[1.0]]).tolist()
        [[0.25]]
    """
    if _is_model(obj):
        save_model(obj, filepath, overwrite=overwrite)
        return
    if not callable(getattr(obj, "get_config", None)):
        raise TypeError(f"save_object: {type(obj).__name__} has no get_config(), so it cannot be saved; save "
                        "models with model.save and objects registered with @ember.saving.register_serializable()")
    config = serialize(obj)
    state = getattr(obj, "state", None)
    if state is not None and not isinstance(state, dict):
        raise TypeError(f"save_object: {type(obj).__name__}.state must be a dict of arrays, "
                        f"received {type(state).__name__}")
    documents = {"config": config, "object": {"fitted": state is not None}}
    trees = {fmt.STATE: state} if state is not None else {}
    write_checkpoint(filepath, "object", trees=trees, documents=documents, overwrite=overwrite,
                     caller="save_object")


def load_object(filepath: Any, custom_objects: dict | None = None) -> Any:
    """Load what :func:`save_object` saved, its arrays on the active backend (models: ``load_model``).

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: (a ``ValueError``) not an Ember checkpoint, a weights-only file, truncated or
            corrupted, or an unknown class (the message says what to register).

    Example:
        >>> import os, tempfile
        >>> import ember
        >>> from ember import features
        >>> ember.set_backend("numpy")
        >>> path = os.path.join(tempfile.mkdtemp(), "scaler.h5")
        >>> save_object(features.StandardScaler().fit([[1.0], [3.0]]), path)
        >>> load_object(path).mean_.tolist()
        [2.0]
    """
    with CheckpointReader(filepath, caller="load_object") as reader:
        if reader.kind == "model":
            reader.close()
            return load_model(filepath, custom_objects=custom_objects)
        if reader.kind != "object":
            raise reader.error("holds only model weights: load them with model.load_weights(path)")
        config = reader.document("config")
        fitted = (reader.document("object") or {}).get("fitted", False)
        state = reader.tree(fmt.STATE) if fitted else None
        try:
            with custom_object_scope(custom_objects):
                obj = deserialize(config)
        except RecursionError:
            raise reader.error("cannot rebuild the object: its config nests too deeply") from None
        except (ValueError, TypeError, KeyError, AttributeError, IndexError) as error:
            raise reader.error(f"cannot rebuild the object from its config: {error}") from None
        if state is not None:
            obj.state = optree.tree_map(lambda a: _arrays.to_native(a, fmt.dtype_name(a)), state)
    return obj
