"""Loading refuses damaged and hostile files with a CheckpointError naming the file (issue #38):
a ``.keras`` without its weights, zip bombs, FIFOs, absurdly nested configs, damaged weights
members; and a save that hits a file-size limit names its target and keeps the old file."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import tracemalloc
import zipfile

import numpy as np
import pytest

import ember
from ember import layers
from ember.saving import CheckpointError
from ember.saving.format import BOMB_FLOOR_BYTES, MAX_JSON_BYTES


def _model():
    model = ember.Sequential([ember.Input((3,)), layers.Dense(4, name="a"), layers.Dense(2, name="b")], name="r")
    model.build(seed=0)
    return model


def _members(path):
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _rewrite(path, members, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


@pytest.fixture
def saved(backend, tmp_path):
    model = _model()
    path = tmp_path / "model.keras"
    model.save(path)
    return model, path, _members(path)


def _refused(path, *patterns, load=ember.load_model):
    with pytest.raises(CheckpointError) as caught:
        load(path)
    message = str(caught.value)
    assert str(path) in message
    for pattern in patterns:
        assert pattern in message, message


@pytest.mark.parametrize("renamed", [None, "../model.weights.h5", "model.weights.npz"])
def test_a_keras_archive_without_its_weights_member_is_refused(saved, renamed):
    model, path, members = saved
    weights = members.pop("model.weights.h5")
    if renamed is not None:
        members[renamed] = weights
    _rewrite(path, members)
    _refused(path, "no model.weights.h5")
    before = model.get_weights()
    _refused(path, "no model.weights.h5", load=model.load_weights)
    for old, new in zip(before, model.get_weights()):
        np.testing.assert_array_equal(old, new)


def _deflated_zeros(path, members, name, size):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for other, data in members.items():
            if other != name:
                archive.writestr(other, data)
        with archive.open(name, "w", force_zip64=True) as member:
            chunk = bytes(1 << 20)
            for _ in range(size >> 20):
                member.write(chunk)


@pytest.mark.parametrize("name", ["model.weights.h5", "config.json", "metadata.json"])
def test_a_zip_bomb_is_refused_before_it_is_decompressed(saved, name):
    model, path, members = saved
    size = max(BOMB_FLOOR_BYTES, MAX_JSON_BYTES) + (1 << 20)
    _deflated_zeros(path, members, name, size)
    assert os.path.getsize(path) < size / 500
    tracemalloc.start()
    try:
        _refused(path, repr(name))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, f"{peak / 2**20:.1f} MiB allocated while refusing the bomb"
    _refused(path, repr(name), load=model.load_weights)


def test_a_member_compressed_without_a_bounded_decompressor_is_refused(saved):
    _, path, members = saved
    _rewrite(path, members, compression=zipfile.ZIP_LZMA)
    _refused(path, "compression method")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="os.mkfifo is POSIX-only (no named pipes on this platform)")
@pytest.mark.parametrize("suffix", [".keras", ".h5", ".weights.h5"])
def test_a_fifo_is_refused_at_once(backend, tmp_path, suffix):
    fifo = tmp_path / f"pipe{suffix}"
    os.mkfifo(fifo)
    model = _model()
    errors = []

    def attempt():
        for load in (ember.load_model, model.load_weights):
            try:
                load(fifo)
            except CheckpointError as error:
                errors.append(str(error))

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(timeout=30)
    if thread.is_alive():  # unblock the reader so the test process can end
        with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
            pass
        pytest.fail(f"loading the FIFO {fifo} blocked")
    assert len(errors) == 2, errors
    assert all(str(fifo) in error and "FIFO" in error for error in errors), errors


def test_a_deeply_nested_keras_config_is_a_checkpoint_error(saved):
    _, path, members = saved
    members["config.json"] = ("[" * 100_000 + "]" * 100_000).encode()
    _rewrite(path, members)
    _refused(path, "'config.json' nests too deeply")


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_a_damaged_weights_member_is_a_checkpoint_error(saved, damage):
    model, path, members = saved
    weights = members["model.weights.h5"]
    members["model.weights.h5"] = {"truncated": weights[: len(weights) // 2], "garbage": b"\x00junk" * 1000,
                                   "empty": b""}[damage]
    _rewrite(path, members)
    _refused(path, "model.weights.h5")
    _refused(path, "model.weights.h5", load=model.load_weights)


def test_a_truncated_archive_is_a_checkpoint_error(saved):
    _, path, _ = saved
    data = path.read_bytes()
    for cut in (len(data) // 3, len(data) - 30):
        path.write_bytes(data[:cut])
        _refused(path)


_FSIZE_SCRIPT = textwrap.dedent("""
    import resource, signal, sys
    import ember
    from ember import layers
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    ember.set_backend(sys.argv[2])
    model = ember.Sequential([ember.Input((300,)), layers.Dense(300), layers.Dense(1)])
    model.build(seed=1)
    resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
    try:
        model.save(sys.argv[1])
    except OSError as error:
        print("OSError", error)
    """)


@pytest.mark.skipif(sys.platform == "win32", reason="resource.setrlimit and SIGXFSZ are POSIX-only")
@pytest.mark.parametrize("suffix", [".h5", ".keras"])
def test_a_save_over_the_file_size_limit_names_the_path_and_keeps_the_old_file(backend, tmp_path, suffix):
    path = tmp_path / f"model{suffix}"
    _model().save(path)
    old = path.read_bytes()
    done = subprocess.run([sys.executable, "-c", _FSIZE_SCRIPT, str(path), ember.get_backend()],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("OSError"), done.stdout + done.stderr[-3000:]
    assert repr(str(path)) in done.stdout and "File too large" in done.stdout, done.stdout
    assert path.read_bytes() == old
    assert sorted(os.listdir(tmp_path)) == [path.name]
    ember.load_model(path)
