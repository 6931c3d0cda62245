"""Reading checkpoint files: validation first, then whole, checked reads (no partial loads).

:class:`CheckpointReader` opens a file and checks, before returning anything, that it is an
HDF5 file, an Ember checkpoint of a format version this Ember reads, that its manifest is
complete and intact (the checksum written last), and that the file holds exactly the
datasets the manifest lists, with their shapes and dtypes. :meth:`CheckpointReader.arrays`
reads a whole group and verifies every block checksum before returning the arrays. Every
problem raises :class:`~ember.saving.format.CheckpointError` naming the file and the fault.

Example:
    >>> import os, tempfile
    >>> import numpy as np
    >>> from ember.saving import reader, writer
    >>> path = os.path.join(tempfile.mkdtemp(), "demo.h5")
    >>> writer.write_checkpoint(path, "weights", trees={"state": {"params": {"w": np.zeros((2, 3), "float16")}}})
    >>> with reader.CheckpointReader(path) as ckpt:
    ...     ckpt.kind, ckpt.variables("state")
    ('weights', [('params/w', (2, 3), 'float16')])
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from ember.saving import format as fmt


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


class CheckpointReader:
    """A validated, read-only view of a checkpoint file (a context manager; see the module docstring).

    Args:
        path: the ``.h5`` file.
        caller: the public function's name, for error messages.

    Raises:
        FileNotFoundError: no file at ``path``.
        CheckpointError: a directory, FIFO or device (not a regular file), not an HDF5 file, not an
            Ember checkpoint, a newer format version,
            incomplete (truncated) or corrupted.
    """

    def __init__(self, path: Any, caller: str = "load") -> None:
        import h5py

        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"{caller}: filepath must be a str or os.PathLike, received {type(path).__name__}")
        self.path = os.fspath(path)
        self.caller = caller
        fmt.check_regular_file(self.path, caller)  # a FIFO or device would block h5py forever
        try:
            self.file = h5py.File(self.path, "r")
        except OSError as error:
            raise self._open_error(error) from None
        try:
            self._validate()
        except fmt.CheckpointError:
            self.file.close()
            raise
        except Exception as error:  # noqa: BLE001 - h5py's RuntimeError on a damaged B-tree, a malformed manifest
            self.file.close()
            raise self.error(f"the file is corrupted or malformed ({type(error).__name__}: {error})") from None
        except BaseException:
            self.file.close()
            raise

    # --- context manager --------------------------------------------------------------
    def __enter__(self) -> CheckpointReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.file.close()

    def error(self, message: str) -> fmt.CheckpointError:
        return fmt.CheckpointError(self.path, message)

    # --- validation -------------------------------------------------------------------
    def _open_error(self, error: OSError) -> fmt.CheckpointError:
        import h5py

        with open(self.path, "rb") as handle:
            head = handle.read(8)
        size = os.path.getsize(self.path)
        if size == 0:
            return self.error("the file is empty (0 bytes): it was never written or was truncated")
        if head != b"\x89HDF\r\n\x1a\n" and not h5py.is_hdf5(self.path):
            return self.error("not an HDF5 file, so not an Ember checkpoint (Ember checkpoints are HDF5 files "
                              "written by model.save / model.save_weights)")
        message = str(error)
        if "truncated" in message.lower() or "eof" in message.lower():
            return self.error(f"the file is truncated ({size} bytes on disk; HDF5 says: {message})")
        return self.error(f"the HDF5 file is truncated or corrupted and cannot be opened ({message})")

    def _validate(self) -> None:
        attrs = self.file.attrs
        try:
            marker = attrs.get("ember_format")
        except Exception as error:  # noqa: BLE001 - corrupted attribute storage
            raise self.error(f"the root attributes are corrupted ({error})") from None
        if marker is None or _text(marker) != fmt.FORMAT:
            raise self.error(
                "not an Ember checkpoint: the HDF5 file has no ember_format='ember.checkpoint' attribute "
                "(files written by other programs, e.g. Keras .h5 files, cannot be loaded)")
        try:
            version = int(attrs["format_version"])
        except Exception:  # noqa: BLE001
            raise self.error("the format_version attribute is missing or unreadable") from None
        if version > fmt.FORMAT_VERSION:
            raise self.error(f"written in checkpoint format version {version}, but this Ember reads versions up to "
                             f"{fmt.FORMAT_VERSION}: upgrade Ember to load it")
        if version < 1:
            raise self.error(f"invalid format_version {version}")
        self.checksum = fmt.checksum_for(version)
        if self.checksum.manifest_attribute not in attrs or fmt.MANIFEST not in self.file:
            raise self.error("incomplete: the manifest (written last) is missing, so the file was not completely "
                             "written (interrupted save?)")
        try:
            text = _text(self.file[fmt.MANIFEST][()])
        except Exception as error:  # noqa: BLE001
            raise self.error(f"the manifest cannot be read: the file is truncated or corrupted ({error})") from None
        if self.checksum(text.encode("utf-8")) != int(attrs[self.checksum.manifest_attribute]):
            raise self.error("corrupted: the manifest does not match its checksum")
        manifest = parse_json(text, fmt.MANIFEST, self.error)
        if not isinstance(manifest, dict):
            raise self.error("malformed: the manifest is not a JSON object")
        self.manifest = manifest
        self.block_bytes = int(manifest["block_bytes"])
        self.attrs = dict(manifest["attributes"])
        for key, value in self.attrs.items():
            try:
                stored = attrs[key]
                same = (int(stored) == value) if isinstance(value, int) else (_text(stored) == value)
            except Exception:  # noqa: BLE001 - missing or unreadable
                same = False
            if not same:
                raise self.error(f"corrupted: the root attribute {key!r} does not match the manifest")
        self.kind = self.attrs.get("kind")
        if self.kind not in fmt.KINDS:
            raise self.error(f"unknown checkpoint kind {self.kind!r} (expected one of {fmt.KINDS})")
        expected = set(manifest["datasets"]) | set(manifest["documents"]) | {fmt.MANIFEST}
        found: dict[str, Any] = {}
        try:
            self.file.visititems(lambda name, obj: found.__setitem__(name, obj) if hasattr(obj, "shape") else None)
        except Exception as error:  # noqa: BLE001
            raise self.error(f"the file's structure is corrupted ({error})") from None
        missing = sorted(expected - set(found))
        extra = sorted(set(found) - expected)
        if missing:
            raise self.error(f"damaged: {len(missing)} dataset(s) listed in the manifest are missing: "
                             f"{_listing(missing)}")
        if extra:
            raise self.error(f"modified: {len(extra)} dataset(s) are not in the manifest: {_listing(extra)}")
        for path, entry in manifest["datasets"].items():
            dataset = found[path]
            stored = fmt.stored_dtype(entry["dtype"])
            if tuple(dataset.shape) != tuple(entry["shape"]) or dataset.dtype != stored:
                raise self.error(f"damaged: dataset {path!r} has shape {tuple(dataset.shape)} and dtype "
                                 f"{dataset.dtype}, the manifest says {tuple(entry['shape'])} and {entry['dtype']}")

    # --- content -------------------------------------------------------------------------
    def has(self, prefix: str) -> bool:
        """Whether the file holds any dataset or group under ``prefix``."""
        start = prefix.rstrip("/") + "/"
        return (any(p.startswith(start) for p in self.manifest["datasets"])
                or any(g == prefix or g.startswith(start) for g in self.manifest["groups"]))

    def variables(self, prefix: str = "") -> list[tuple[str, tuple, str]]:
        """``[(path, shape, dtype)]`` of the arrays under ``prefix`` (paths relative to it), sorted."""
        out = []
        start = prefix.rstrip("/") + "/" if prefix else ""
        for path, entry in self.manifest["datasets"].items():
            if path.startswith(start):
                out.append((path[len(start):], tuple(entry["shape"]), entry["dtype"]))
        return sorted(out)

    def document(self, name: str, default: Any = None) -> Any:
        """The JSON document ``/metadata/<name>`` (checksum verified), or ``default`` when absent."""
        path = f"{fmt.METADATA}/{name}"
        if path not in self.manifest["documents"]:
            return default
        try:
            text = _text(self.file[path][()])
        except Exception as error:  # noqa: BLE001
            raise self.error(f"cannot read {path!r}: the file is truncated or corrupted ({error})") from None
        if self.checksum(text.encode("utf-8")) != self.manifest["documents"][path]:
            raise self.error(f"corrupted: {path!r} does not match its checksum")
        return parse_json(text, path, self.error)

    def arrays(self, prefix: str, host_writable: Any = None) -> dict[str, Any]:
        """Every array under ``prefix`` as NumPy (bfloat16 decoded), keyed by path relative to ``prefix``.

        All data is read and every block checksum verified before anything is returned.

        Args:
            prefix: the group to read (e.g. ``"state"``).
            host_writable: a backend's ``host_writable(shape, dtype)`` (``(array, writable NumPy view of
                its memory)`` or None): each dataset it gives a view for is read straight into that
                backend array (returned instead of a NumPy one), so loading holds one copy of the data.
        """
        start = prefix.rstrip("/") + "/"
        entries = [(path, entry) for path, entry in self.manifest["datasets"].items() if path.startswith(start)]
        out: dict[str, Any] = {}
        for path, entry in entries:
            shape = tuple(entry["shape"])
            target = None
            if host_writable is not None and fmt.stored_dtype(entry["dtype"]) == np.dtype(entry["dtype"]):
                target = host_writable(shape, entry["dtype"])  # (not for bfloat16, stored as its bits)
            if target is not None:
                native, array = target
            else:
                native, array = None, np.empty(shape, dtype=fmt.stored_dtype(entry["dtype"]))
            if array.size:
                try:
                    self.file[path].read_direct(array)
                except Exception as error:  # noqa: BLE001
                    raise self.error(f"cannot read dataset {path!r}: the file is truncated or corrupted "
                                     f"({error})") from None
            sums, expected = self.checksum.blocks(array, self.block_bytes), list(entry[self.checksum.name])
            if sums != expected:
                bad = next((i for i, (a, b) in enumerate(zip(sums, expected)) if a != b), 0)
                raise self.error(f"corrupted: the data of {path!r} does not match its checksum (bytes from "
                                 f"{bad * self.block_bytes}); the file was damaged after it was written")
            out[path[len(start):]] = fmt.decode(array, entry["dtype"]) if native is None else native
        return out

    def lists(self, prefix: str) -> dict[str, str]:
        """List containers under ``prefix`` (paths relative to it)."""
        start = prefix.rstrip("/") + "/"
        return {path[len(start):]: kind for path, kind in self.manifest["lists"].items() if path.startswith(start)}

    def empty_groups(self, prefix: str) -> list[str]:
        """Empty dicts under ``prefix`` (paths relative to it)."""
        start = prefix.rstrip("/") + "/"
        return [g[len(start):] for g in self.manifest["groups"] if g.startswith(start)]

    def tree(self, prefix: str) -> dict:
        """The nested dict of NumPy arrays stored under ``prefix`` (checked like :meth:`arrays`)."""
        return fmt.unflatten_tree(self.arrays(prefix), self.lists(prefix), self.empty_groups(prefix))


def parse_json(text: str, where: str, error: Any) -> Any:
    """``json.loads`` with malformed or absurdly nested text (a crafted file) as a CheckpointError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise error(f"malformed: {where!r} nests too deeply to be a config") from None
    except ValueError as problem:
        raise error(f"malformed: {where!r} is not valid JSON ({problem})") from None


def _listing(paths: list[str], limit: int = 20) -> str:
    shown = ", ".join(repr(p) for p in paths[:limit])
    return shown + (f", ... ({len(paths) - limit} more)" if len(paths) > limit else "")
