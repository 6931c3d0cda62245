"""What the ``*_dataset_from_directory`` loaders share: argument checks, indexing, the split into datasets.

Example:
    >>> from ember.training.data.directory_datasets import check_common_arguments
    >>> check_common_arguments("loader", "inferred", "bad", None, 32)
    Traceback (most recent call last):
    ...
    ValueError: loader: label_mode must be 'int', 'categorical', 'binary' or None, received label_mode='bad'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.training.data.file_dataset import LABEL_MODES, FileDataset
from ember.training.data.folder_index import index_directory, split
from ember.validation import check_positive_int


def check_common_arguments(caller: str, labels: Any, label_mode: Any, class_names: Any, batch_size: Any) -> None:
    """The checks of ``labels``, ``label_mode``, ``class_names`` and ``batch_size`` every loader makes.

    Raises:
        ValueError: ``labels`` neither ``"inferred"``, None nor a list/tuple of ints; ``class_names``
            without inferred labels; an unknown ``label_mode``; a non-positive ``batch_size``.
    """
    inferred = isinstance(labels, str) and labels == "inferred"
    if not (inferred or labels is None or (isinstance(labels, (list, tuple, np.ndarray))
                                           and all(isinstance(v, (int, np.integer)) for v in labels))):
        raise ValueError(f"{caller}: labels must be 'inferred', None, or a list/tuple of int labels (one per file "
                         f"in the sorted order of the paths), received labels={labels!r}")
    if class_names is not None and not inferred:
        raise ValueError(f"{caller}: class_names can only be given with labels='inferred', "
                         f"received labels={labels!r}")
    if label_mode not in LABEL_MODES:
        raise ValueError(f"{caller}: label_mode must be 'int', 'categorical', 'binary' or None, "
                         f"received label_mode={label_mode!r}")
    if batch_size is not None:
        check_positive_int(caller, "batch_size", batch_size)


def index_files(caller: str, directory: Any, labels: Any, label_mode: Any, formats: tuple[str, ...],
                class_names: Any, shuffle: bool, seed: int | None, follow_links: bool,
                verbose: bool) -> tuple[list[str], Any, Any, int]:
    """:func:`index_directory` with Keras's rule that ``label_mode=None`` means no labels; also returns the seed."""
    if label_mode is None:
        labels = None
    elif isinstance(labels, np.ndarray):
        labels = labels.tolist()
    seed = int(np.random.randint(int(1e6))) if seed is None else seed
    paths, label_array, names = index_directory(directory, labels, formats, class_names, shuffle, seed,
                                                follow_links, verbose, caller=caller)
    return paths, label_array, names, seed


def build_datasets(caller: str, paths: list[str], labels: Any, class_names: Any, validation_split: Any,
                   subset: Any, label_mode: Any, batch_size: Any, shuffle: bool, seed: int, load: Any,
                   stack: Any, directory: str, formats: tuple[str, ...], verbose: bool) -> Any:
    """The dataset (or ``(training, validation)`` with ``subset="both"``) of the indexed files.

    Raises:
        ValueError: ``label_mode="binary"`` without exactly 2 classes, or an empty (sub)set.
    """
    if labels is None:
        label_mode = None
    if label_mode == "binary" and len(class_names) != 2:
        raise ValueError(f"{caller}: label_mode='binary' needs exactly 2 classes, received class_names={class_names}")
    parts = ("training", "validation") if subset == "both" else (subset,)
    datasets = []
    for part in parts:
        part_paths, part_labels = split(paths, labels, validation_split, part, verbose)
        if not part_paths:
            kind = "" if part is None else f"{part} "
            raise ValueError(f"{caller}: no {kind}files found in directory {directory!r} (allowed formats: "
                             f"{formats})")
        datasets.append(FileDataset(part_paths, part_labels, class_names, load, stack, label_mode, batch_size,
                                    shuffle=shuffle and part != "validation", seed=seed))
    return tuple(datasets) if subset == "both" else datasets[0]
