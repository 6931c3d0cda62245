"""The files of a folder and their labels, listed, shuffled and split as Keras's ``index_directory`` does.

This is the NumPy part of Keras's ``*_dataset_from_directory`` loaders, reproduced exactly: with
``labels="inferred"`` the classes are the sorted sub-folders (names starting with ``.`` skipped)
or ``class_names`` in the order given; each class folder is walked recursively (``os.walk``,
folders and files sorted, extensions matched case-insensitively); the paths are
``os.path.join(directory, class, relative path)``; with ``shuffle`` the paths and labels are
shuffled once by ``np.random.RandomState(seed).shuffle`` (the same permutation on both); and a
``validation_split`` keeps the last ``int(split * n)`` files for validation. So ``file_paths``
and the training/validation partition equal Keras's for the same ``seed`` (Keras's later,
per-epoch ``tf.data`` shuffle is not reproducible without TensorFlow; see
:mod:`ember.training.data.file_dataset`).

Example:
    >>> import os, tempfile
    >>> from ember.training.data.folder_index import index_directory
    >>> root = tempfile.mkdtemp()
    >>> for name in ("b/2.txt", "a/1.txt", "a/0.TXT"):
    ...     os.makedirs(os.path.join(root, os.path.dirname(name)), exist_ok=True)
    ...     open(os.path.join(root, name), "w").close()
    >>> paths, labels, classes = index_directory(root, "inferred", (".txt",), shuffle=False, verbose=False)
    >>> [os.path.relpath(p, root) for p in paths], labels.tolist(), classes
    (['a/0.TXT', 'a/1.txt', 'b/2.txt'], [0, 0, 1], ['a', 'b'])
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

SUBSETS = ("training", "validation", "both", None)


def check_split_arguments(caller: str, validation_split: Any, subset: Any, shuffle: bool, seed: Any) -> None:
    """Keras's checks of ``validation_split``/``subset``/``seed``, with errors naming ``caller``.

    Raises:
        ValueError: a split outside (0, 1), one of ``validation_split``/``subset`` without the
            other, an unknown ``subset``, or a shuffled split without a ``seed``.
    """
    if validation_split is not None and not (isinstance(validation_split, (int, float))
                                             and not isinstance(validation_split, bool)
                                             and 0 < validation_split < 1):
        raise ValueError(f"{caller}: validation_split must be a float between 0 and 1 (exclusive), "
                         f"received {validation_split!r}")
    if subset not in SUBSETS:
        raise ValueError(f"{caller}: subset must be 'training', 'validation', 'both' or None, received {subset!r}")
    if bool(validation_split) != (subset is not None):
        raise ValueError(f"{caller}: validation_split and subset go together: set both or neither "
                         f"(received validation_split={validation_split!r}, subset={subset!r})")
    if validation_split and shuffle and seed is None:
        raise ValueError(f"{caller}: validation_split with shuffle=True needs a seed, so that the training "
                         "and validation subsets (two calls) do not overlap")


def _class_folders(caller: str, directory: str, class_names: Sequence[str] | None) -> list[str]:
    folders = [name for name in sorted(os.listdir(directory))
               if os.path.isdir(os.path.join(directory, name)) and not name.startswith(".")]
    if class_names is None:
        return folders
    names = [str(name) for name in class_names]
    if not set(names) <= set(folders):
        raise ValueError(f"{caller}: class_names must name sub-folders of {directory!r}: expected a subset of "
                         f"{folders}, received class_names={list(class_names)}")
    return names


def _walk(folder: str, formats: tuple[str, ...], follow_links: bool) -> Iterator[str]:
    """The matching files under ``folder``, relative to it, in Keras's order (folders, then names sorted)."""
    for root, _, files in sorted(os.walk(folder, followlinks=follow_links), key=lambda entry: entry[0]):
        for name in sorted(files):
            if name.lower().endswith(formats):
                yield os.path.relpath(os.path.join(root, name), folder)


def index_directory(directory: Any, labels: Any, formats: tuple[str, ...], class_names: Sequence[str] | None = None,
                    shuffle: bool = True, seed: int | None = None, follow_links: bool = False,
                    verbose: bool = True, caller: str = "index_directory") -> tuple[list[str], Any, list | None]:
    """``(file_paths, labels, class_names)`` of the files under ``directory`` (see the module docstring).

    Args:
        directory: the folder.
        labels: ``"inferred"`` (from the sub-folders), None, or one int label per file, in the
            sorted order of the paths.
        formats: lower-case file extensions to keep, e.g. ``(".png", ".jpg")``.
        class_names: with ``labels="inferred"``, the sub-folders to use, in label order.
        shuffle: shuffle the files once with ``seed`` (False: sorted order).
        seed: the shuffling seed (None: a random one, as Keras draws).
        follow_links: follow symbolic links to folders.
        verbose: print Keras's "Found N files belonging to K classes."
        caller: the name errors start with.

    Returns:
        The paths (``str``), an int32 array of labels (None with ``labels=None``), and the class
        names (None with ``labels=None``; the sorted distinct labels as strings for explicit labels).

    Raises:
        ValueError: ``directory`` is not a folder, ``class_names`` without inferred labels or naming
            a missing folder, or explicit labels whose count differs from the number of files.
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise ValueError(f"{caller}: directory must be an existing folder, received {directory!r}")
    if labels == "inferred":
        folders = _class_folders(caller, directory, class_names)
    else:
        if class_names is not None:
            raise ValueError(f"{caller}: class_names can only be given with labels='inferred', "
                             f"received labels={labels!r}")
        folders = [""]
    paths: list[str] = []
    label_list: list[int] = []
    for index, folder in enumerate(folders):
        for relative in _walk(os.path.join(directory, folder), formats, follow_links):
            paths.append(os.path.join(directory, folder, relative) if folder else os.path.join(directory, relative))
            label_list.append(index)
    names: list | None
    if labels == "inferred":
        label_array: Any = np.asarray(label_list, dtype=np.int32)
        names = folders
    elif labels is None:
        label_array, names = None, None
    else:
        if len(labels) != len(paths):
            raise ValueError(f"{caller}: labels must have one entry per file: found {len(paths)} files in "
                             f"{directory!r}, received {len(labels)} labels")
        label_array = np.asarray(labels, dtype=np.int32)
        names = [str(label) for label in sorted(set(np.asarray(labels).tolist()))]
    if verbose:
        print(f"Found {len(paths)} files." if names is None
              else f"Found {len(paths)} files belonging to {len(names)} classes.")
    if shuffle:
        seed = np.random.randint(int(1e6)) if seed is None else seed
        np.random.RandomState(seed).shuffle(paths)
        if label_array is not None:
            np.random.RandomState(seed).shuffle(label_array)
    return paths, label_array, names


def split(paths: list[str], labels: Any, validation_split: float | None, subset: str | None,
          verbose: bool = True) -> tuple[list[str], Any]:
    """The ``subset`` (``"training"``/``"validation"``) of ``paths``/``labels``: the last
    ``int(validation_split * len(paths))`` files are the validation ones (Keras's rule).

    Example:
        >>> split(["a", "b", "c", "d"], None, 0.25, "validation", verbose=False)
        (['d'], None)
    """
    if not validation_split:
        return paths, labels
    count = int(validation_split * len(paths))
    keep = slice(len(paths) - count, None) if subset == "validation" else slice(None, len(paths) - count)
    if verbose:
        print(f"Using {count} files for validation." if subset == "validation"
              else f"Using {len(paths) - count} files for training.")
    return paths[keep], None if labels is None else labels[keep]
