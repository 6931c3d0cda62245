"""``ember.saving``: HDF5 checkpoints and config serialization by registered name.

* ``model.save(path)`` / :func:`load_model`: architecture, compile config, weights and (by
  default) optimizer state and training progress in one ``.h5`` file, loadable on any backend;
* ``model.save_weights(path)`` / ``model.load_weights(path, skip_mismatch=False)``: weights only,
  matched by state path;
* :func:`save_object` / :func:`load_object`: fitted objects such as ``ember.features`` transformers;
* :func:`save_sharded` / :func:`load_sharded` / :func:`export_sharded`: checkpoints of a model whose
  optimizer state is sharded over ``ember.distribute`` ranks (one file per rank and an index; any
  number of processes loads them), see :mod:`ember.saving.sharded`;
* :func:`register_serializable`: make custom layers, losses, metrics and functions saveable by
  name (no pickle, no code is stored or loaded);
* Keras's serialization helpers, at Keras's paths (``keras.saving.*``), over the same registry:
  :func:`register_keras_serializable`, :func:`get_custom_objects`, :func:`custom_object_scope`
  (``CustomObjectScope``), :func:`get_registered_name`, :func:`get_registered_object`,
  :func:`serialize_keras_object`, :func:`deserialize_keras_object`;
* Keras 3 files: ``load_model("m.keras")``, ``model.save("m.keras")``, ``model.load_weights`` of a
  Keras ``.weights.h5`` (see :mod:`ember.saving.keras_format`).

Writes are atomic (temporary file + rename) and every read is checked (format, completeness,
per-block XXH3-64 checksums), so a failed save never damages the previous file and a damaged file is
never partially loaded. ``python -m ember inspect FILE.h5`` prints a checkpoint's contents.

Example:
    >>> import os, tempfile
    >>> import ember
    >>> from ember import layers
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    >>> _ = model.build(seed=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.h5")
    >>> model.save(path)
    >>> ember.load_model(path).count_params()
    3
"""

from __future__ import annotations

# Re-exported names (``as`` marks them public for linters and type checkers).
from ember.saving.format import CheckpointError as CheckpointError
from ember.saving.keras_objects import deserialize_keras_object as deserialize_keras_object
from ember.saving.keras_objects import serialize_keras_object as serialize_keras_object
from ember.saving.model_io import load_model as load_model
from ember.saving.model_io import save_model as save_model
from ember.saving.objects import load_object as load_object
from ember.saving.objects import save_object as save_object
from ember.saving.sharded import export_sharded as export_sharded
from ember.saving.sharded import load_sharded as load_sharded
from ember.saving.sharded import save_sharded as save_sharded
from ember.saving.weights import LoadReport as LoadReport
from ember.saving.weights import load_weights as load_weights
from ember.saving.weights import save_weights as save_weights
from ember.serialization import CustomObjectScope as CustomObjectScope
from ember.serialization import custom_object_scope as custom_object_scope
from ember.serialization import get_custom_objects as get_custom_objects
from ember.serialization import get_registered_name as get_registered_name
from ember.serialization import get_registered_object as get_registered_object
from ember.serialization import register_keras_serializable as register_keras_serializable
from ember.serialization import register_serializable as register_serializable

__all__ = sorted([
    "CheckpointError", "CustomObjectScope", "LoadReport", "custom_object_scope", "deserialize_keras_object",
    "export_sharded", "get_custom_objects", "get_registered_name", "get_registered_object", "load_model",
    "load_object", "load_sharded", "load_weights", "register_keras_serializable", "register_serializable",
    "save_model", "save_object", "save_sharded", "save_weights", "serialize_keras_object",
])
