"""``audio_dataset_from_directory``: a folder of ``.wav`` files as a labelled, batched dataset.

Keras 3's signature and semantics without TensorFlow: files are read with the standard
library's ``wave`` module as float32 ``(samples, channels)`` arrays scaled to [-1, 1) (16-bit
PCM divided by 32768, as ``tf.audio.decode_wav``; 8-bit unsigned and 32-bit PCM are read too,
centred and divided by 128 and 2**31). ``output_sequence_length`` cuts or zero-pads every clip
to that many samples; without it a batch is zero-padded to its longest clip (Keras's
``padded_batch``). ``sampling_rate``, when given, must equal every file's rate: Keras
resamples with ``tensorflow_io``, Ember does not resample and says which file differs.
``ragged=True`` (TensorFlow's ragged tensors) raises NotImplementedError. Returns a
:class:`~ember.training.data.file_dataset.FileDataset` (see there for order and ``.prefetch``).
"""

from __future__ import annotations

import functools
import os
import wave
from typing import Any

import numpy as np

from ember.training.data.directory_datasets import build_datasets, check_common_arguments, index_files
from ember.training.data.folder_index import check_split_arguments
from ember.validation import check_positive_int

FORMATS = (".wav",)
CALLER = "audio_dataset_from_directory"
_SAMPLE_TYPES: dict[int, tuple[np.dtype, float, float]] = {
    1: (np.dtype(np.uint8), 128.0, 128.0), 2: (np.dtype("<i2"), 0.0, 32768.0), 4: (np.dtype("<i4"), 0.0, 2.0 ** 31)}


def read_wav(path: str, sampling_rate: int | None = None, output_sequence_length: int | None = None) -> np.ndarray:
    """The PCM samples of ``path`` as float32 ``(samples, channels)`` (see the module docstring).

    Raises:
        ValueError: a sample width other than 8, 16 or 32 bits, or a rate other than ``sampling_rate``.
    """
    with wave.open(path, "rb") as handle:
        width, channels, rate = handle.getsampwidth(), handle.getnchannels(), handle.getframerate()
        frames = handle.readframes(handle.getnframes())
    if width not in _SAMPLE_TYPES:
        raise ValueError(f"{CALLER}: {path!r} has {8 * width}-bit samples; 8, 16 and 32-bit PCM are read")
    if sampling_rate is not None and rate != sampling_rate:
        raise ValueError(f"{CALLER}: {path!r} is sampled at {rate} Hz but sampling_rate={sampling_rate}; Ember does "
                         "not resample (Keras uses tensorflow_io): resample the files, or pass sampling_rate=None")
    dtype, offset, scale = _SAMPLE_TYPES[width]
    samples = ((np.frombuffer(frames, dtype=dtype).astype(np.float64) - offset) / scale).astype(np.float32)
    samples = samples.reshape(-1, channels)
    if output_sequence_length is not None:
        samples = samples[:output_sequence_length]
        samples = np.pad(samples, ((0, output_sequence_length - len(samples)), (0, 0)))
    return samples


def stack_padded(clips: list) -> np.ndarray:
    """Clips zero-padded at the end to the longest, stacked ``(batch, samples, channels)``.

    Raises:
        ValueError: clips with different channel counts.
    """
    if len({clip.shape[1] for clip in clips}) > 1:
        raise ValueError(f"{CALLER}: a batch mixes channel counts {sorted({c.shape[1] for c in clips})}")
    longest = max(len(clip) for clip in clips)
    return np.stack([np.pad(clip, ((0, longest - len(clip)), (0, 0))) for clip in clips])


def audio_dataset_from_directory(directory: Any, labels: Any = "inferred", label_mode: str | None = "int",
                                 class_names: list | None = None, batch_size: int | None = 32,
                                 sampling_rate: int | None = None, output_sequence_length: int | None = None,
                                 ragged: bool = False, shuffle: bool = True, seed: int | None = None,
                                 validation_split: float | None = None, subset: str | None = None,
                                 follow_links: bool = False, verbose: bool = True) -> Any:
    """WAV clips in ``directory`` (one sub-folder per class) as batches of ``(audio, labels)``.

    Args:
        directory, labels, label_mode, class_names, batch_size, shuffle, seed, validation_split,
            subset, follow_links, verbose: as :func:`ember.utils.image_dataset_from_directory`.
        sampling_rate: the rate every file must have (None: not checked).
        output_sequence_length: samples per clip, cut or zero-padded (None: pad per batch).
        ragged: must stay False (no ragged arrays in Ember).

    Returns:
        A :class:`FileDataset`, or a ``(training, validation)`` pair with ``subset="both"``.

    Raises:
        ValueError: a bad argument (named in the message), a folder without ``.wav`` files.
        NotImplementedError: ``ragged=True``.

    Example:
        >>> import os, tempfile, wave
        >>> import numpy as np
        >>> from ember.utils import audio_dataset_from_directory
        >>> root = tempfile.mkdtemp()
        >>> for label, length in (("hum", 3), ("tap", 5)):
        ...     os.makedirs(os.path.join(root, label))
        ...     with wave.open(os.path.join(root, label, "0.wav"), "wb") as f:
        ...         f.setnchannels(1); f.setsampwidth(2); f.setframerate(8000)
        ...         f.writeframes(np.full(length, 16384, "<i2").tobytes())
        >>> ds = audio_dataset_from_directory(root, shuffle=False, verbose=False)
        >>> audio, labels = ds[0]
        >>> audio.shape, audio[0, :, 0].tolist(), labels.tolist()
        ((2, 5, 1), [0.5, 0.5, 0.5, 0.0, 0.0], [0, 1])
    """
    check_common_arguments(CALLER, labels, label_mode, class_names, batch_size)
    if ragged and output_sequence_length is not None:
        raise ValueError(f"{CALLER}: ragged and output_sequence_length cannot both be set")
    if ragged:
        raise NotImplementedError(f"{CALLER}: ragged=True needs TensorFlow's ragged tensors; use "
                                  "output_sequence_length=N (cut/pad to N samples) or the default per-batch padding")
    if output_sequence_length is not None:
        check_positive_int(CALLER, "output_sequence_length", output_sequence_length)
    if sampling_rate is not None:
        check_positive_int(CALLER, "sampling_rate", sampling_rate)
    check_split_arguments(CALLER, validation_split, subset, shuffle, seed)
    paths, label_array, names, seed = index_files(CALLER, directory, labels, label_mode, FORMATS, class_names,
                                                  shuffle, seed, follow_links, verbose)
    load = functools.partial(read_wav, sampling_rate=sampling_rate, output_sequence_length=output_sequence_length)
    return build_datasets(CALLER, paths, label_array, names, validation_split, subset, label_mode, batch_size,
                          shuffle, seed, load, stack_padded, os.fspath(directory), FORMATS, verbose)
