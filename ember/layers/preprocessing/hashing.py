"""``Hashing``: integer or string tokens into ``num_bins`` buckets by a stable hash, computed on the host."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ember import ops
from ember.layers.layer import DeclarativeLayer
from ember.layers.preprocessing.category_encoding import encode, encoded_shape

_MODES = ("int", "one_hot", "multi_hot", "count")


class Hashing(DeclarativeLayer):
    """Buckets each token by a salted BLAKE2b hash of its text: ``hash(token) mod num_bins``
    (``1 + hash mod (num_bins - 1)`` with a ``mask_value``, which itself goes to 0).

    The hash runs on the host (NumPy): tokens may be ints or strings, the result is a
    native int32 array (or encoded vectors) of the active backend. The buckets are stable
    across runs, processes and backends, but differ from Keras's (FarmHash).

    Args:
        num_bins: number of buckets (> 1 with a ``mask_value``).
        mask_value: a token mapped to bucket 0.
        salt: an int (or a pair of ints) keying the hash.
        output_mode: ``"int"``, ``"one_hot"``, ``"multi_hot"`` or ``"count"``.
        sparse: must be False.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> layer = layers.Hashing(num_bins=3, mask_value="")
        >>> y, _ = layer.apply(layer.build((None, 2)), [["", "abc"]])
        >>> ops.to_numpy(y)[0, 0].item(), 1 <= ops.to_numpy(y)[0, 1].item() <= 2
        (0, True)
    """

    num_bins: int
    mask_value: Any = None
    salt: Any = None
    output_mode: str = "int"
    sparse: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        minimum = 2 if self.mask_value is not None else 1
        if isinstance(self.num_bins, bool) or not isinstance(self.num_bins, int) or self.num_bins < minimum:
            raise ValueError(f"{self.name}: num_bins must be an int >= {minimum}, received {self.num_bins!r}")
        if self.output_mode not in _MODES:
            raise ValueError(f"{self.name}: output_mode must be one of {_MODES}, received {self.output_mode!r}")
        if self.sparse:
            raise ValueError(f"{self.name}: sparse=True is not supported (Ember has no sparse arrays)")
        if self.salt is not None:
            salt = [self.salt] if isinstance(self.salt, int) else list(self.salt)
            if any(isinstance(s, bool) or not isinstance(s, int) for s in salt):
                raise ValueError(f"{self.name}: salt must be an int or a list of ints, received {self.salt!r}")
            self._normalize("salt", salt)

    def _bucket(self, token: Any) -> int:
        if isinstance(token, bytes):
            token = token.decode("utf-8")
        if self.mask_value is not None and token == self.mask_value:
            return 0
        key = b"".join(int(s).to_bytes(8, "little", signed=True) for s in (self.salt or []))
        digest = hashlib.blake2b(str(token).encode("utf-8"), digest_size=8, key=key[:64]).digest()
        value = int.from_bytes(digest, "little")
        return value % self.num_bins if self.mask_value is None else 1 + value % (self.num_bins - 1)

    def call(self, params: dict, inputs: Any) -> Any:
        host = np.asarray(ops.to_numpy(inputs) if ops.is_array(inputs) else inputs, dtype=object)
        buckets = np.asarray([self._bucket(t) for t in host.reshape(-1).tolist()], dtype=np.int32).reshape(host.shape)
        out = ops.convert_to_tensor(buckets)
        if self.output_mode == "int":
            return out
        return encode(out, self.num_bins, self.output_mode, self.compute_dtype if self.dtype else "float32")

    def compute_output_shape(self, input_shape: Any) -> tuple:
        if self.output_mode == "int":
            return tuple(input_shape)
        return encoded_shape(tuple(input_shape), self.num_bins, self.output_mode)
