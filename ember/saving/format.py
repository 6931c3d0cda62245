"""The layout of an Ember checkpoint file (HDF5, version 2), and the pieces shared by its
writer and reader: names, dtype encoding, state paths, checksums and the error type.

A checkpoint is one HDF5 file::

    /                         attributes: ember_format="ember.checkpoint", format_version=2,
                              ember_version, kind ("model" | "weights" | "object"),
                              backend and device that wrote it, created (ISO 8601, UTC),
                              manifest_xxh3_64 (written last: the completeness marker)
    /metadata/<name>          JSON documents as UTF-8 string datasets ("config", "training")
    /state/params/<layer>/... every variable of the model state, one dataset per array,
    /state/buffers/<layer>/... at its state path, with attributes dtype and backend
    /training/optimizer/...   (kind "model", optional) the optimizer state: "iterations",
                              "learning_rate", one subtree per slot mirroring params
    /manifest                 JSON: for every dataset its dtype, shape and XXH3-64
                              checksum of each 16 MiB block; which groups are lists; written after all data

A reader trusts nothing it has not checked: the root attributes identify the format and
version, ``manifest_xxh3_64`` proves the manifest complete and intact, the manifest names
every dataset the file must hold (no more, no fewer, each with its shape and dtype), and
every byte read is checked against its block checksums. Any failure raises
:class:`CheckpointError` naming the file and what is wrong, before anything is returned.
Version 1 files (CRC-32 checksums, ``manifest_crc32``) are still read.

HDF5 has no bfloat16: such arrays are stored as their raw ``uint16`` bit patterns
(lossless) with the attribute ``dtype="bfloat16"``. Every other Ember dtype is stored as
the HDF5 type h5py gives the NumPy dtype.

Example:
    >>> from ember.saving import format
    >>> format.flatten_tree({"params": {"dense": {"kernel": 1, "bias": 2}}, "buffers": {}})
    [('params/dense/bias', 2), ('params/dense/kernel', 1)]
    >>> format.CHECKSUM.name, format.CHECKSUM.blocks(b"ember") == format.CHECKSUM.blocks(bytearray(b"ember"))
    ('xxh3_64', True)
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import xxhash

FORMAT = "ember.checkpoint"
FORMAT_VERSION = 2
KINDS = ("model", "weights", "object")

# Checksums cover blocks of this many bytes (so an error names where the damage starts).
BLOCK_BYTES = 16 << 20

# Bounds on what a file may make a reader hold in memory (a crafted file, a zip bomb):
# a JSON document (a config, metadata) is at most MAX_JSON_BYTES once decompressed; any
# compressed member larger than BOMB_FLOOR_BYTES must not expand more than MAX_EXPANSION times
# its stored size (Keras's own guard uses the same ratio; DEFLATE cannot exceed ~1032:1 and
# Keras and Ember store weights uncompressed, 1:1), and neither may the members together.
MAX_JSON_BYTES = 64 << 20
BOMB_FLOOR_BYTES = 64 << 20
MAX_EXPANSION = 100

STATE = "state"
OPTIMIZER = "training/optimizer"
METADATA = "metadata"
MANIFEST = "manifest"

ROOT_ATTRIBUTES = ("ember_format", "format_version", "ember_version", "kind", "backend", "device", "created")

# dtype names Ember stores, and how (the NumPy dtype of the stored dataset).
_STORED = {
    "bfloat16": "uint16",
}
SUPPORTED_DTYPES = ("bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
                    "float16", "bfloat16", "float32", "float64", "complex64", "complex128")


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used: not HDF5, not Ember's, truncated, corrupted,
    from a newer format, or not matching the model. The message names the file.

    Example:
        >>> error = CheckpointError("model.h5", "the file is truncated")
        >>> str(error), error.path, isinstance(error, ValueError)
        ("checkpoint 'model.h5': the file is truncated", 'model.h5', True)
    """

    def __init__(self, path: Any, message: str) -> None:
        self.path = str(path)
        self.reason = message
        super().__init__(f"checkpoint {self.path!r}: {message}")


# --------------------------------------------------------------------------- dtypes
def dtype_name(array: np.ndarray) -> str:
    """Ember's name of a NumPy array's dtype (``"bfloat16"`` for ml_dtypes' bfloat16)."""
    name = array.dtype.name
    if name not in SUPPORTED_DTYPES:
        raise TypeError(f"cannot save an array of dtype {name}: supported dtypes are {list(SUPPORTED_DTYPES)}")
    return name


def encode(array: np.ndarray) -> tuple[np.ndarray, str]:
    """``(array as stored, Ember dtype name)``: bfloat16 becomes its uint16 bits, C order always."""
    name = dtype_name(array)
    stored = _STORED.get(name)
    if not array.flags.c_contiguous:
        array = array.copy(order="C")  # (np.ascontiguousarray would make 0-d arrays 1-d)
    if stored is not None:
        array = array.view(stored)
    return array, name


def stored_dtype(name: str) -> np.dtype:
    """The NumPy dtype a dataset holding Ember dtype ``name`` has in the file."""
    return np.dtype(_STORED.get(name, name))


def decode(stored: np.ndarray, name: str) -> np.ndarray:
    """Inverse of :func:`encode` (no copy)."""
    if name in _STORED:
        import ml_dtypes

        return stored.view(ml_dtypes.bfloat16)
    return stored


# ---------------------------------------------------------------------------- paths
def check_key(key: Any, where: str) -> str:
    """A state key usable as an HDF5 name (a non-empty string without ``/``, not ``.``)."""
    if not isinstance(key, str):
        raise TypeError(f"cannot save state key {key!r} under {where or '/'!r}: keys must be strings")
    if not key or "/" in key or key == ".":
        raise ValueError(f"cannot save state key {key!r} under {where or '/'!r}: keys must be non-empty "
                         "and contain no '/'")
    return key


def flatten_tree(tree: Any, prefix: str = "", lists: dict | None = None) -> list[tuple[str, Any]]:
    """``[(path, leaf)]`` for a nested dict/list tree, sorted by path; empty dicts give no entries.

    List and tuple nodes use their indices as keys; their paths are recorded in ``lists``
    (``{path: "list"}``) when given, so :func:`unflatten_tree` rebuilds them. (The walk is a
    module-level function, not a closure: a recursive closure is a reference cycle, which would
    keep the leaves alive after return until the garbage collector runs.)
    """
    out: list[tuple[str, Any]] = []
    _flatten_into(tree, prefix, lists, out)
    out.sort(key=_path_of)
    return out


def _path_of(item: tuple[str, Any]) -> str:
    return item[0]


def _flatten_into(node: Any, path: str, lists: dict | None, out: list) -> None:
    if isinstance(node, dict):
        for key in sorted(node, key=str):
            _flatten_into(node[key], f"{path}/{check_key(key, path)}" if path else check_key(key, path), lists, out)
    elif isinstance(node, (list, tuple)):
        if lists is not None:
            lists[path] = "list"
        for index, value in enumerate(node):
            _flatten_into(value, f"{path}/{index}" if path else str(index), lists, out)
    else:
        out.append((path, node))


def empty_groups(tree: Any, prefix: str = "") -> list[str]:
    """Paths of empty dicts inside ``tree`` (kept in the file, so the structure round-trips)."""
    out = []
    if isinstance(tree, dict):
        if not tree and prefix:
            out.append(prefix)
        for key, value in tree.items():
            out.extend(empty_groups(value, f"{prefix}/{key}" if prefix else str(key)))
    elif isinstance(tree, (list, tuple)):
        for index, value in enumerate(tree):
            out.extend(empty_groups(value, f"{prefix}/{index}" if prefix else str(index)))
    return out


def unflatten_tree(items: dict[str, Any], lists: dict | None = None, groups: list[str] | None = None) -> dict:
    """Nested dicts (lists where ``lists`` says so) from ``{path: leaf}``; ``groups`` adds empty dicts."""
    root: dict = {}
    for path in groups or ():
        node = root
        for part in path.split("/"):
            node = node.setdefault(part, {})
    for path, value in items.items():
        parts = path.split("/")
        node = root
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return _with_lists(root, "", lists or {})


def _with_lists(node: Any, path: str, lists: dict) -> Any:
    """``node`` with the dicts at the paths in ``lists`` turned into lists (a module-level function:
    see :func:`flatten_tree`)."""
    if not isinstance(node, dict):
        return node
    fixed = {k: _with_lists(v, f"{path}/{k}" if path else k, lists) for k, v in node.items()}
    if path in lists:
        return [fixed[str(i)] for i in range(len(fixed))]
    return fixed


def subtree(items: dict[str, Any], prefix: str) -> dict[str, Any]:
    """``{path relative to prefix: value}`` for the entries under ``prefix``."""
    start = prefix.rstrip("/") + "/"
    return {path[len(start):]: value for path, value in items.items() if path.startswith(start)}


# ------------------------------------------------------------------------ checksums
def byte_view(buffer: Any) -> memoryview:
    """A flat, zero-copy byte view of a C-contiguous NumPy array (any shape, empty too) or bytes."""
    if isinstance(buffer, np.ndarray):
        # ndarray exports the buffer protocol; numpy's stubs declare __buffer__ only for Python >= 3.12.
        return memoryview(buffer.reshape(-1).view(np.uint8))  # type: ignore[arg-type]  # (see above)
    return memoryview(buffer).cast("B")


def blocks(buffer: Any, block_bytes: int = BLOCK_BYTES) -> Iterator[memoryview]:
    """``buffer``'s bytes in consecutive blocks (zero-copy views; one empty block for no bytes)."""
    view = byte_view(buffer)
    if len(view) == 0:
        yield view
        return
    for start in range(0, len(view), block_bytes):
        yield view[start:start + block_bytes]


def _crc32(block: Any) -> int:
    return zlib.crc32(block) & 0xFFFFFFFF


def _xxh3_64(block: Any) -> int:
    return xxhash.xxh3_64_intdigest(block)


@dataclasses.dataclass(frozen=True)
class Checksum:
    """The checksum a format version uses: its name, the function, and where the file keeps it.

    Attributes:
        name: the algorithm, as the manifest's dataset entries name their list of block sums.
        function: bytes-like -> int.
        manifest_attribute: the root attribute holding the manifest's own checksum (written
            last: the completeness marker).
    """

    name: str
    function: Callable[[Any], int]
    manifest_attribute: str

    def __call__(self, block: Any) -> int:
        return self.function(block)

    def blocks(self, buffer: Any, block_bytes: int = BLOCK_BYTES) -> list[int]:
        """The checksum of every block of ``buffer``."""
        return [self.function(block) for block in blocks(buffer, block_bytes)]


# Version 1 used CRC-32 (zlib, ~3 GB/s: as slow as the write itself); version 2 uses XXH3-64
# (xxhash, ~30 GB/s), so integrity costs a few percent of a save instead of doubling its CPU time.
CHECKSUMS = {
    1: Checksum("crc32", _crc32, "manifest_crc32"),
    2: Checksum("xxh3_64", _xxh3_64, "manifest_xxh3_64"),
}
CHECKSUM = CHECKSUMS[FORMAT_VERSION]


def checksum_for(version: int) -> Checksum:
    """The :class:`Checksum` of checkpoint format ``version``."""
    return CHECKSUMS[version]


def dumps(document: Any) -> str:
    """Compact JSON, keys in their given order (a dict of model outputs keeps its order).

    Non-finite floats are written as JSON's common extension (``NaN``, ``Infinity``), which
    Python's reader accepts, so a config holding ``float("inf")`` (a clip value) round-trips.
    """
    return json.dumps(document, separators=(",", ":"))


def check_regular_file(path: str, caller: str) -> None:
    """Refuse, before anything opens it, a path that is not a regular file: opening a FIFO blocks
    until a writer appears, and a device has no end.

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: a directory, FIFO, socket or device.
    """
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(f"{caller}: no such file {path!r}") from None
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise CheckpointError(path, "is a directory, expected a checkpoint file")
    kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
    raise CheckpointError(path, f"is {kind}: checkpoints are read from regular files only")

