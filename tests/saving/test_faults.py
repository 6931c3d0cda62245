"""Atomic writes and damaged files: a failing or killed save never harms the previous checkpoint;
truncated, corrupted and foreign files raise a clear error naming the file (never a partial load)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import h5py
import numpy as np
import pytest

import ember
from ember import layers
from ember.saving import CheckpointError, writer
from tests.saving.models import assert_trees_bit_equal, to_numpy_tree


def _model(seed=0):
    model = ember.Sequential([ember.Input((3,)), layers.Dense(8, name="a"), layers.Dense(8, name="b"),
                              layers.Dense(2, name="c")], name="fault")
    model.build(seed=seed)
    model.compile(optimizer="adam", loss="mse")
    return model


def _bytes(path):
    with open(path, "rb") as handle:
        return handle.read()


@pytest.mark.parametrize("fail_at", [0, 1, 3, 5])
def test_exception_midway_leaves_the_old_file_loadable_and_unchanged(tmp_path, monkeypatch, fail_at):
    path = tmp_path / "ckpt.h5"
    old = _model(seed=0)
    old.save(path)
    old_bytes = _bytes(path)
    new = _model(seed=1)

    original = h5py.Group.create_dataset
    calls = {"n": 0}

    def failing(self, *args, **kwargs):
        if calls["n"] == fail_at:
            raise OSError("disk full (injected)")
        calls["n"] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(h5py.Group, "create_dataset", failing)
    with pytest.raises(OSError, match="injected"):
        new.save(path)
    with pytest.raises(OSError, match="injected"):
        new.save_weights(path)
    monkeypatch.undo()
    assert _bytes(path) == old_bytes
    assert os.listdir(tmp_path) == ["ckpt.h5"]  # the temporary file was removed
    loaded = ember.load_model(path)
    assert_trees_bit_equal(to_numpy_tree(loaded.state), to_numpy_tree(old.state))


def test_failed_rename_and_failed_attribute_write_leave_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.h5"
    _model(seed=0).save(path)
    old_bytes = _bytes(path)

    def no_replace(*args, **kwargs):
        raise PermissionError("rename refused (injected)")

    monkeypatch.setattr(os, "replace", no_replace)
    with pytest.raises(PermissionError, match="injected"):
        _model(seed=1).save(path)
    monkeypatch.undo()

    def bad_attr(self, name, value):
        raise RuntimeError("attribute write failed (injected)")

    monkeypatch.setattr(h5py.AttributeManager, "__setitem__", bad_attr)
    with pytest.raises(RuntimeError, match="injected"):
        _model(seed=1).save(path)
    monkeypatch.undo()
    assert _bytes(path) == old_bytes and os.listdir(tmp_path) == ["ckpt.h5"]


def test_a_process_killed_while_saving_leaves_the_old_file(tmp_path):
    path = tmp_path / "ckpt.h5"
    old = _model(seed=0)
    old.save(path)
    old_bytes = _bytes(path)
    script = textwrap.dedent(f"""
        import os, h5py, ember
        from ember import layers
        ember.set_backend("numpy")
        model = ember.Sequential([ember.Input((3,)), layers.Dense(8, name="a"), layers.Dense(8, name="b"),
                                  layers.Dense(2, name="c")], name="fault")
        model.build(seed=1)
        original = h5py.Group.create_dataset
        calls = []
        def dying(self, *args, **kwargs):
            calls.append(1)
            if len(calls) == 3:
                os._exit(3)  # killed mid-write: no cleanup runs
            return original(self, *args, **kwargs)
        h5py.Group.create_dataset = dying
        model.save({str(path)!r})
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert result.returncode == 3, result.stderr
    assert _bytes(path) == old_bytes
    leftovers = [name for name in os.listdir(tmp_path) if name != "ckpt.h5"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".ckpt.h5.") and leftovers[0].endswith(".tmp")
    assert_trees_bit_equal(to_numpy_tree(ember.load_model(path).state), to_numpy_tree(old.state))
    # The next save to the same path removes the dead process's temporary file.
    _model(seed=2).save(path)
    assert os.listdir(tmp_path) == ["ckpt.h5"]


def _dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_only_stale_temporaries_of_this_target_are_removed(tmp_path):
    path = tmp_path / "ckpt.h5"
    dead = _dead_pid()
    host = writer._HOST
    stale = [f".ckpt.h5.{host}.{dead}.0123abcd.tmp", f".ckpt.h5.{dead}.89abcdef.tmp"]  # current, older pattern
    kept = [f".ckpt.h5.{host}.{os.getpid()}.0123abcd.tmp",  # a live writer (this process)
            f".ckpt.h5.{host}.{os.getppid()}.0123abcd.tmp",  # a live writer (another process)
            f".ckpt.h5.otherhost.{dead}.0123abcd.tmp",  # another machine's writer: cannot be probed
            f".other.h5.{host}.{dead}.0123abcd.tmp",  # another target
            f".ckpt.h5.{host}.{dead}.notahex.tmp", "notes.txt"]  # not this writer's pattern
    for name in stale + kept:
        (tmp_path / name).write_bytes(b"x" * 10)
    assert sorted(writer.stale_temporaries(str(path))) == sorted(str(tmp_path / name) for name in stale)
    _model().save(path)
    assert sorted(os.listdir(tmp_path)) == sorted(kept + ["ckpt.h5"])


def test_write_errors_name_the_target_not_the_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.h5"
    monkeypatch.setattr(writer, "_temporary_name", lambda base: os.path.join("missing-dir", base + ".tmp"))
    with pytest.raises(FileNotFoundError, match=r"save: cannot write '.*ckpt\.h5'") as caught:
        _model().save(path)
    assert ".tmp" not in str(caught.value)
    monkeypatch.undo()

    def disk_full(path, directory=False):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer, "_fsync_path", disk_full)
    with pytest.raises(OSError, match=r"save_weights: cannot write '.*w\.weights\.h5': No space left") as caught:
        _model().save_weights(tmp_path / "w.weights.h5")
    monkeypatch.undo()
    assert ".tmp" not in str(caught.value) and os.listdir(tmp_path) == []


def test_truncated_files_are_rejected_at_every_offset(tmp_path):
    path = tmp_path / "full.h5"
    model = _model()
    model.save(path)
    data = _bytes(path)
    size = len(data)
    for cut in sorted({0, 4, 8, 100, 512, size // 4, size // 2, 3 * size // 4, size - 64, size - 1}):
        bad = tmp_path / f"cut_{cut}.h5"
        bad.write_bytes(data[:cut])
        for load in (ember.load_model, model.load_weights):
            before = model.state
            with pytest.raises(CheckpointError) as info:
                load(bad)
            message = str(info.value)
            assert str(bad) in message
            assert any(word in message for word in ("truncated", "empty", "not an HDF5 file")), message
            assert model.state is before


def _data_offset(path, dataset):
    with h5py.File(path, "r") as file:
        return file[dataset].id.get_offset()


def test_corrupted_data_is_detected_and_nothing_is_loaded(tmp_path):
    path = tmp_path / "ckpt.h5"
    model = _model()
    model.save(path)
    offset = _data_offset(path, "state/params/c/kernel")
    data = bytearray(_bytes(path))
    data[offset + 5] ^= 0x01  # one flipped bit in the last layer's kernel
    bad = tmp_path / "flipped.h5"
    bad.write_bytes(bytes(data))
    target = _model(seed=7)
    before = to_numpy_tree(target.state)
    with pytest.raises(CheckpointError, match=r"flipped\.h5.*state/params/c/kernel.*does not match its checksum"):
        target.load_weights(bad)
    assert_trees_bit_equal(to_numpy_tree(target.state), before)  # nothing was loaded, not even layers a and b
    with pytest.raises(CheckpointError, match="checksum"):
        ember.load_model(bad)


def test_foreign_incomplete_and_newer_files(tmp_path):
    text = tmp_path / "notes.h5"
    text.write_text("hello, not a checkpoint")
    with pytest.raises(CheckpointError, match=r"notes\.h5.*not an HDF5 file"):
        ember.load_model(text)

    empty = tmp_path / "empty.h5"
    empty.write_bytes(b"")
    with pytest.raises(CheckpointError, match="empty"):
        ember.load_model(empty)

    keras_like = tmp_path / "keras.h5"
    with h5py.File(keras_like, "w") as file:
        file.attrs["keras_version"] = "2.15.0"
        file.create_dataset("model_weights/dense/kernel", data=np.zeros((2, 2)))
    with pytest.raises(CheckpointError, match=r"keras\.h5.*not an Ember checkpoint"):
        ember.load_model(keras_like)

    path = tmp_path / "ok.h5"
    _model().save(path)

    incomplete = tmp_path / "incomplete.h5"
    incomplete.write_bytes(_bytes(path))
    with h5py.File(incomplete, "r+") as file:
        del file.attrs["manifest_xxh3_64"]
    with pytest.raises(CheckpointError, match="incomplete"):
        ember.load_model(incomplete)

    newer = tmp_path / "newer.h5"
    newer.write_bytes(_bytes(path))
    with h5py.File(newer, "r+") as file:
        file.attrs["format_version"] = 99
    with pytest.raises(CheckpointError, match="format version 99.*upgrade Ember"):
        ember.load_model(newer)

    edited = tmp_path / "edited.h5"
    edited.write_bytes(_bytes(path))
    with h5py.File(edited, "r+") as file:
        file.create_dataset("state/params/a/sneaky", data=np.zeros(3))
    with pytest.raises(CheckpointError, match="not in the manifest: 'state/params/a/sneaky'"):
        ember.load_model(edited)

    removed = tmp_path / "removed.h5"
    removed.write_bytes(_bytes(path))
    with h5py.File(removed, "r+") as file:
        del file["state/params/b/bias"]
    with pytest.raises(CheckpointError, match="missing: 'state/params/b/bias'"):
        ember.load_model(removed)

    relabeled = tmp_path / "relabeled.h5"
    relabeled.write_bytes(_bytes(path))
    with h5py.File(relabeled, "r+") as file:
        file.attrs["backend"] = "jax"
    with pytest.raises(CheckpointError, match="root attribute 'backend'"):
        ember.load_model(relabeled)

    with pytest.raises(CheckpointError, match="is a directory"):
        ember.load_model(tmp_path)


def _as_version_1(path):
    """Rewrite a checkpoint as format version 1 wrote it: CRC-32 (zlib) block sums and manifest sum."""
    import json
    import zlib

    with h5py.File(path, "r+") as file:
        manifest = json.loads(file["manifest"][()].decode())
        block = manifest["block_bytes"]
        for name, entry in manifest["datasets"].items():
            data = np.ascontiguousarray(file[name][()]).reshape(-1).view(np.uint8).tobytes()
            entry["crc32"] = [zlib.crc32(data[i:i + block]) for i in range(0, max(len(data), 1), block)]
            del entry["xxh3_64"]
        manifest["documents"] = {name: zlib.crc32(file[name][()]) for name in manifest["documents"]}
        manifest["attributes"]["format_version"] = manifest["format_version"] = 1
        file.attrs["format_version"] = 1
        text = json.dumps(manifest, separators=(",", ":"))
        del file["manifest"]
        file.create_dataset("manifest", data=text)
        del file.attrs["manifest_xxh3_64"]
        file.attrs["manifest_crc32"] = np.uint32(zlib.crc32(text.encode()))


def test_version_1_files_with_crc32_checksums_still_load(tmp_path):
    model = _model()
    path = tmp_path / "v1.h5"
    model.save(path)
    _as_version_1(path)
    loaded = ember.load_model(path)
    assert_trees_bit_equal(to_numpy_tree(loaded.state), to_numpy_tree(model.state))

    with h5py.File(path, "r+") as file:  # v1 files are checked with their own checksum
        kernel = file["state/params/a/kernel"]
        kernel[0, 0] = kernel[0, 0] + 1
    with pytest.raises(CheckpointError, match="'state/params/a/kernel' does not match its checksum"):
        ember.load_model(path)


def _write_model_file(path, config_text=None, config=None):
    """A checkpoint whose config document is ``config`` (or the raw JSON ``config_text``)."""
    from ember.saving import format as fmt

    original = fmt.dumps
    try:
        if config_text is not None:
            fmt.dumps = lambda document: config_text if document == "<raw>" else original(document)
        writer.write_checkpoint(path, "model", documents={"config": "<raw>" if config_text else config})
    finally:
        fmt.dumps = original


def test_a_deeply_nested_config_is_a_checkpoint_error(tmp_path):
    path = tmp_path / "deep.h5"
    depth = 200_000
    _write_model_file(path, config_text="[" * depth + "]" * depth)
    with pytest.raises(CheckpointError, match=r"deep\.h5.*nests too deeply"):
        ember.load_model(path)


@ember.saving.register_serializable(package="faults")
def _not_a_model(x):
    return x


def test_a_registered_function_named_as_the_model_class_is_a_checkpoint_error(tmp_path):
    path = tmp_path / "function.h5"
    _write_model_file(path, config={"class_name": "faults>_not_a_model", "config": {}})
    with pytest.raises(CheckpointError, match=r"function\.h5.*'faults>_not_a_model'.*registered function, not a "
                                              r"model class"):
        ember.load_model(path)


def test_h5py_errors_from_a_damaged_file_structure_are_checkpoint_errors(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.h5"
    _model().save(path)

    def damaged(self, name):
        raise RuntimeError("Unable to synchronously get object info (bad symbol table node signature)")

    monkeypatch.setattr(h5py.File, "__contains__", damaged)
    with pytest.raises(CheckpointError, match=r"ckpt\.h5.*corrupted or malformed.*bad symbol table node"):
        ember.load_model(path)
