"""The ``.keras`` archive: a zip of ``metadata.json``, ``config.json`` and ``model.weights.h5``.

Reading checks the archive before using it: only JSON, HDF5 and vocabulary-text members
(``assets/<layer path>/vocabulary.txt``, which Keras's lookup layers write) are read (a
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
import zlib
from typing import Any

from ember._version import __version__
from ember.saving.format import (
    BOMB_FLOOR_BYTES,
    MAX_EXPANSION,
    MAX_JSON_BYTES,
    CheckpointError,
    check_regular_file,
)
from ember.saving.reader import parse_json
from ember.saving.writer import atomic_path

CONFIG = "config.json"
METADATA = "metadata.json"
WEIGHTS = "model.weights.h5"
WEIGHTS_NPZ = "model.weights.npz"
ASSETS = "assets/"
VOCABULARY = "/vocabulary.txt"  # the asset Keras's lookup layers write (save_assets)
# metadata.json: Keras 3 writes its own version as keras_version (and date_saved) and reads neither
# when it loads. Ember writes there the Keras release whose saving format these files follow (the
# `keras` of the dev extra, against which tests/saving check them), and its own version, from
# ember/_version.py, as ember_version.
KERAS_FORMAT_VERSION = "3.15.0"
EMBER_VERSION = __version__


@dataclasses.dataclass(frozen=True)
class KerasArchive:
    """The parsed members of a ``.keras`` file (``weights`` is the HDF5 file's bytes)."""

    path: str
    config: dict
    metadata: dict
    weights: bytes
    # ``assets/<layer path>/vocabulary.txt`` members (lookup layers' vocabularies), by member name
    assets: dict = dataclasses.field(default_factory=dict)


def read_archive(filepath: Any, caller: str = "load_model") -> KerasArchive:
    """Open and check a ``.keras`` zip.

    Only regular files are opened (a FIFO or device is refused before anything reads it). Every
    member read is bounded before it is decompressed: ``config.json`` and ``metadata.json`` to
    ``MAX_JSON_BYTES`` (64 MiB) each; a member, or the members together, above
    ``BOMB_FLOOR_BYTES`` (64 MiB) that expands more than ``MAX_EXPANSION`` (100) times its stored
    size is a decompression bomb (Keras's guard uses the same ratio, from 4 GiB); only stored
    and DEFLATE members are read (a bzip2 or LZMA member decompresses without a bound per read).
    Like Keras, an archive without ``model.weights.h5`` is refused: a model without its
    weights would otherwise load freshly initialised, with no sign that anything was missing.

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: not a regular file, not a zip, a truncated or corrupted archive, no
            ``config.json`` or ``model.weights.h5``, a member over the bounds above, or JSON
            that does not parse or nests too deeply.
    """
    path = os.fspath(filepath)
    check_regular_file(path, caller)
    if not zipfile.is_zipfile(path):
        raise CheckpointError(path, "not a .keras file (a .keras file is a zip archive written by Keras 3 or by "
                                    "Ember's model.save('....keras'))")
    try:
        with zipfile.ZipFile(path) as archive:
            return _read_members(path, archive)
    except CheckpointError:
        raise
    except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError, RuntimeError, OSError,
            ValueError) as error:
        raise CheckpointError(path, f"the archive is truncated or corrupted ({type(error).__name__}: "
                                    f"{error})") from None


def _read_members(path: str, archive: zipfile.ZipFile) -> KerasArchive:
    infos = {info.filename: info for info in archive.infolist()}
    names = sorted(infos)
    if CONFIG not in infos:
        raise CheckpointError(path, f"the archive has no {CONFIG} (members: {names[:10]})")
    if WEIGHTS not in infos:
        hint = (f" (it holds {WEIGHTS_NPZ}, Keras's NumPy weights layout, which Ember does not read: re-save it "
                "with Keras's default weights_format='h5')" if WEIGHTS_NPZ in infos else "")
        raise CheckpointError(path, f"the archive has no {WEIGHTS} member, so the model's weights are missing"
                                    f"{hint} (members: {names[:10]}); nothing was loaded")
    for name, limit in ((CONFIG, MAX_JSON_BYTES), (METADATA, MAX_JSON_BYTES), (WEIGHTS, None)):
        if name in infos:
            _check_member(path, infos[name], limit)
    declared = sum(info.file_size for info in infos.values())
    stored = sum(info.compress_size for info in infos.values())
    if declared > BOMB_FLOOR_BYTES and declared > MAX_EXPANSION * stored:
        raise CheckpointError(path, f"the archive's members declare {_mib(declared)} uncompressed but store only "
                                    f"{_mib(stored)}: refused as a decompression bomb")
    config = _json(path, archive, infos[CONFIG])
    metadata = _json(path, archive, infos[METADATA]) if METADATA in infos else {}
    if not isinstance(config, dict):
        raise CheckpointError(path, f"{CONFIG} must hold a JSON object, found {type(config).__name__}")
    weights = _read(path, archive, infos[WEIGHTS], limit=None)
    assets = {name: _read(path, archive, info, limit=MAX_JSON_BYTES) for name, info in infos.items()
              if name.startswith(ASSETS) and name.endswith(VOCABULARY)}
    return KerasArchive(path, config, metadata, weights, assets)


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.2f} MiB"


def _check_member(path: str, info: zipfile.ZipInfo, limit: int | None) -> None:
    """Refuse a member over ``limit``, a bomb or an unbounded compression (see read_archive)."""
    name = info.filename
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise CheckpointError(path, f"the member {name!r} uses zip compression method {info.compress_type}; only "
                                    "stored and DEFLATE members are read")
    if limit is not None and info.file_size > limit:
        raise CheckpointError(path, f"the member {name!r} declares {_mib(info.file_size)} uncompressed, more than "
                                    f"the {_mib(limit)} a JSON document may hold")
    if info.file_size > BOMB_FLOOR_BYTES and info.file_size > MAX_EXPANSION * info.compress_size:
        raise CheckpointError(path, f"the member {name!r} declares {_mib(info.file_size)} uncompressed but stores only "
                                    f"{_mib(info.compress_size)}: refused as a decompression bomb")


def _read(path: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int | None) -> bytes:
    """A member's bytes, checked by :func:`_check_member` before anything is decompressed."""
    _check_member(path, info, limit)
    # zipfile stops at the declared size (and checks the CRC there), so the bounds above hold
    with archive.open(info) as member:
        return member.read()


def _json(path: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Any:
    data = _read(path, archive, info, limit=MAX_JSON_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CheckpointError(path, f"the archive's JSON is corrupted: {info.filename!r} is not UTF-8 "
                                    f"({error})") from None
    return parse_json(text, info.filename, lambda message: CheckpointError(path, message))


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
        archive.writestr(WEIGHTS, weights)
