"""The ``.keras`` archive: a zip of ``metadata.json``, ``config.json`` and ``model.weights.h5``.

Reading checks the archive before using it: only JSON and HDF5 members are read (a
``.keras`` file never holds code Ember would run; Keras's ``Lambda`` bytecode is refused by
the layer converter), the JSON must parse, and the weights are read from memory.
Writing is atomic (a temporary file renamed over the target).

Example:
    >>> import os, tempfile
    >>> from ember.saving.keras_format import archive
    >>> path = os.path.join(tempfile.mkdtemp(), "m.keras")
    >>> archive.write_archive(path, {"class_name": "Sequential", "config": {}}, b"")
    >>> contents = archive.read_archive(path)
    >>> contents.config["class_name"], sorted(contents.metadata)
    ('Sequential', ['date_saved', 'ember_version', 'keras_version'])
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import zipfile
from typing import Any

from ember._version import __version__
from ember.saving.format import CheckpointError
from ember.saving.writer import atomic_path

CONFIG = "config.json"
METADATA = "metadata.json"
WEIGHTS = "model.weights.h5"
# metadata.json: Keras 3 writes its own version as keras_version (and date_saved) and reads neither
# when it loads. Ember writes there the Keras release whose saving format these files follow (the
# `keras` of the dev extra, against which tests/saving check them), and its own version, from
# ember/_version.py, as ember_version.
KERAS_FORMAT_VERSION = "3.15.0"
EMBER_VERSION = __version__


@dataclasses.dataclass(frozen=True)
class KerasArchive:
    """The parsed members of a ``.keras`` file (``weights`` is the HDF5 file's bytes, or None)."""

    path: str
    config: dict
    metadata: dict
    weights: bytes | None


def read_archive(filepath: Any) -> KerasArchive:
    """Open and check a ``.keras`` zip.

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: not a zip, no ``config.json``, or JSON that does not parse.
    """
    path = os.fspath(filepath)
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_model: no such file {path!r}")
    if not zipfile.is_zipfile(path):
        raise CheckpointError(path, "not a .keras file (a .keras file is a zip archive written by Keras 3 or by "
                                    "Ember's model.save('....keras'))")
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
        if CONFIG not in names:
            raise CheckpointError(path, f"the archive has no {CONFIG} (members: {sorted(names)[:10]})")
        try:
            config = json.loads(archive.read(CONFIG).decode("utf-8"))
            metadata = json.loads(archive.read(METADATA).decode("utf-8")) if METADATA in names else {}
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise CheckpointError(path, f"the archive's JSON is corrupted ({error})") from None
        weights = archive.read(WEIGHTS) if WEIGHTS in names else None
    if not isinstance(config, dict):
        raise CheckpointError(path, f"{CONFIG} must hold a JSON object, found {type(config).__name__}")
    return KerasArchive(path, config, metadata, weights)


def write_archive(filepath: Any, config: dict, weights: bytes, overwrite: bool = True) -> None:
    """Write a ``.keras`` zip atomically (stored, not compressed, as Keras does for its weights).

    Raises:
        ValueError: the path does not end with ``.keras``.
        FileExistsError: it exists and ``overwrite`` is False.
        FileNotFoundError: its directory does not exist.
    """
    path = os.fspath(filepath)
    if not path.endswith(".keras"):
        raise ValueError(f"save: a Keras archive's path must end with '.keras', received {path!r}")
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"save: {path!r} exists and overwrite=False")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"save: the directory {directory!r} of {path!r} does not exist")
    metadata = {"keras_version": KERAS_FORMAT_VERSION, "ember_version": EMBER_VERSION,
                "date_saved": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d@%H:%M:%S")}
    with atomic_path(path) as temporary, zipfile.ZipFile(temporary, "w") as archive:
        archive.writestr(METADATA, json.dumps(metadata))
        archive.writestr(CONFIG, json.dumps(config))
        if weights:
            archive.writestr(WEIGHTS, weights)
