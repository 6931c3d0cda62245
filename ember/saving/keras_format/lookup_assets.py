"""Lookup layers' vocabularies in ``.keras`` files: Keras's assets and config keys, read into Ember's configs.

Keras 3's ``IntegerLookup``, ``StringLookup`` and ``TextVectorization`` keep a vocabulary given
to the constructor in their config (``"vocabulary": [...]``), and Ember writes every vocabulary
that way (an Ember lookup layer always holds its vocabulary as an argument: ``adapt`` returns a
copy with it), which Keras reads back as is. A vocabulary Keras learnt with ``adapt`` is not in
the config (``"vocabulary": null``): Keras's ``save_assets`` writes it to the archive member
``assets/<layer path>/vocabulary.txt``, one token per line, special tokens first (the mask
token if any, then the OOV token ``num_oov_indices`` times), where ``<layer path>`` is the
layer's place in the model as in the weights file (``layers/<snake_case class>[_<n>]``,
numbered per class in the config's order; a nested model's layers under its own path).

:func:`with_vocabularies` prepares a Keras model config for Ember's converter: it fills each
such vocabulary from its asset (the special tokens at its head removed, as Keras's
``set_vocabulary`` does; integers parsed for ``IntegerLookup``), checks and drops
``vocabulary_size`` (Keras writes the size including the special tokens; Ember derives it), and
drops ``oov_method="floormod"`` (Keras's default; Ember's OOV buckets are its own, see
``StringLookup``).

Example:
    >>> config = {"class_name": "Sequential", "config": {"layers": [
    ...     {"class_name": "InputLayer", "config": {}},
    ...     {"class_name": "IntegerLookup", "config": {"vocabulary": None, "vocabulary_size": 3,
    ...      "num_oov_indices": 1, "mask_token": None, "oov_token": -1, "oov_method": "floormod"}}]}}
    >>> assets = {"assets/layers/integer_lookup/vocabulary.txt": b"-1\\n7\\n3"}
    >>> with_vocabularies(config, assets, "m.keras")["config"]["layers"][1]["config"]
    {'vocabulary': [7, 3], 'num_oov_indices': 1, 'mask_token': None, 'oov_token': -1}
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

from ember.naming import to_snake_case
from ember.saving.format import CheckpointError
from ember.saving.keras_format.archive import ASSETS, VOCABULARY

LOOKUP_CLASSES = ("IntegerLookup", "StringLookup", "TextVectorization")
MODEL_CLASSES = ("Sequential", "Functional", "Model")
# TextVectorization's defaults for the special tokens (its lookup layer's mask and OOV tokens).
TEXT_VECTORIZATION_SPECIALS = {"mask_token": "", "oov_token": "[UNK]", "num_oov_indices": 1}


def lookup_entries(config: dict, prefix: str = "") -> Iterator[tuple[str, dict]]:
    """``(layer path, layer entry)`` of every lookup layer of a Keras model config, nested models included."""
    used: dict[str, int] = {}
    for entry in config.get("config", {}).get("layers", []) or []:
        if not isinstance(entry, dict):
            continue
        class_name = str(entry.get("class_name", ""))
        base = "functional" if class_name in ("Functional", "Model") else to_snake_case(class_name)
        used[base] = used.get(base, -1) + 1
        path = f"{prefix}layers/{base}" + ("" if used[base] == 0 else f"_{used[base]}")
        if class_name in MODEL_CLASSES:
            yield from lookup_entries(entry, f"{path}/")
        elif class_name in LOOKUP_CLASSES:
            yield path, entry


def _specials(class_name: str, layer: dict) -> list[str]:
    """The special tokens at the head of Keras's vocabulary file, as text lines."""
    defaults = TEXT_VECTORIZATION_SPECIALS if class_name == "TextVectorization" else {}
    mask = layer.get("mask_token", defaults.get("mask_token"))
    oov = layer.get("oov_token", defaults.get("oov_token", "[UNK]" if class_name == "StringLookup" else -1))
    count = int(layer.get("num_oov_indices", 1))
    head = [] if mask is None else [str(mask)]
    return head + [str(oov)] * count


def parse_vocabulary(class_name: str, layer: dict, text: str, where: str) -> list:
    """The vocabulary in Keras's ``vocabulary.txt`` ``text`` without its special tokens (see the module docstring).

    Raises:
        CheckpointError: an ``IntegerLookup`` line that is not an integer.
    """
    lines = text.split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    head = _specials(class_name, layer)
    if lines[:len(head)] == head:
        lines = lines[len(head):]
    if class_name != "IntegerLookup":
        return lines
    try:
        return [int(line) for line in lines]
    except ValueError as error:
        raise CheckpointError(where, f"the IntegerLookup vocabulary asset holds a line that is not an integer "
                                     f"({error})") from None


def with_vocabularies(config: dict, assets: dict, where: str) -> dict:
    """A copy of the Keras model ``config`` with its lookup layers' vocabularies and keys made Ember's.

    Args:
        config: the archive's ``config.json``.
        assets: ``{member name: bytes}`` of the archive's ``assets/.../vocabulary.txt`` members.
        where: the archive's path, for errors.

    Raises:
        CheckpointError: an adapted lookup layer without a vocabulary in its config or an asset, an
            asset whose token count disagrees with ``vocabulary_size``, or one that is not UTF-8.
    """
    config = copy.deepcopy(config)
    for path, entry in lookup_entries(config):
        class_name = entry["class_name"]
        layer = entry.setdefault("config", {})
        name = layer.get("name", path)
        size = layer.pop("vocabulary_size", None)
        if layer.get("vocabulary") is None:
            member = f"{ASSETS}{path}{VOCABULARY}"
            if member not in assets:
                if size in (None, 0):
                    continue  # never adapted: Ember's converter reports the missing vocabulary when built
                raise CheckpointError(where, f"the {class_name} layer {name!r} has no vocabulary in its config "
                                             f"and the archive has no {member!r}")
            try:
                text = assets[member].decode("utf-8")
            except UnicodeDecodeError as error:
                raise CheckpointError(where, f"{member!r} is not UTF-8 ({error})") from None
            layer["vocabulary"] = parse_vocabulary(class_name, layer, text, where)
            expected = len(layer["vocabulary"]) + len(_specials(class_name, layer))
            if size is not None and int(size) != expected:
                raise CheckpointError(where, f"the {class_name} layer {name!r} declares vocabulary_size={size} but "
                                             f"{member!r} holds {expected} tokens with the special ones")
        if layer.get("oov_method") == "floormod":
            del layer["oov_method"]
        if "salt" in layer and layer["salt"] is None:
            del layer["salt"]
    return config
