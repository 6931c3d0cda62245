"""``ember.saving``: HDF5 checkpoints and config serialization by registered name.

* ``model.save(path)`` / :func:`load_model`: architecture, compile config, weights and (by
  default) optimizer state and training progress in one ``.h5`` file, loadable on any backend;
* ``model.save_weights(path)`` / ``model.load_weights(path, skip_mismatch=False)``: weights only,
  matched by state path;
* :func:`save_object` / :func:`load_object`: fitted objects such as ``ember.features`` transformers;
* :func:`register_serializable`: make custom layers, losses, metrics and functions saveable by
  name (no pickle, no code is stored or loaded).

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

from ember.saving.format import CheckpointError
from ember.saving.model_io import load_model, save_model
from ember.saving.objects import load_object, save_object
from ember.serialization import custom_object_scope, register_serializable
from ember.saving.weights import LoadReport, load_weights, save_weights

__all__ = [
    "CheckpointError",
    "LoadReport",
    "custom_object_scope",
    "load_model",
    "load_object",
    "load_weights",
    "register_serializable",
    "save_model",
    "save_object",
    "save_weights",
]
