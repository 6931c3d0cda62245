"""The training state a full checkpoint carries, so that ``fit`` resumes exactly.

Besides the weights, ``model.save`` stores (by default) what the next training step
depends on:

* the optimizer state (``iterations``, the learning rate, every slot) under
  ``/training/optimizer``, loaded with the dtypes the optimizer uses on the loading
  backend (``iterations`` is int32 on MLX, int64 elsewhere);
* the ``training`` document: the base seed of the fit in progress (it fixes the shuffling
  of every epoch), the step RNG after the last completed step (it fixes dropout), the index
  of the epoch and the number of its steps already done (``step``: nonzero for a checkpoint
  saved mid-epoch, e.g. by ``ModelCheckpoint(save_freq=N)``), and how many ``fit`` calls the
  trainer has seeded (so later fits draw the same seeds as they would have without the
  interruption).

After ``ember.load_model(path)``, the next ``fit(..., initial_epoch=<saved epoch>)`` continues
the saved run: training 2 epochs, saving, loading and training 2 more gives the same weights
as 4 epochs in one ``fit``. A checkpoint saved mid-epoch resumes at the next batch of that
epoch (array data, whose seeded batch order repeats exactly; other data is refused with a
clear error). :class:`ember.callbacks.BackupAndRestore` uses the same state to
resume an interrupted ``fit`` by itself.

The trainer keeps this state on the model's training handle (``model._training``, an
``ember.training.handle.TrainingHandle``, read here by field name): ``trainer``, ``opt_state``,
``live_state`` (the running fit loop), ``last_fit`` (``{"seed", "rng", "epoch"}`` of the last
fit) and ``resume`` (set here, consumed by the next ``fit``).

Example:
    >>> import numpy as np
    >>> import ember
    >>> from ember import layers
    >>> from ember.saving import training_state
    >>> ember.set_backend("numpy")
    >>> model = ember.Sequential([ember.Input((2,)), layers.Dense(1)])
    >>> model.compile(optimizer="adam", loss="mse", seed=0)
    >>> _ = model.fit(np.ones((8, 2)), np.ones((8, 1)), epochs=2, verbose=0)
    >>> opt_state, document = training_state.capture(model)
    >>> int(opt_state["iterations"]), document["epoch"], document["fits"]
    (2, 2, 1)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import optree

from ember.distribute import zero
from ember.saving import _arrays


def _as_int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)

    host, _, _ = _arrays.to_host(value)
    return int(host)


def capture(model: Any) -> tuple[Any, dict | None]:
    """``(optimizer state or None, training document or None)`` of a compiled model.

    During ``fit`` (a callback saving) they come from the running loop; after it, from the
    state ``fit`` left on the model.
    """
    training = getattr(model, "_training", None)
    trainer = getattr(training, "trainer", None)
    if training is None or trainer is None:
        return None, None
    live = training.live_state
    resume = training.resume
    fits = int(getattr(trainer, "_fits", 0))
    if live is not None:
        opt_state = live.state["optimizer"]
        rng, seed, epoch = live.state["rng"], getattr(live, "seed", None), getattr(live, "epoch", None)
        step = getattr(live, "step_in_epoch", 0)
    elif resume is not None:  # loaded and saved again before any fit: keep what was loaded
        opt_state = training.opt_state
        rng, seed, epoch, step = resume["rng"], resume["seed"], resume["epoch"], resume.get("step", 0)
        fits += 1  # (restore counted the saved fit as the next one)
    else:
        opt_state = training.opt_state
        last = training.last_fit or {}
        rng, seed, epoch, step = last.get("rng"), last.get("seed"), last.get("epoch"), last.get("step", 0)
    document = {"fits": fits, "seed": _as_int(seed), "rng": _as_int(rng),
                "epoch": None if epoch is None else int(epoch), "step": int(step or 0)}
    return opt_state, document


def step_rng(steps: Any, value: int) -> Any:
    """The step RNG ``value`` in the form the backend's ``steps`` use (an int, or an MLX array).

    ``steps.rng(seed)`` maps a seed ``s`` to ``s % (2**31 - 2) + 1``, so ``value - 1`` gives back
    ``value`` for every state of the generator (``1 <= value <= 2**31 - 2``).
    """
    return steps.rng(int(value) - 1)


def optimizer_template(model: Any) -> dict:
    """A fresh optimizer state for the model's trainable params on the active backend."""
    trainer = model._training.trainer
    core = trainer.core
    core.prepare_mask(model.state["params"])
    trainable, _ = core.split(model.state["params"])
    return trainer.optimizer.init(trainable)


def is_sharded(opt_state: Any) -> bool:
    """Whether ``opt_state`` holds only this rank's shard of the slots (``ember.distribute``'s
    ``shard_optimizer=True``; :mod:`ember.distribute.zero`)."""
    return isinstance(opt_state, dict) and zero.SHARD_KEY in opt_state


def restore(model: Any, opt_state: Any, document: dict | None) -> None:
    """Give a compiled model (its state already loaded) a loaded optimizer state and resume record."""
    training = model._training
    trainer = training.trainer
    if opt_state is not None:
        core = trainer.core
        core.prepare_mask(model.state["params"])
        trainable, _ = core.split(model.state["params"])
        training.opt_state = opt_state
        training.opt_spec = optree.tree_structure(trainable)
    if document:
        fits = int(document.get("fits") or 0)
        if document.get("seed") is not None and document.get("rng") is not None:
            training.resume = {"seed": int(document["seed"]), "rng": int(document["rng"]),
                               "epoch": document.get("epoch"), "step": int(document.get("step") or 0)}
            fits = max(fits - 1, 0)  # the next fit continues the saved one: it is that fit, not a new one
        trainer._fits = fits
