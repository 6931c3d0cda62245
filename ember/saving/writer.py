"""Writing checkpoint files atomically: a temporary file in the same directory, flushed and
synced, then renamed over the target (see :mod:`ember.saving.format` for the layout).

An exception or a crash at any point before the rename leaves the previous file at the
target exactly as it was (the temporary file is removed on exceptions); the rename itself
is atomic on POSIX and Windows. Every 16 MiB block gets an XXH3-64 checksum (about 30 GB/s,
so integrity costs a few percent of the write).

Example:
    >>> import os, tempfile
    >>> import numpy as np
    >>> from ember.saving import reader, writer
    >>> path = os.path.join(tempfile.mkdtemp(), "demo.h5")
    >>> writer.write_checkpoint(path, "weights", trees={"state": {"params": {"w": np.ones(3, "float32")}}})
    >>> with reader.CheckpointReader(path) as ckpt:
    ...     ckpt.arrays("state")["params/w"].tolist()
    [1.0, 1.0, 1.0]
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import secrets
import socket
from collections.abc import Iterator
from typing import Any

import numpy as np

from ember import backends
from ember._version import __version__
from ember.saving import _arrays
from ember.saving import format as fmt


# ---------------------------------------------------------------------------- files
def _fsync_path(path: str, directory: bool = False) -> None:
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        if directory:  # some platforms (Windows) cannot open directories: nothing to sync
            return
        raise
    try:
        os.fsync(fd)
    except OSError:
        if not directory:
            raise
    finally:
        os.close(fd)


def check_target(path: Any, overwrite: bool, caller: str) -> str:
    """The target path as a string, after checking it can be written.

    Raises:
        TypeError: ``path`` is not a path.
        ValueError: it does not end with ``.h5``/``.hdf5``, or is a directory.
        FileNotFoundError: its directory does not exist.
        FileExistsError: it exists and ``overwrite`` is False.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{caller}: filepath must be a str or os.PathLike, received {type(path).__name__}")
    path = os.fspath(path)
    if not path.endswith((".h5", ".hdf5")):
        raise ValueError(f"{caller}: Ember checkpoints are HDF5 files: the filepath must end with '.h5' "
                         f"(e.g. 'model.h5' or 'model.weights.h5'), received {path!r}")
    if os.path.isdir(path):
        raise ValueError(f"{caller}: {path!r} is a directory, expected a file path")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{caller}: the directory {directory!r} of {path!r} does not exist")
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"{caller}: {path!r} exists and overwrite=False")
    return path


_HOST = re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname()) or "host"


def _temporary_name(base: str) -> str:
    """``.<target>.<host>.<pid>.<random>.tmp``: hidden, and naming the process that writes it."""
    return f".{base}.{_HOST}.{os.getpid()}.{secrets.token_hex(4)}.tmp"


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only checks that the process exists
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: it exists but belongs to another user
        return True
    return True


def stale_temporaries(path: str) -> list[str]:
    """Temporary files of earlier saves to ``path`` whose writing process is gone (killed mid-save).

    Only files of this writer's pattern, written on this host, by a process that no longer
    exists (files of Ember versions without the host in the name count as this host's). On
    Windows nothing is reported: a process cannot be probed there without side effects.
    """
    if os.name != "posix":
        return []
    directory = os.path.dirname(os.path.abspath(path))
    pattern = re.compile(rf"^\.{re.escape(os.path.basename(path))}\.(?:(?P<host>[A-Za-z0-9_-]+)\.)?"
                         r"(?P<pid>\d+)\.[0-9a-f]{8}\.tmp$")
    stale = []
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    for name in names:
        match = pattern.match(name)
        if match is None or match["host"] not in (None, _HOST):
            continue
        pid = int(match["pid"])
        if pid != os.getpid() and not _process_alive(pid):
            stale.append(os.path.join(directory, name))
    return stale


def _remove_stale_temporaries(path: str) -> None:
    for stale in stale_temporaries(path):
        with contextlib.suppress(OSError):
            os.unlink(stale)


def _naming_target(error: OSError, path: str, caller: str) -> OSError:
    """The same kind of error, naming the target instead of the hidden temporary file."""
    reason = error.strerror or str(error)
    message = f"{caller}: cannot write {path!r}: {reason}"
    return type(error)(error.errno, message) if error.errno is not None else type(error)(message)


_HDF5_ERRNO = re.compile(r"errno = (\d+)")


@contextlib.contextmanager
def _hdf5_io_errors() -> Iterator[None]:
    """HDF5 reports a failed write or close (disk full, a file-size limit) as a RuntimeError such as
    "Can't decrement id ref count (unable to extend file properly, errno = 27, ...)": raise it as the
    OSError it is, so :func:`atomic_path` names the target. Other RuntimeErrors pass unchanged."""
    try:
        yield
    except RuntimeError as error:
        found = _HDF5_ERRNO.search(str(error))
        if found is None:
            raise
        code = int(found.group(1))
        raise OSError(code, f"{os.strerror(code)} (HDF5: {error})") from None


@contextlib.contextmanager
def atomic_path(path: str, caller: str = "save") -> Iterator[str]:
    """Yield a fresh temporary path next to ``path``; on success sync it and rename it over ``path``.

    On any exception the temporary file is deleted and ``path`` is untouched; an ``OSError``
    (read-only directory, disk full) is raised again naming ``path``, not the temporary file.
    Temporary files that killed saves to ``path`` left behind are removed first
    (:func:`stale_temporaries`).
    """
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    _remove_stale_temporaries(path)
    while True:
        temporary = os.path.join(directory, _temporary_name(base))
        try:
            fd = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except FileExistsError:
            continue
        except OSError as error:
            raise _naming_target(error, path, caller) from None
        os.close(fd)
        break
    try:
        yield temporary
        _fsync_path(temporary)
        os.replace(temporary, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise _naming_target(error, path, caller) from error
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_path(directory, directory=True)


def current_device() -> str:
    return str(backends.default_device())


# ---------------------------------------------------------------------------- writer
class CheckpointWriter:
    """Adds arrays and JSON documents to an open ``h5py.File``; :meth:`finish` writes the manifest.

    Args:
        file: an ``h5py.File`` opened for writing.
    """

    def __init__(self, file: Any) -> None:
        self.file = file
        self.datasets: dict[str, dict] = {}
        self.documents: dict[str, int] = {}
        self.lists: dict[str, str] = {}
        self.groups: list[str] = []
        self.backend: str | None = None
        self.device: str | None = None

    def array(self, path: str, value: Any) -> None:
        """Store one array at ``path`` with its ``dtype`` and ``backend`` attributes."""
        host, backend, device = _arrays.to_host(value)
        stored, name = fmt.encode(host)
        if self.backend is None:
            self.backend, self.device = backend, device
        dataset = self.file.create_dataset(path, data=stored)
        dataset.attrs["dtype"] = name
        dataset.attrs["backend"] = backend
        self.datasets[path] = {"dtype": name, "shape": list(stored.shape),
                               fmt.CHECKSUM.name: fmt.CHECKSUM.blocks(stored)}

    def tree(self, prefix: str, tree: Any) -> None:
        """Store every leaf of a nested dict/list ``tree`` under ``prefix``."""
        lists: dict = {}
        for path, leaf in fmt.flatten_tree(tree, prefix, lists):
            self.array(path, leaf)
        self.lists.update(lists)
        for path in fmt.empty_groups(tree, prefix):
            self.file.require_group(path)
            self.groups.append(path)
        if isinstance(tree, dict) and not tree:
            self.file.require_group(prefix)
            self.groups.append(prefix)

    def document(self, path: str, text: str) -> None:
        """Store a JSON text (from :func:`~ember.saving.format.dumps`) as a UTF-8 string dataset."""
        self.file.create_dataset(path, data=text)
        self.documents[path] = fmt.CHECKSUM(text.encode("utf-8"))

    def finish(self, attributes: dict) -> None:
        """Write the root ``attributes``, then the manifest (which repeats the attributes, so
        they are checksummed too) and, last, its checksum."""
        for key, value in attributes.items():
            self.file.attrs[key] = value
        manifest = {"format_version": fmt.FORMAT_VERSION, "block_bytes": fmt.BLOCK_BYTES,
                    "attributes": attributes, "datasets": self.datasets, "documents": self.documents,
                    "lists": self.lists, "groups": sorted(set(self.groups))}
        text = fmt.dumps(manifest)
        self.file.create_dataset(fmt.MANIFEST, data=text)
        self.file.attrs[fmt.CHECKSUM.manifest_attribute] = np.uint64(fmt.CHECKSUM(text.encode("utf-8")))


def write_checkpoint(path: Any, kind: str, *, trees: dict | None = None, documents: dict | None = None,
                     overwrite: bool = True, caller: str = "save") -> None:
    """Write a checkpoint atomically.

    Args:
        path: target ``.h5`` path.
        kind: ``"model"``, ``"weights"`` or ``"object"``.
        trees: ``{group path: nested dict of arrays}`` (e.g. ``{"state": model.state}``).
        documents: ``{name: JSON-compatible document}`` stored under ``/metadata``.
        overwrite: replace an existing file (atomically).
        caller: the public function's name, for error messages.
    """
    import h5py

    if kind not in fmt.KINDS:
        raise ValueError(f"{caller}: unknown checkpoint kind {kind!r}; expected one of {fmt.KINDS}")
    path = check_target(path, overwrite, caller)
    texts = {}
    for name, document in (documents or {}).items():
        try:
            texts[name] = fmt.dumps(document)
        except (TypeError, ValueError) as error:
            raise TypeError(f"{caller}: the {name} cannot be stored as JSON ({error}); config values must be JSON "
                            "data or objects registered with @ember.saving.register_serializable()") from None
    with atomic_path(path, caller) as temporary, _hdf5_io_errors():
        with h5py.File(temporary, "w") as file:
            writer = CheckpointWriter(file)
            for prefix, tree in (trees or {}).items():
                writer.tree(prefix, tree)
            for name, text in texts.items():
                writer.document(f"{fmt.METADATA}/{name}", text)
            writer.finish({
                "ember_format": fmt.FORMAT,
                "format_version": fmt.FORMAT_VERSION,
                "ember_version": __version__,
                "kind": kind,
                "backend": writer.backend or backends.get_backend(),
                "device": writer.device or current_device(),
                "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            })
            file.flush()
