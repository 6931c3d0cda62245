"""Sharded checkpoints: each rank writes its shard of the optimizer state; any number of processes loads it.

Under ``ember.distribute.initialize(shard_optimizer=True)`` (or ``fully_shard=True``) each rank holds
its own pieces of the optimizer slots only (:mod:`ember.distribute.zero`), so ``model.save`` on the main rank cannot
write the whole state (it refuses). :func:`save_sharded`, called on every rank, writes a directory::

    model.h5                        the main rank's model.save(include_optimizer=False): architecture,
                                    compile config, weights (every rank holds all of them)
    optimizer-00000-of-00002.h5     rank 0's pieces of the slots: /optimizer/variables/v<index>/<slot>
    optimizer-00001-of-00002.h5     (whole, or the 1-d slice (lo, hi) its metadata names), and the
                                    optimizer's scalars (/optimizer/scalars: iterations, learning rate,
                                    loss scale ...); Ember checkpoint files (kind "object", checksummed)
    index.json                      written last (the completeness marker): format and version, the
                                    writing world size and layout ("elements", "variables", or "rows"
                                    under fully_shard=True: which rank holds which elements,
                                    :mod:`ember.distribute.zero`), each
                                    variable's path, shape and dtype, the slot names, and the training
                                    document that model.save stores (seed, step RNG, epoch, step, fits)

Without sharding (one process, or ``shard_optimizer=False``) the same files are written: each rank
writes its whole variables (layout "variables") of the full state. :func:`load_sharded` reads the
directory on any number of processes: every rank reads its pieces of the slots under the *current*
layout, from whichever files hold them (resharding), and the model resumes as ``load_model`` would.
:func:`export_sharded` (one process) writes the single file that ``ember.load_model`` reads.

Nothing is unpickled: HDF5 datasets and JSON only.

Example:
    >>> import os, tempfile
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers, saving
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    >>> model.compile(optimizer="adam", loss="mse", seed=0)
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=1, verbose=0)
    >>> directory = os.path.join(tempfile.mkdtemp(), "ckpt")
    >>> saving.save_sharded(model, directory)
    >>> sorted(os.listdir(directory))
    ['index.json', 'model.h5', 'optimizer-00000-of-00001.h5']
    >>> int(saving.load_sharded(directory)._training.opt_state["iterations"])
    1
"""

from __future__ import annotations

import datetime
import json
import os
from typing import Any

import numpy as np
import optree

from ember import distribute, ops
from ember._version import __version__
from ember.distribute import zero
from ember.saving import format as fmt
from ember.saving import model_io, training_state
from ember.saving.reader import CheckpointReader
from ember.saving.writer import atomic_path, write_checkpoint

FORMAT = "ember.sharded_checkpoint"
FORMAT_VERSION = 1
INDEX = "index.json"
MODEL_FILE = "model.h5"
_INDEX_KEYS = ("format", "format_version", "world_size", "layout", "model_file", "shard_files", "variables",
               "slots", "training")


def shard_file(rank: int, world_size: int) -> str:
    """The file name of ``rank``'s shard in a checkpoint written by ``world_size`` ranks.

    Example:
        >>> shard_file(1, 2)
        'optimizer-00001-of-00002.h5'
    """
    return f"optimizer-{rank:05d}-of-{world_size:05d}.h5"


def _variable_key(index: int) -> str:
    return f"v{index:06d}"


def _trainer(model: Any, caller: str) -> Any:
    trainer = getattr(getattr(model, "_training", None), "trainer", None)
    if trainer is None or model.state is None:
        raise ValueError(f"{caller}: the model must be compiled and built (it has no optimizer state to save); "
                         "call model.compile(...) first, or save it with model.save")
    return trainer


def _trainable(model: Any, trainer: Any) -> tuple[list, Any, list[str]]:
    core = trainer.core
    core.prepare_mask(model.state["params"])
    trainable, _ = core.split(model.state["params"])
    leaves, treedef = optree.tree_flatten(trainable)
    paths = ["/".join(str(k) for k in path) for path in optree.tree_paths(trainable)]
    return leaves, treedef, paths


def _step_pieces(trainer: Any, leaves: list) -> list[zero.Piece]:
    """This rank's pieces of a sharded state, from the steps' sharded optimizer (read by attribute: the
    trainer sits above this package)."""
    optimizer = trainer.steps.core.optimizer
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)
    pieces = getattr(optimizer, "pieces", None)
    if pieces is None:
        raise ValueError("save_sharded: the optimizer state is sharded, but the active ember.distribute strategy does "
                         "not shard it (shard_optimizer was turned off after the fit); turn it on again to save")
    return pieces(leaves)


def _layout(trainer: Any, sharded: bool) -> str:
    if not sharded:
        return "variables"
    optimizer = trainer.steps.core.optimizer
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)
    return getattr(optimizer, "layout", "variables")


_LAYOUTS = ("elements", "variables", "rows")


def _pieces(layout: str, shapes: list[tuple], rank: int, world: int) -> list[zero.Piece]:
    if layout == "rows":
        return zero.row_pieces(shapes, rank, world)
    sizes = [int(np.prod(shape, dtype=np.int64)) for shape in shapes]
    return (zero.element_pieces if layout == "elements" else zero.variable_pieces)(sizes, rank, world)


def save_sharded(model: Any, directory: Any) -> None:
    """Write ``model`` with its optimizer state sharded over the ranks (see the module docstring).

    Call it on every rank (it ends with barriers); without a strategy it writes one shard.
    An existing checkpoint in ``directory`` is replaced file by file (each write is atomic).

    Raises:
        ValueError: the model is not compiled and built, or its optimizer state is sharded for
            another rank or number of processes.
    """
    caller = "save_sharded"
    trainer = _trainer(model, caller)
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    opt_state, progress = training_state.capture(model)
    if opt_state is None:  # compiled, never trained: a fresh state in the layout of this process's steps
        opt_state = trainer.init_state(model.state)["optimizer"]
    leaves, treedef, paths = _trainable(model, trainer)
    shapes = [tuple(ops.shape(leaf)) for leaf in leaves]
    rank, world = distribute.rank(), distribute.world_size()
    sharded = training_state.is_sharded(opt_state)
    if sharded:
        marker = [int(v) for v in np.asarray(ops.to_numpy(opt_state[zero.SHARD_KEY])).tolist()]
        if marker != [rank, world]:
            raise ValueError(f"{caller}: the optimizer state is rank {marker[0]}'s shard of {marker[1]} processes, "
                             f"but this is rank {rank} of {world}")
    layout = _layout(trainer, sharded)
    pieces = _step_pieces(trainer, leaves) if sharded else _pieces(layout, shapes, rank, world)
    slots = list(trainer.optimizer.slot_initializers())
    values = {slot: treedef.flatten_up_to(opt_state[slot]) for slot in slots}
    variables = {_variable_key(i): {slot: values[slot][i] for slot in slots}
                 for i, (lo, hi) in enumerate(pieces) if hi > lo}
    scalars = {key: value for key, value in opt_state.items() if key not in slots and key != zero.SHARD_KEY}
    files = [shard_file(r, world) for r in range(world)]
    document = {"rank": rank, "world_size": world, "format": FORMAT,
                "pieces": {_variable_key(i): [lo, hi] for i, (lo, hi) in enumerate(pieces) if hi > lo}}
    write_checkpoint(os.path.join(directory, files[rank]), "object",
                     trees={"optimizer": {"variables": variables, "scalars": scalars}},
                     documents={"optimizer_shard": document}, caller=caller)
    if rank == 0:
        model_io.save_model(model, os.path.join(directory, MODEL_FILE), include_optimizer=False)
    distribute.barrier()  # every shard and the model are written: the index may name them
    if rank == 0:
        index = {"format": FORMAT, "format_version": FORMAT_VERSION, "ember_version": __version__,
                 "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                 "world_size": world, "layout": layout, "model_file": MODEL_FILE, "shard_files": files,
                 "variables": [{"path": path, "shape": list(ops.shape(leaf)), "dtype": str(ops.dtype(leaf))}
                               for path, leaf in zip(paths, leaves)],
                 "slots": slots, "optimizer": type(trainer.optimizer).__name__, "training": progress}
        target = os.path.join(directory, INDEX)
        with atomic_path(target, caller) as temporary, open(temporary, "w", encoding="utf-8") as handle:
            handle.write(fmt.dumps(index))
    distribute.barrier()


def read_index(directory: Any) -> dict:
    """The validated ``index.json`` of a sharded checkpoint.

    Raises:
        FileNotFoundError: no index (not a sharded checkpoint, or one whose save did not finish).
        CheckpointError: a malformed index or a newer format version.
    """
    path = os.path.join(os.fspath(directory), INDEX)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load_sharded: {path} does not exist: not a sharded checkpoint written by "
                                "ember.saving.save_sharded, or its save did not finish (the index is written last)")
    if os.path.getsize(path) > fmt.MAX_JSON_BYTES:
        raise fmt.CheckpointError(path, f"the index is larger than {fmt.MAX_JSON_BYTES} bytes: not an index")
    try:
        with open(path, encoding="utf-8") as handle:
            index = json.load(handle)
    except (ValueError, RecursionError) as error:
        raise fmt.CheckpointError(path, f"malformed: the index is not valid JSON ({error})") from None
    missing = [key for key in _INDEX_KEYS if not isinstance(index, dict) or key not in index]
    if missing:
        raise fmt.CheckpointError(path, f"malformed: the index lacks {missing}")
    if index["format"] != FORMAT:
        raise fmt.CheckpointError(path, f"not a sharded Ember checkpoint index (format {index['format']!r})")
    if not isinstance(index["format_version"], int) or index["format_version"] > FORMAT_VERSION:
        raise fmt.CheckpointError(path, f"written in sharded format version {index['format_version']!r}, but this "
                                        f"Ember reads versions up to {FORMAT_VERSION}: upgrade Ember to load it")
    world = index["world_size"]
    if not isinstance(world, int) or world < 1 or len(index["shard_files"]) != world:
        raise fmt.CheckpointError(path, "malformed: the world size and the shard files disagree")
    if index["layout"] not in _LAYOUTS:
        raise fmt.CheckpointError(path, f"malformed: unknown layout {index['layout']!r}")
    for name in [index["model_file"], *index["shard_files"]]:
        if not isinstance(name, str) or os.path.basename(name) != name or name in ("", ".", ".."):
            raise fmt.CheckpointError(path, f"malformed: {name!r} is not a file name inside the checkpoint directory")
    return index


def _check_variables(index: dict, leaves: list, paths: list[str], path: str) -> None:
    saved = [(v["path"], tuple(v["shape"])) for v in index["variables"]]
    here = [(p, tuple(ops.shape(leaf))) for p, leaf in zip(paths, leaves)]
    if saved != here:
        diff = next(((a, b) for a, b in zip(saved, here) if a != b), (len(saved), len(here)))
        raise fmt.CheckpointError(path, f"the index's trainable variables do not match the model's (first "
                                        f"difference: saved {diff[0]}, model {diff[1]})")


def _assemble(slot: str, i: int, piece: zero.Piece, like: Any, old: list[list[zero.Piece]], read: dict,
              error: Any) -> np.ndarray:
    """The elements ``piece`` of variable ``i``'s ``slot``, put together from the old ranks' pieces."""
    lo, hi = piece
    if zero.size_of(like) != hi - lo:  # a slot of another shape (factored moments): whole variables only
        owner = next(q for q, pieces in enumerate(old) if pieces[i][1] > pieces[i][0])
        array = np.asarray(read[owner, i].get(slot))
        if array.shape != tuple(ops.shape(like)):
            raise error(f"slot {slot!r} of variable {i} has shape {array.shape}, expected {tuple(ops.shape(like))}")
        return array
    buffer: np.ndarray | None = None
    covered = 0
    for q, pieces in enumerate(old):
        a, b = pieces[i]
        start, end = max(a, lo), min(b, hi)
        if end <= start:
            continue
        array = read[q, i].get(slot)
        if array is None or np.size(array) != b - a:
            raise error(f"shard {q} lacks slot {slot!r} of variable {i} with {b - a} elements")
        flat = np.asarray(array).reshape(-1)
        if buffer is None:
            buffer = np.empty((hi - lo,), dtype=flat.dtype)
        buffer[start - lo:end - lo] = flat[start - a:end - a]
        covered += end - start
    if buffer is None or covered != hi - lo:
        raise error(f"the shards do not cover slot {slot!r} of variable {i}")
    return buffer.reshape(tuple(ops.shape(like)))


def load_sharded(directory: Any, custom_objects: dict | None = None) -> Any:
    """Load a checkpoint written by :func:`save_sharded` on this process's ranks (any number).

    Call it on every rank (no collective). Each rank reads its pieces of the optimizer state under
    the current layout (everything without a sharding strategy), from the files that hold them.

    Returns:
        The compiled model with its weights, its optimizer state (this rank's shard under
        ``shard_optimizer=True``) and its training progress: ``fit(..., initial_epoch=...)`` continues.

    Raises:
        FileNotFoundError: no index or a missing file.
        CheckpointError: a malformed index, a damaged file, or files that disagree with the index.
    """
    directory = os.fspath(directory)
    index = read_index(directory)
    model = model_io.load_model(os.path.join(directory, index["model_file"]), custom_objects=custom_objects)
    opt_state = _optimizer_state(directory, index, model, _trainer(model, "load_sharded"))
    training_state.restore(model, opt_state, index["training"])
    return model


def read_sharded_backup(model: Any, directory: Any) -> tuple[dict, dict, dict]:
    """``(model state, optimizer state, training document)`` of a checkpoint written by :func:`save_sharded`,
    for ``model`` (compiled, with a state: its architecture; it is not changed): this rank's pieces of the
    optimizer state under the current layout. What ``BackupAndRestore`` resumes from under a strategy
    that shards the optimizer state. Call it on every rank (no collective).

    Raises:
        FileNotFoundError: no index or a missing file.
        CheckpointError: a malformed index, a damaged file, or files that disagree with the index or the model.

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> import ember
        >>> ember.set_backend("numpy")
        >>> model = ember.Sequential([ember.Input((2,)), ember.layers.Dense(1)])
        >>> model.compile(optimizer="adam", loss="mse", seed=0)
        >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=2, verbose=0)
        >>> directory = os.path.join(tempfile.mkdtemp(), "backup")
        >>> save_sharded(model, directory)
        >>> weights, opt_state, progress = read_sharded_backup(model, directory)
        >>> progress["epoch"], int(ops.to_numpy(opt_state["iterations"]))
        (2, 2)
    """
    directory = os.fspath(directory)
    index = read_index(directory)
    trainer = _trainer(model, "BackupAndRestore")
    model_state, _, _ = model_io.read_training_checkpoint(model, os.path.join(directory, index["model_file"]))
    return model_state, _optimizer_state(directory, index, model, trainer), index["training"]


def _optimizer_state(directory: str, index: dict, model: Any, trainer: Any) -> dict:
    """This process's optimizer state (its pieces under the current layout, or the whole state without a
    sharding strategy) from the shard files of the checkpoint in ``directory``."""
    index_path = os.path.join(directory, INDEX)
    leaves, treedef, paths = _trainable(model, trainer)
    _check_variables(index, leaves, paths, index_path)
    slots = list(trainer.optimizer.slot_initializers())
    if slots != list(index["slots"]):
        raise fmt.CheckpointError(index_path, f"the saved optimizer slots {index['slots']} differ from the compiled "
                                              f"optimizer's {slots}")
    template = trainer.init_state(model.state)["optimizer"]  # this process's layout (sharded or full)
    sizes = [zero.size_of(leaf) for leaf in leaves]
    world = index["world_size"]
    old = [_pieces(index["layout"], [tuple(ops.shape(leaf)) for leaf in leaves], q, world) for q in range(world)]
    new = _step_pieces(trainer, leaves) if training_state.is_sharded(template) else [(0, n) for n in sizes]
    wanted = [i for i, (lo, hi) in enumerate(new) if hi > lo]
    needed: dict[int, list[int]] = {}
    for i in wanted:
        for q in range(world):
            if min(old[q][i][1], new[i][1]) > max(old[q][i][0], new[i][0]):
                needed.setdefault(q, []).append(i)
    scalar_keys = sorted(k for k in template if k not in slots and k != zero.SHARD_KEY)
    opt_state = {key: value for key, value in template.items() if key not in slots}
    read: dict[tuple[int, int], dict] = {}
    for q in sorted(set(needed) | {0}):
        with CheckpointReader(os.path.join(directory, index["shard_files"][q]), caller="load_sharded") as reader:
            shard = reader.document("optimizer_shard")
            expected = {_variable_key(i): [lo, hi] for i, (lo, hi) in enumerate(old[q]) if hi > lo}
            if (not isinstance(shard, dict) or shard.get("rank") != q or shard.get("world_size") != world
                    or shard.get("pieces") != expected):
                raise reader.error(f"is not shard {q} of {world} of this checkpoint (its pieces differ from the "
                                   "index's layout)")
            if q == 0:
                scalars = reader.arrays("optimizer/scalars")
                if sorted(scalars) != scalar_keys:
                    raise reader.error(f"holds the optimizer scalars {sorted(scalars)}, expected {scalar_keys}")
                for key, array in scalars.items():
                    opt_state[key] = ops.convert_to_tensor(np.asarray(array), dtype=ops.dtype(template[key]))
            for i in needed.get(q, []):
                read[q, i] = reader.arrays(f"optimizer/variables/{_variable_key(i)}")
    values = {slot: treedef.flatten_up_to(template[slot]) for slot in slots}
    def error(message: str) -> fmt.CheckpointError:
        return fmt.CheckpointError(index_path, message)

    for i in wanted:
        for slot in slots:
            like = values[slot][i]
            array = _assemble(slot, i, new[i], like, old, read, error)
            values[slot][i] = ops.convert_to_tensor(array, dtype=ops.dtype(like))
    for slot in slots:
        opt_state[slot] = treedef.unflatten(values[slot])
    return opt_state


def export_sharded(directory: Any, filepath: Any) -> None:
    """Write a sharded checkpoint as one file for ``ember.load_model`` (on one process).

    Raises:
        ValueError: called under a strategy with ``shard_optimizer=True`` on more than one process
            (a rank would hold only its shard: run it in one process).
    """
    strategy = distribute.get_strategy()
    if strategy is not None and strategy.shard_optimizer and strategy.world_size > 1:
        raise ValueError("export_sharded: run it in one process (without an ember.distribute strategy that shards "
                         "the optimizer): each rank would load only its shard of the optimizer state")
    model_io.save_model(load_sharded(directory), filepath)
