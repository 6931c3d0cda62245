"""``ember.utils``: Keras's utilities, and Ember's training plots.

* data: :func:`to_categorical`, :func:`normalize`, :func:`pad_sequences`, ``PyDataset``/``Sequence``
  (Keras's names for :class:`ember.data.Dataset`), :func:`timeseries_dataset_from_array` (a Dataset);
* folders as datasets, without TensorFlow (each an ``ember.data.Dataset`` with ``class_names``,
  ``file_paths`` and ``.prefetch``): :func:`image_dataset_from_directory` (Pillow),
  :func:`text_dataset_from_directory`, :func:`audio_dataset_from_directory` (``wave``);
* images (Pillow, ``[image]`` extra): :func:`load_img`, :func:`img_to_array`, :func:`array_to_img`,
  :func:`save_img`;
* drawing (``[plot]`` extra): :func:`plot_model`, :func:`model_to_dot`, :func:`plot_history`
  (loss and metrics per epoch; the wiring plot lives with the wirings: ``AutoNCP(...).draw()``);
* :func:`set_random_seed`, :class:`Progbar`, ``clear_session``, ``standardize_dtype``;
* graphs and batches: :func:`is_keras_tensor`, :func:`get_source_inputs`, :func:`pack_x_y_sample_weight`,
  :func:`unpack_x_y_sample_weight`;
* serialization: :func:`register_keras_serializable` (Ember's name: ``register_serializable``),
  :func:`get_custom_objects`, :func:`custom_object_scope`, :func:`serialize_keras_object`,
  :func:`deserialize_keras_object`, :func:`get_registered_name`, :func:`get_registered_object`,
  ``CustomObjectScope``.

Not provided (see the report of issue 19): ``get_file`` (Ember never uses the network),
``split_dataset``,
``FeatureSpace`` (built on tf.data in Keras), ``bounding_boxes``
and ``legacy``.

``ember.utils`` is a foundation package (ARCHITECTURE.md): it holds the naming helpers every
layer uses, ``pad_sequences`` and the image helpers (NumPy and Pillow only), and
``plot_history``. Keras's other ``utils`` names live in the packages that implement them
(``features``, ``training``, ``saving``, ``models``) and are looked up from here on first use,
so that nothing below those packages imports them.

Example:
    >>> from ember import utils
    >>> utils.to_categorical([1, 0], num_classes=2).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    >>> utils.PyDataset is utils.Sequence
    True
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "plot_history": "ember.utils.plot",
    "to_categorical": "ember.features.categorical",
    "normalize": "ember.features.categorical",
    "pad_sequences": "ember.utils.sequences",
    "set_random_seed": "ember.training.seeding",
    "Progbar": "ember.training.callbacks.keras_progbar",
    "array_to_img": "ember.utils.images",
    "img_to_array": "ember.utils.images",
    "load_img": "ember.utils.images",
    "save_img": "ember.utils.images",
    "plot_model": "ember.models.plotting",
    "model_to_dot": "ember.models.plotting",
    "get_custom_objects": "ember.saving.keras_objects",
    "custom_object_scope": "ember.saving.keras_objects",
    "register_keras_serializable": "ember.saving.keras_objects",
    "register_serializable": "ember.saving.keras_objects",
    "serialize_keras_object": "ember.saving.keras_objects",
    "deserialize_keras_object": "ember.saving.keras_objects",
    "get_registered_name": "ember.saving.keras_objects",
    "get_registered_object": "ember.saving.keras_objects",
    "pack_x_y_sample_weight": "ember.training.data.batches",
    "unpack_x_y_sample_weight": "ember.training.data.batches",
    "get_source_inputs": "ember.models.sources",
    "is_keras_tensor": "ember.models.sources",
    "timeseries_dataset_from_array": "ember.training.data.timeseries",
    "image_dataset_from_directory": "ember.training.data.image_files",
    "text_dataset_from_directory": "ember.training.data.text_files",
    "audio_dataset_from_directory": "ember.training.data.audio_files",
    "enable_interactive_logging": "ember.global_settings",
    "disable_interactive_logging": "ember.global_settings",
    "is_interactive_logging_enabled": "ember.global_settings",
}
# Keras's names for Ember's Dataset protocol.
_ALIASES = {"PyDataset": ("ember.training.data.dataset", "Dataset"),
            "Sequence": ("ember.training.data.dataset", "Dataset"),
            "CustomObjectScope": ("ember.saving.keras_objects", "CustomObjectScope"),
            "clear_session": ("ember.layers.layer", "clear_session"),
            "standardize_dtype": ("ember.dtypes", "standardize_dtype")}
__all__ = [
    "CustomObjectScope", "Progbar", "PyDataset", "Sequence", "array_to_img", "clear_session",
    "custom_object_scope", "deserialize_keras_object", "get_custom_objects", "get_registered_name",
    "get_registered_object", "get_source_inputs", "img_to_array", "is_keras_tensor", "load_img", "model_to_dot",
    "normalize", "pack_x_y_sample_weight", "pad_sequences", "plot_history", "plot_model",
    "register_keras_serializable", "register_serializable", "save_img", "serialize_keras_object",
    "set_random_seed", "standardize_dtype", "timeseries_dataset_from_array", "to_categorical",
    "unpack_x_y_sample_weight",
    "audio_dataset_from_directory", "image_dataset_from_directory", "text_dataset_from_directory",
    "disable_interactive_logging", "enable_interactive_logging", "is_interactive_logging_enabled",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    if name in _ALIASES:
        module, attribute = _ALIASES[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'ember.utils' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
