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

``ember.utils`` is a namespace at the top of the import layers (ARCHITECTURE.md): it holds
``pad_sequences``, the image helpers (NumPy and Pillow only) and ``plot_history``, and imports
Keras's other ``utils`` names from the packages that implement them (``features``,
``training``, ``saving``, ``models``); nothing inside Ember imports it.

Example:
    >>> from ember import utils
    >>> utils.to_categorical([1, 0], num_classes=2).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    >>> utils.PyDataset is utils.Sequence
    True
"""

from __future__ import annotations

from ember.dtypes import standardize_dtype
from ember.features.categorical import normalize, to_categorical
from ember.global_settings import (
    disable_interactive_logging,
    enable_interactive_logging,
    is_interactive_logging_enabled,
)
from ember.layers.layer import clear_session
from ember.models.plotting import model_to_dot, plot_model
from ember.models.sources import get_source_inputs, is_keras_tensor
from ember.saving.keras_objects import (
    CustomObjectScope,
    custom_object_scope,
    deserialize_keras_object,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
    register_serializable,
    serialize_keras_object,
)
from ember.training.callbacks.keras_progbar import Progbar
from ember.training.data.audio_files import audio_dataset_from_directory
from ember.training.data.batches import pack_x_y_sample_weight, unpack_x_y_sample_weight
from ember.training.data.dataset import Dataset as PyDataset
from ember.training.data.image_files import image_dataset_from_directory
from ember.training.data.text_files import text_dataset_from_directory
from ember.training.data.timeseries import timeseries_dataset_from_array
from ember.training.seeding import set_random_seed
from ember.utils.images import array_to_img, img_to_array, load_img, save_img
from ember.utils.plot import plot_history
from ember.utils.sequences import pad_sequences

Sequence = PyDataset  # Keras's older name for the same protocol

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
