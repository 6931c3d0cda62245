"""The training step's view of an optimizer whose state is sharded over the ranks (ZeRO-1/2).

Under ``ember.distribute.initialize(shard_optimizer=True)`` the trainer builds the steps of
``fit`` with :func:`sharded_core`: a copy of its ``StepCore`` whose optimizer is a
:class:`ShardedOptimizer` around the compiled one (inside a ``LossScaleOptimizer``, which keeps
deciding on the full gradients). Per step, on every rank:

1. the gradients are summed over the ranks (``StepSync``: one all-reduce per dtype, as without
   sharding; the engines have no reduce-scatter on every backend, so the sum is all-reduced and
   each rank reads its slice: the *all-reduce then slice* form of ZeRO-2's reduce-scatter);
2. the wrapped optimizer updates this rank's pieces only: its slices of the variables for the
   element-wise optimizers (:data:`ELEMENTWISE`, ``1/N`` of the elements to one element), its whole
   variables for the others (``1/N`` to within one variable; :mod:`ember.distribute.zero`). The
   variables it does not own get ``None`` gradients, which every Ember optimizer skips;
3. the updated pieces are all-gathered (:func:`ember.distribute.zero.gather_owned`).

The optimizer state keeps the unsharded structure: each slot holds, per variable, this rank's
piece (the slot itself for a whole variable, a 1-d slice for a part, a zero-size placeholder for
none), and the key ``"zero_shard"`` holds ``[rank, world_size]``.

Example:
    >>> import ember
    >>> from ember import ops, optimizers
    >>> from ember.training.zero_optimizer import ShardedOptimizer
    >>> ember.set_backend("numpy")
    >>> params = {"a": ops.ones((3,)), "b": ops.ones((5,))}
    >>> opt = ShardedOptimizer(optimizers.Adam(0.1), rank=1, world_size=2, all_sum=lambda x: x)
    >>> state = opt.init(params)
    >>> [tuple(ops.shape(v)) for v in (state["momentum"]["a"], state["momentum"]["b"])]
    [(0,), (4,)]
    >>> ops.to_numpy(state["zero_shard"]).tolist()
    [1, 2]
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import optree

from ember import ops
from ember.distribute import zero
from ember.training.optimizers.adam import Adam, Adamax, Nadam
from ember.training.optimizers.adaptive import Adadelta, Adagrad, RMSprop
from ember.training.optimizers.base import Optimizer
from ember.training.optimizers.lion import Lion
from ember.training.optimizers.loss_scale import LossScaleOptimizer
from ember.training.optimizers.sgd import SGD

SHARD_KEY = zero.SHARD_KEY
# Optimizers whose update_variable is element-wise (a slice of a variable updates as the slice of its
# update): by the function itself, so a subclass that overrides it is sharded by whole variables.
ELEMENTWISE = frozenset(cls.update_variable for cls in (SGD, Adam, Adamax, Nadam, RMSprop, Adagrad, Adadelta, Lion))


class ShardedOptimizer(Optimizer):
    """``inner`` updating only this rank's pieces, then gathering every variable (module docstring).

    Args:
        inner: the optimizer whose math runs (any Ember optimizer but a ``LossScaleOptimizer``).
        rank: this process's rank.
        world_size: the number of ranks.
        all_sum: the strategy's sum of one native array over the ranks.
        rows: shard each variable's first axis as torch's FSDP2 does (``fully_shard=True``;
            :func:`ember.distribute.zero.row_pieces`) instead of the flat elements or whole variables.

    Raises:
        TypeError: ``inner`` is not an Ember optimizer, or is a ``LossScaleOptimizer``.
        NotImplementedError: ``inner`` clips by the global norm (it needs every gradient), or ``rows``
            with an optimizer whose update is not element-wise.
    """

    default_name = "sharded_optimizer"
    writes_given_arrays = False  # the update returns the gathered variables in new arrays

    def __init__(self, inner: Optimizer, rank: int, world_size: int, all_sum: Callable[..., Any],
                 rows: bool = False) -> None:
        if not isinstance(inner, Optimizer) or isinstance(inner, LossScaleOptimizer):
            raise TypeError(f"ShardedOptimizer: inner must be an ember optimizer (not a LossScaleOptimizer), "
                            f"received {inner!r}")
        if inner.global_clipnorm:
            raise NotImplementedError(
                f"ember.distribute(shard_optimizer=True): {type(inner).__name__}(global_clipnorm="
                f"{inner.global_clipnorm}) needs the norm of every gradient, but each rank updates its shard "
                "of the variables only; use clipnorm (per variable) or clipvalue, or shard_optimizer=False")
        super().__init__(name=inner.name)
        self.inner = inner  # after the base's __init__, whose learning rate must not reach the inner optimizer
        self.loss_scale_factor = inner.loss_scale_factor
        self.rank = int(rank)
        self.world_size = int(world_size)
        self.all_sum = all_sum
        # Slices of variables where the math is element-wise (clipnorm takes a whole variable's norm).
        self.split = type(inner).update_variable in ELEMENTWISE and not inner.clipnorm
        if rows and not self.split:
            raise NotImplementedError(
                f"ember.distribute(fully_shard=True): {type(inner).__name__}"
                f"{'(clipnorm=...)' if inner.clipnorm else ''} does not update element by element (it takes a "
                "whole variable's norm or factored moments), but each rank holds only its rows of each variable; "
                "use an element-wise optimizer (SGD, Adam, AdamW, Adamax, Nadam, RMSprop, Adagrad, Adadelta, Lion) "
                "without clipnorm, or shard_optimizer=True without fully_shard")
        self.rows = bool(rows)
        self._pieces: dict[tuple, list[zero.Piece]] = {}

    # --- the inner optimizer's settings -----------------------------------------------------------
    @property
    def learning_rate(self) -> Any:
        return self.inner.learning_rate

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        if "inner" not in self.__dict__:  # Optimizer.__init__ sets the base's own
            self._learning_rate = value
            return
        self.inner.learning_rate = value

    @property
    def has_schedule(self) -> bool:
        return self.inner.has_schedule

    def learning_rate_at(self, iterations: Any, opt_state: dict | None = None) -> Any:
        return self.inner.learning_rate_at(iterations, opt_state)

    def set_learning_rate(self, opt_state: dict, value: float) -> dict:
        return self.inner.set_learning_rate(opt_state, value)

    def slot_initializers(self) -> dict[str, float]:
        return self.inner.slot_initializers()

    def shared_initializers(self) -> dict[str, float]:
        return self.inner.shared_initializers()

    def scale_loss(self, loss: Any) -> Any:
        return self.inner.scale_loss(loss)

    def get_config(self) -> dict:
        return self.inner.get_config()

    def __repr__(self) -> str:
        return f"ShardedOptimizer({self.inner!r}, rank={self.rank}, world_size={self.world_size})"

    # --- sharding ------------------------------------------------------------------------------------
    def pieces(self, leaves: list) -> list[zero.Piece]:
        """This rank's ``(lo, hi)`` of each flat trainable variable (cached by shapes)."""
        key = tuple(tuple(ops.shape(leaf)) for leaf in leaves)
        pieces = self._pieces.get(key)
        if pieces is None:
            if self.rows:
                pieces = zero.row_pieces(key, self.rank, self.world_size)
            else:
                layout = zero.element_pieces if self.split else zero.variable_pieces
                pieces = layout([zero.size_of(leaf) for leaf in leaves], self.rank, self.world_size)
            self._pieces[key] = pieces
        return pieces

    @property
    def layout(self) -> str:
        """The layout's name in a sharded checkpoint's index: ``"rows"``, ``"elements"`` or ``"variables"``."""
        return "rows" if self.rows else "elements" if self.split else "variables"

    def _marker(self, like: Any) -> Any:
        return ops.convert_to_tensor([self.rank, self.world_size], dtype=ops.dtype(like))

    def init(self, params: Any) -> dict:
        """The inner optimizer's state for this rank's pieces (placeholders elsewhere), with the marker."""
        leaves, treedef = optree.tree_flatten(params)
        pieces = self.pieces(leaves)
        masked = [zero.piece_of(leaf, piece) for leaf, piece in zip(leaves, pieces)]
        state = dict(self.inner.init(treedef.unflatten(masked)))
        state[SHARD_KEY] = self._marker(state["iterations"])
        return state

    def adopt(self, opt_state: dict, params: Any) -> dict:
        """``opt_state`` in this rank's layout: a full (unsharded) state keeps only this rank's pieces;
        a state sharded for this rank and world size is returned as is.

        Raises:
            ValueError: the state is sharded for another rank or number of processes.
        """
        if SHARD_KEY in opt_state:
            marker = [int(v) for v in ops.to_numpy(opt_state[SHARD_KEY]).tolist()]
            if marker != [self.rank, self.world_size]:
                raise ValueError(
                    f"ember.distribute(shard_optimizer=True): the optimizer state is rank {marker[0]}'s shard of "
                    f"{marker[1]} processes, not rank {self.rank}'s of {self.world_size}; save it with "
                    "ember.saving.save_sharded and load it with ember.saving.load_sharded, which reshards")
            return opt_state
        leaves, treedef = optree.tree_flatten(params)
        pieces = self.pieces(leaves)
        new = dict(opt_state)
        for name in self.slot_initializers():
            if name in opt_state:
                values = treedef.flatten_up_to(opt_state[name])
                new[name] = treedef.unflatten([_cut(v, piece, leaf) for v, piece, leaf in zip(values, pieces, leaves)])
        new[SHARD_KEY] = self._marker(opt_state["iterations"])
        return new

    def apply_gradients(self, grads: Any, opt_state: Any = None, params: Any = None) -> Any:
        """The inner update of this rank's pieces, then every variable gathered from its pieces' owners."""
        if opt_state is None and params is None:
            raise TypeError("ShardedOptimizer.apply_gradients: give grads, opt_state and params (the trainer's form)")
        leaves, treedef = optree.tree_flatten(params)
        if not leaves:
            return params, opt_state
        grad_leaves = self._flatten_grads(treedef, grads)
        pieces = self.pieces(leaves)
        mine = [hi > lo for lo, hi in pieces]
        # Views of this step's arrays (the pure update writes none of them)
        sub_params = [zero.piece_of(leaf, piece, copy=False) if owned else leaf
                      for leaf, piece, owned in zip(leaves, pieces, mine)]
        sub_grads = [zero.piece_of(g, piece, copy=False) if owned and g is not None else None
                     for g, piece, owned in zip(grad_leaves, pieces, mine)]
        new_values, new_state = self.update_pieces(treedef, sub_grads, opt_state, sub_params)
        gathered = zero.gather_owned(self.all_sum, leaves, new_values, pieces)
        return treedef.unflatten(gathered), new_state

    def update_pieces(self, treedef: Any, grads: list, opt_state: dict, values: list,
                      in_place: bool = False) -> tuple[list, dict]:
        """``(new values, new state)``: the inner update of this rank's pieces, nothing gathered.

        ``values[i]`` is this rank's piece of variable ``i`` (any value where it owns none) and
        ``grads[i]`` its gradient, None where it owns none or the variable has no gradient. The values
        come back in new arrays; ``in_place``: through ``apply_gradients_inplace``, which writes
        ``values`` and ``opt_state``'s arrays where the backend has fused kernels (the caller owns them;
        use the returned values). The step counter and shared scalars move on every rank."""
        if any(g is not None for g in grads):
            update = self.inner.apply_gradients_inplace if in_place else self.inner.apply_gradients
            new, new_state = update(treedef.unflatten(grads), opt_state, treedef.unflatten(values))
            return treedef.flatten_up_to(new), new_state
        return list(values), self._count_step(opt_state)  # no piece of this rank has a gradient

    def apply_gradients_inplace(self, grads: Any, opt_state: dict, params: Any) -> tuple[Any, dict]:
        """:meth:`apply_gradients` (the sharded update has no fused in-place form)."""
        return self.apply_gradients(grads, opt_state, params)

    def _count_step(self, opt_state: dict) -> dict:
        iterations = opt_state["iterations"]
        step = ops.add(ops.cast(iterations, "float32"), 1.0)
        new = dict(opt_state)
        new["iterations"] = ops.add(iterations, 1)
        new.update(self.inner.update_shared({k: opt_state[k] for k in self.shared_initializers()}, step))
        return new


def _cut(slot: Any, piece: zero.Piece, param: Any) -> Any:
    """A full slot's part for ``piece`` of ``param`` (a slot of another shape, e.g. a factored moment,
    comes only whole or not at all: whole-variable layout)."""
    size = zero.size_of(param)
    if piece == (0, size) or size == 0:
        return slot
    return zero.piece_of(slot, piece)


def sharded(optimizer: Optimizer, strategy: Any, rows: bool = False) -> Optimizer:
    """``optimizer`` sharded over ``strategy``'s ranks (a ``LossScaleOptimizer`` around the sharded inner);
    ``rows``: in FSDP2's layout (:class:`ShardedOptimizer`)."""
    if isinstance(optimizer, LossScaleOptimizer):
        inner = ShardedOptimizer(optimizer.inner_optimizer, strategy.rank, strategy.world_size, strategy.all_sum,
                                 rows)
        return LossScaleOptimizer(inner, initial_scale=optimizer.initial_scale,
                                  dynamic_growth_steps=optimizer.dynamic_growth_steps, name=optimizer.name)
    return ShardedOptimizer(optimizer, strategy.rank, strategy.world_size, strategy.all_sum, rows)


def sharded_core(core: Any, strategy: Any, rows: bool = False) -> Any:
    """A copy of a ``StepCore`` whose optimizer is :func:`sharded` over ``strategy``'s ranks."""
    new = copy.copy(core)
    new.optimizer = sharded(core.optimizer, strategy, rows)
    return new


def shard_of(optimizer: Any) -> ShardedOptimizer | None:
    """The :class:`ShardedOptimizer` in ``optimizer`` (itself or a ``LossScaleOptimizer``'s inner), or None."""
    if isinstance(optimizer, LossScaleOptimizer):
        optimizer = optimizer.inner_optimizer
    return optimizer if isinstance(optimizer, ShardedOptimizer) else None


def opt_state_for(optimizer: Any, params: Any, opt_state: dict | None) -> dict:
    """The optimizer state a fit starts from: a fresh one, or ``opt_state`` in ``optimizer``'s layout.

    Raises:
        ValueError: ``opt_state`` is sharded but ``optimizer`` is not (or sharded another way).
    """
    if opt_state is None:
        return optimizer.init(params)
    shard = shard_of(optimizer)
    if shard is not None:
        return shard.adopt(opt_state, params)
    if SHARD_KEY in opt_state:
        raise ValueError("fit: the model's optimizer state is sharded over the processes of an ember.distribute "
                         "strategy with shard_optimizer=True, but this fit does not shard it the same way; save "
                         "it with ember.saving.save_sharded (on every rank) and load it with "
                         "ember.saving.load_sharded, which reshards for any number of processes")
    return opt_state
