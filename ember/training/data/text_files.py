"""``text_dataset_from_directory``: a folder of ``.txt`` files as a labelled, batched dataset of strings.

Keras 3's signature and semantics (labels from the sub-folders, ``validation_split``/``subset``,
``shuffle``/``seed``, ``max_length``), without TensorFlow. Each batch's texts are a NumPy
object array of ``str``, read as UTF-8 (Keras's TensorFlow path yields the raw bytes as
``tf.string``; its Grain path, like Ember, the decoded text). ``max_length`` keeps the first
``max_length`` characters (TensorFlow's path counts bytes). Returns a
:class:`~ember.training.data.file_dataset.FileDataset` (see there for order and ``.prefetch``).
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np

from ember.training.data.directory_datasets import build_datasets, check_common_arguments, index_files
from ember.training.data.folder_index import check_split_arguments
from ember.validation import check_positive_int

FORMATS = (".txt",)
CALLER = "text_dataset_from_directory"


def read_text(path: str, max_length: int | None) -> str:
    """The UTF-8 text of ``path``, cut to ``max_length`` characters (None: whole)."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    return text if max_length is None else text[:max_length]


def stack_texts(texts: list) -> np.ndarray:
    """A batch of texts: a 1-D object array of ``str``."""
    batch = np.empty(len(texts), dtype=object)
    batch[:] = texts
    return batch


def text_dataset_from_directory(directory: Any, labels: Any = "inferred", label_mode: str | None = "int",
                                class_names: list | None = None, batch_size: int | None = 32,
                                max_length: int | None = None, shuffle: bool = True, seed: int | None = None,
                                validation_split: float | None = None, subset: str | None = None,
                                follow_links: bool = False, verbose: bool = True) -> Any:
    """Texts in ``directory`` (one sub-folder per class) as batches of ``(texts, labels)``.

    Args:
        directory, labels, label_mode, class_names, batch_size, shuffle, seed, validation_split,
            subset, follow_links, verbose: as :func:`ember.utils.image_dataset_from_directory`.
        max_length: keep at most this many characters of each text (None: all).

    Returns:
        A :class:`FileDataset`, or a ``(training, validation)`` pair with ``subset="both"``.

    Raises:
        ValueError: a bad argument (named in the message), a folder without ``.txt`` files.

    Example:
        >>> import os, tempfile
        >>> from ember.utils import text_dataset_from_directory
        >>> root = tempfile.mkdtemp()
        >>> for label, text in (("neg", "awful"), ("pos", "great")):
        ...     os.makedirs(os.path.join(root, label))
        ...     with open(os.path.join(root, label, "0.txt"), "w") as f:
        ...         _ = f.write(text)
        >>> ds = text_dataset_from_directory(root, shuffle=False, max_length=3, verbose=False)
        >>> texts, labels = ds[0]
        >>> texts.tolist(), labels.tolist(), ds.class_names
        (['awf', 'gre'], [0, 1], ['neg', 'pos'])
    """
    check_common_arguments(CALLER, labels, label_mode, class_names, batch_size)
    if max_length is not None:
        check_positive_int(CALLER, "max_length", max_length)
    check_split_arguments(CALLER, validation_split, subset, shuffle, seed)
    paths, label_array, names, seed = index_files(CALLER, directory, labels, label_mode, FORMATS, class_names,
                                                  shuffle, seed, follow_links, verbose)
    load = functools.partial(read_text, max_length=max_length)
    return build_datasets(CALLER, paths, label_array, names, validation_split, subset, label_mode, batch_size,
                          shuffle, seed, load, stack_texts, os.fspath(directory), FORMATS, verbose)
