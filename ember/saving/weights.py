"""``save_weights`` / ``load_weights``: a model's variables only, matched by state path.

A weights file holds the model's state (``params`` and ``buffers``), one dataset per
variable at its state path (``state/params/dense/kernel``). Loading matches the file's
variables to the model's by path; variables missing from the file, extra variables in
the file and shape mismatches raise one error listing all of them, or, with
``skip_mismatch=True``, are skipped (the model keeps its values for those) and reported in
the returned :class:`LoadReport` and a warning. Values are cast to the model's variable
dtypes (as Keras assigns into existing variables) and created on the active backend. The
model's state is replaced whole, only after the file has been read and checked.

Example:
    >>> import os, tempfile
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers
    >>> model = ember.Sequential([ember.Input((3,)), layers.Dense(2, name="dense")])  # on the active backend
    >>> _ = model.build(seed=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "demo.weights.h5")
    >>> model.save_weights(path)
    >>> copy = ember.Sequential([ember.Input((3,)), layers.Dense(2, name="dense")])
    >>> report = copy.load_weights(path)
    >>> report.loaded
    ('params/dense/bias', 'params/dense/kernel')
    >>> all(np.array_equal(a, b) for a, b in zip(copy.get_weights(), model.get_weights()))
    True
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from typing import Any

import numpy as np

from ember import ops
from ember.initializers import shapes_only
from ember.saving import _arrays
from ember.saving import format as fmt
from ember.saving.reader import CheckpointReader
from ember.saving.writer import write_checkpoint


@dataclasses.dataclass(frozen=True)
class LoadReport:
    """What :func:`load_weights` did, by state path (``params/dense/kernel``).

    Attributes:
        loaded: variables set from the file.
        missing: the model's variables absent from the file (kept as they were).
        unexpected: the file's variables the model does not have (ignored).
        mismatched: ``(path, shape in file, shape in model)`` for variables whose shapes
            differ (kept as they were).

    Example:
        >>> report = LoadReport(loaded=("params/d/kernel",), missing=("params/d/bias",))
        >>> report.skipped
        True
        >>> print(report.describe())
        1 variable(s) of the model missing from the file: params/d/bias
    """

    loaded: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    unexpected: tuple[str, ...] = ()
    mismatched: tuple[tuple[str, tuple, tuple], ...] = ()

    @property
    def skipped(self) -> bool:
        """True when anything did not match (and so was skipped)."""
        return bool(self.missing or self.unexpected or self.mismatched)

    def describe(self) -> str:
        """The mismatches as readable lines (empty when everything matched)."""
        lines = []
        if self.mismatched:
            lines.append(f"{len(self.mismatched)} variable(s) with different shapes (file vs model): "
                         + ", ".join(f"{p} {tuple(a)} vs {tuple(b)}" for p, a, b in self.mismatched))
        if self.missing:
            lines.append(f"{len(self.missing)} variable(s) of the model missing from the file: "
                         + ", ".join(self.missing))
        if self.unexpected:
            lines.append(f"{len(self.unexpected)} variable(s) in the file that the model does not have: "
                         + ", ".join(self.unexpected))
        return "\n".join(lines)


def state_template(model: Any, caller: str, initialize: bool = False) -> dict:
    """The model's current state or, for an unbuilt model, a freshly built one: with ``initialize``
    False only its structure matters (every variable will be replaced), so no weights are drawn.
    The model itself is left as it was."""
    if model.state is not None:
        return model.state

    saved = {key: getattr(model, key) for key in model._handle_attributes()}
    try:
        with contextlib.nullcontext() if initialize else shapes_only():
            template = model.build()
    except ValueError as error:
        raise ValueError(f"{caller}: the model {model.name!r} is not built and cannot build itself ({error}); "
                         "build it first (model.build(input_shape) or call it on data)") from None
    finally:
        for key, value in saved.items():
            object.__setattr__(model, key, value)
    return template


def match_state(template: dict, arrays: dict[str, np.ndarray], path: str, skip_mismatch: bool,
                what: str = "weights") -> tuple[dict, LoadReport]:
    """A new state tree shaped like ``template`` with the values of ``arrays`` (``{state path: array}``).

    Raises:
        CheckpointError: anything does not match and ``skip_mismatch`` is False (the message lists
            every missing, unexpected and mismatched variable).
    """
    lists: dict = {}
    flat = fmt.flatten_tree(template, "", lists)
    model_paths = {p for p, _ in flat}
    missing = tuple(sorted(model_paths - set(arrays)))
    unexpected = tuple(sorted(set(arrays) - model_paths))
    mismatched = []
    loaded = []
    leaves = {}
    for key, leaf in flat:
        if key not in arrays:
            leaves[key] = leaf
            continue
        shape, dtype = _arrays.info(leaf)
        value = arrays[key]
        if tuple(value.shape) != tuple(shape):
            mismatched.append((key, tuple(value.shape), tuple(shape)))
            leaves[key] = leaf
            continue
        leaves[key] = (value, dtype)
        loaded.append(key)
    report = LoadReport(tuple(loaded), missing, unexpected, tuple(mismatched))
    if report.skipped and not skip_mismatch:
        raise fmt.CheckpointError(path, f"the {what} do not match the model, nothing was loaded:\n{report.describe()}\n"
                                  "(pass skip_mismatch=True to load the matching variables and skip the others)")
    converted = {}
    for key, leaf in leaves.items():
        if isinstance(leaf, tuple):
            value, dtype = leaf
            leaf = _arrays.to_native(value, dtype)
        elif not _is_active_array(leaf):
            host, _, _ = _arrays.to_host(leaf)  # a kept value from another backend
            leaf = _arrays.to_native(host, _arrays.info(leaf)[1])
        converted[key] = leaf
    groups = fmt.empty_groups(template)
    return fmt.unflatten_tree(converted, lists, groups), report


def _is_active_array(value: Any) -> bool:
    return ops.is_array(value)


def save_weights(model: Any, filepath: Any, overwrite: bool = True) -> None:
    """Save ``model``'s variables (``model.state``) to an ``.h5`` file, atomically.

    Args:
        model: a built ``ember.Model`` / ``Sequential``.
        filepath: the target; must end with ``.h5`` (``.weights.h5`` by convention).
        overwrite: replace an existing file (False raises ``FileExistsError``).

    Raises:
        ValueError: the model is not built (it has no weights yet).

    Example:
        >>> import os, tempfile
        >>> import ember
        >>> from ember import layers
        >>> ember.set_backend("numpy")
        >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1, name="d")])
        >>> _ = model.build(seed=0)
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.weights.h5")
        >>> save_weights(model, path)  # the same as model.save_weights(path)
        >>> from ember.saving.reader import CheckpointReader
        >>> with CheckpointReader(path) as ckpt:
        ...     ckpt.variables("state")
        [('params/d/bias', (1,), 'float32'), ('params/d/kernel', (2, 1), 'float32')]
    """
    if model.state is None:
        raise ValueError(f"save_weights: the model {model.name!r} has no weights yet: build it (model.build(...)), "
                         "call it on data or fit it first")
    config = {"class_name": type(model).__name__, "name": model.name}
    write_checkpoint(filepath, "weights", trees={fmt.STATE: model.state}, documents={"model": config},
                     overwrite=overwrite, caller="save_weights")


def load_weights(model: Any, filepath: Any, skip_mismatch: bool = False) -> LoadReport:
    """Load the variables of a weights file (or of a full model checkpoint) into ``model``.

    Args:
        model: the model to update (built, or able to build itself from its input shape).
        filepath: a file written by ``save_weights`` or ``save``.
        skip_mismatch: load what matches, skip (keep) the rest and report it, instead of raising.

    Returns:
        A :class:`LoadReport` (what was loaded, missing, unexpected, mismatched).

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: (a ``ValueError``) an unreadable, truncated, corrupted or non-Ember file, or
            (without ``skip_mismatch``) variables that do not match; the model is unchanged.

    Example:
        >>> import os, tempfile, warnings
        >>> import ember
        >>> from ember import layers
        >>> ember.set_backend("numpy")
        >>> old = ember.Sequential([ember.Input((2,)), layers.Dense(3, name="h"), layers.Dense(1, name="out")])
        >>> _ = old.build(seed=0)
        >>> path = os.path.join(tempfile.mkdtemp(), "old.weights.h5")
        >>> old.save_weights(path)
        >>> new = ember.Sequential([ember.Input((2,)), layers.Dense(3, name="h"), layers.Dense(2, name="out")])
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     report = load_weights(new, path, skip_mismatch=True)
        >>> report.loaded, report.mismatched[0]
        (('params/h/bias', 'params/h/kernel'), ('params/out/bias', (1,), (2,)))
    """
    with CheckpointReader(filepath, caller="load_weights") as reader:
        if reader.kind == "object":
            raise reader.error("holds a saved object (ember.saving.save_object), not model weights: load it with "
                               "ember.saving.load_object")
        arrays = reader.arrays(fmt.STATE, _arrays.host_writable) if reader.has(fmt.STATE) else {}
        path = reader.path
    template = state_template(model, "load_weights", initialize=skip_mismatch)
    state, report = match_state(template, arrays, path, skip_mismatch)
    model.state = state
    if report.skipped:
        warnings.warn(f"load_weights({path!r}): skipped variables that do not match the model:\n{report.describe()}",
                      UserWarning, stacklevel=3)
    return report
