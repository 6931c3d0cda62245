"""The torch tape engine: ``ember.GradientTape`` over torch's native autograd.

Nothing is recorded by Ember on this backend: torch's autograd already records
every op on a tensor that requires grad, so ``ember.ops`` calls and plain torch
code inside a tape are differentiated alike, and code outside a tape pays nothing.

* ``watch(x)`` makes ``x`` require grad. A floating or complex leaf that does not
  require grad yet has its flag flipped; the flip is remembered and undone when the
  tape is released (after a non-persistent tape's gradient), reset or garbage
  collected, so user tensors do not keep ``requires_grad=True``. A tensor that
  already requires grad (a parameter, or a non-leaf result) is used as it is.
  Several live tapes may watch the same tensor: the flag is restored when the last
  of them lets it go. Integer and boolean tensors cannot require grad and are left
  alone (the tape rejects them as sources).
* Entering a tape enables torch's grad mode (so a tape records even inside
  ``torch.no_grad()``); leaving it restores the previous mode.
* ``stop_recording()`` is ``torch.no_grad`` for its block. torch has one global grad
  mode, so it pauses every tape of this thread, not only the one it was called on.
* ``gradient`` is ``torch.autograd.grad`` over the targets that require grad, with the
  output gradients as ``grad_outputs`` (sums over targets), ``allow_unused=True`` (an
  unconnected source gives None) and ``create_graph`` when an outer tape records, so
  higher-order derivatives are native double backward. The graph is kept when the
  tape is persistent, when the gradient itself is differentiated, or while another
  tape is alive that may still differentiate through it (nested tapes).
* A target that does not require grad depends on no watched source: every gradient
  is None (zeros with ``unconnected_gradients="zero"``), as in TensorFlow.
* A target computed outside the tape's ``with`` block (before it began or after it
  ended) raises :class:`~ember.backends._common.UntrackedTargetError`, as on NumPy and
  MLX, although torch could differentiate it: the tape remembers the range of autograd
  sequence numbers (torch numbers every graph node it creates, per thread) of each
  recording span and checks the target's node against them (on CPU: on CUDA/MPS torch
  numbers the nodes a ``create_graph`` backward makes in its device threads separately,
  so there the check is skipped).
* ``watch_accessed_variables=False``: only what ``watch`` was given (and results computed
  from it) gets a gradient; a tensor that merely requires grad (a ``torch.nn.Parameter``)
  gets None, as an unwatched variable does in TensorFlow. With the default True such
  tensors are torch's variables and are differentiated.
* Augmented assignment (``loss += penalty``, ``h *= 2``) on a tensor that requires grad
  is recorded out of place while a tape records (Python rebinds the name to the result),
  as on NumPy and MLX: torch's own in-place update would otherwise break the backward of
  the op that made ``h`` (tanh, exp, sigmoid save their outputs) or refuse a watched
  leaf. ``torch.Tensor``'s in-place operators are re-bound only while a tape records, and
  the re-bound operator acts only in a thread whose own tape records, on a tensor that
  requires grad: other threads, code outside the tape and tensors that do not require grad
  keep torch's in-place behaviour.
* ``reset`` un-watches (restores the flags it flipped); results computed before it keep
  their autograd history, so unlike TensorFlow they can still be differentiated.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import torch

from ember.backends._common import UntrackedTargetError
from ember.recorded import calls

_PROBE = torch.zeros((), requires_grad=True)


def _sequence_now() -> int:
    """The autograd sequence number the next graph node of this thread will get (about)."""
    with torch.enable_grad():
        node = _PROBE.view_as(_PROBE).grad_fn
    assert node is not None  # a view of a tensor that requires grad, made with grad enabled
    return node._sequence_nr() + 1


# tensors whose requires_grad flag some live engine flipped: id -> [tensor, holders]
_flipped: dict[int, list] = {}
# engines that may still compute gradients (not yet released)
_live: weakref.WeakSet[TapeEngine] = weakref.WeakSet()


# --- augmented assignment while a tape records -------------------------------------------
_AUGMENTED = {"__iadd__": torch.Tensor.__add__, "__isub__": torch.Tensor.__sub__, "__imul__": torch.Tensor.__mul__,
              "__itruediv__": torch.Tensor.__truediv__, "__ipow__": torch.Tensor.__pow__}
_in_place: dict[str, Any] = {}  # torch's own in-place operators while they are re-bound
_own: set = set()  # those defined on torch.Tensor itself (the others are inherited from TensorBase)
_recording_depth = [0]  # tapes recording in any thread (torch's grad mode itself is per thread)
_depth_lock = threading.Lock()  # taken by a tape's begin/end only, never per op


class _ThreadRecording(threading.local):
    depth = 0  # this thread's tapes between begin() and end()


_this_thread = _ThreadRecording()


def _out_of_place(name: str, operator: Any) -> Any:
    def update(self: torch.Tensor, other: Any) -> Any:
        # Out of place only for this thread's tapes, and only on values in an autograd graph: another
        # thread (or this one outside its tapes) keeps torch's own in-place operator.
        if _this_thread.depth and self.requires_grad and torch.is_grad_enabled():
            return operator(self, other)
        return _in_place[name](self, other)

    update.__name__ = name
    return update


_REBOUND = {name: _out_of_place(name, operator) for name, operator in _AUGMENTED.items()}


def _enter_recording() -> None:
    with _depth_lock:
        _recording_depth[0] += 1
        if _recording_depth[0] == 1:
            for name, replacement in _REBOUND.items():
                if name in torch.Tensor.__dict__:
                    _own.add(name)
                _in_place[name] = getattr(torch.Tensor, name)
                setattr(torch.Tensor, name, replacement)
    _this_thread.depth += 1  # last (and first out in _leave_recording): an interrupt leaves torch's behaviour


def _leave_recording() -> None:
    _this_thread.depth -= 1
    with _depth_lock:
        _recording_depth[0] -= 1
        if _recording_depth[0] == 0:
            for name, original in list(_in_place.items()):
                if name in _own:
                    setattr(torch.Tensor, name, original)
                else:
                    delattr(torch.Tensor, name)
            _in_place.clear()
            _own.clear()


def _differentiable(t: torch.Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


class TapeEngine:
    """One per ``GradientTape`` on the torch backend (see the module docstring)."""

    records_ops = False  # torch's autograd records, between begin() and end()

    def __init__(self, persistent: bool):
        self.persistent = bool(persistent)
        self._mine: list[int] = []  # ids in _flipped that this engine holds
        self._modes: list[bool] = []  # grad modes to restore: begin/end and pause/resume
        self._released = False
        self._spans: list[list] = []  # [first, last] autograd sequence numbers of each recording span
        self._watched_ids: dict[int, torch.Tensor] = {}
        self.watch_accessed_variables = True
        self._rebinding = 0  # begin() calls not yet ended (in-place operators re-bound)
        _live.add(self)

    @property
    def graph(self) -> list:
        return []

    # --- recording state -------------------------------------------------------------
    def begin(self) -> None:
        self._modes.append(torch.is_grad_enabled())
        torch.set_grad_enabled(True)
        self._spans.append([_sequence_now(), None])
        self._released = False
        _live.add(self)
        _enter_recording()
        self._rebinding += 1

    def end(self) -> None:
        if self._rebinding:  # idempotent: the tape retries its cleanup after an interrupt
            self._rebinding -= 1
            _leave_recording()
        if self._spans and self._spans[-1][1] is None:
            self._spans[-1][1] = _sequence_now() - 1
        if self._modes:
            torch.set_grad_enabled(self._modes.pop())

    def pause(self) -> None:
        self._modes.append(torch.is_grad_enabled())
        torch.set_grad_enabled(False)

    def resume(self) -> None:
        if self._modes:
            torch.set_grad_enabled(self._modes.pop())

    # --- sources -----------------------------------------------------------------------
    def watch(self, native: Any) -> None:
        if not isinstance(native, torch.Tensor):
            raise TypeError(
                f"GradientTape.watch (torch backend): expected a torch.Tensor, received {type(native).__name__}"
            )
        if not _differentiable(native):
            return  # cannot require grad; rejected as a source by the tape
        key = id(native)
        self._watched_ids[key] = native
        entry = _flipped.get(key)
        if entry is not None and entry[0] is native:
            if key not in self._mine:
                entry[1] += 1
                self._mine.append(key)
            return
        if native.requires_grad:
            return
        native.requires_grad_(True)
        _flipped[key] = [native, 1]
        self._mine.append(key)
        self._released = False
        _live.add(self)

    def record(self, name: str, function: Any, args: tuple, kwargs: dict, out: Any) -> bool:
        return False  # torch's autograd records by itself

    # --- gradients -----------------------------------------------------------------------
    def gradient(
        self,
        targets: list,
        sources: list,
        output_gradients: list | None,
        keep: bool,
        create_graph: bool,
    ) -> list:
        outputs, seeds = [], []
        for i, target in enumerate(targets):
            if not isinstance(target, torch.Tensor):
                raise TypeError(
                    f"GradientTape.gradient (torch backend): target {i} is a {type(target).__name__}, "
                    "not a torch.Tensor"
                )
            if not target.requires_grad:
                continue  # depends on no watched source
            if not self._made_here(target):
                raise UntrackedTargetError(i, "torch")
            seed = None if output_gradients is None else output_gradients[i]
            if seed is None:
                seed = torch.ones_like(target)
            elif not isinstance(seed, torch.Tensor) or seed.dtype != target.dtype or seed.device != target.device:
                seed = torch.as_tensor(seed, dtype=target.dtype, device=target.device)
            if seed.shape != target.shape:
                raise ValueError(
                    f"GradientTape.gradient: output_gradients[{i}] has shape {tuple(seed.shape)} but its "
                    f"target has shape {tuple(target.shape)}"
                )
            outputs.append(target)
            seeds.append(seed)
        wanted = [k for k, s in enumerate(sources) if isinstance(s, torch.Tensor) and s.requires_grad]
        if not self.watch_accessed_variables:
            wanted = [k for k in wanted if self._from_watched(sources[k])]
        grads: list = [None] * len(sources)
        if not outputs or not wanted:
            return grads
        retain = keep or create_graph or any(e is not self and not e._released for e in list(_live))
        with torch.set_grad_enabled(create_graph):
            found = torch.autograd.grad(
                outputs,
                [sources[k] for k in wanted],
                grad_outputs=seeds,
                retain_graph=retain,
                create_graph=create_graph,
                allow_unused=True,
            )
        for k, g in zip(wanted, found):
            grads[k] = g
        return grads

    def batched_vjp(self, target: Any, sources: list, seeds: Any, create_graph: bool) -> list:
        """VJPs of ``target`` with every cotangent in ``seeds`` (leading axis) in one vmapped backward pass.

        ``torch.autograd.grad(..., is_grads_batched=True)`` runs the backward under
        ``torch.func.vmap``; an op without a batching rule makes torch fall back to a loop.
        """
        if not isinstance(target, torch.Tensor):
            raise TypeError(
                f"GradientTape.jacobian (torch backend): target is a {type(target).__name__}, not a torch.Tensor"
            )
        if not target.requires_grad:
            return [None] * len(sources)
        if not self._made_here(target):
            raise UntrackedTargetError(0, "torch")
        wanted = [k for k, s in enumerate(sources) if isinstance(s, torch.Tensor) and s.requires_grad]
        if not self.watch_accessed_variables:
            wanted = [k for k in wanted if self._from_watched(sources[k])]
        rows: list = [None] * len(sources)
        if not wanted:
            return rows
        if not isinstance(seeds, torch.Tensor) or seeds.dtype != target.dtype or seeds.device != target.device:
            seeds = torch.as_tensor(seeds, dtype=target.dtype, device=target.device)
        try:
            with torch.set_grad_enabled(create_graph):
                found = torch.autograd.grad([target], [sources[k] for k in wanted], grad_outputs=[seeds],
                                            retain_graph=True, create_graph=create_graph, allow_unused=True,
                                            is_grads_batched=True)
        except RuntimeError:
            return NotImplemented  # e.g. a custom autograd.Function torch cannot vmap: one VJP per seed
        for k, g in zip(wanted, found):
            rows[k] = g
        return rows

    def _made_here(self, target: torch.Tensor) -> bool:
        """Whether ``target``'s autograd node was created while this tape recorded.

        Checked on CPU only: on CUDA/MPS a gradient computed with ``create_graph`` makes its
        nodes in torch's device threads, whose sequence numbers are counted separately.
        """
        node = target.grad_fn
        if node is None or target.device.type != "cpu":
            return True
        number = node._sequence_nr()
        return any(first <= number and (last is None or number <= last) for first, last in self._spans)

    def _from_watched(self, source: torch.Tensor) -> bool:
        """Whether ``source`` was watched, or computed from a watched tensor (flag False only)."""
        watched = self._watched_ids.get(id(source))
        if watched is source:
            return True
        if source.grad_fn is None:
            return False
        return any(self.connected(source, w) for w in self._watched_ids.values())

    def connected(self, target: Any, source: Any) -> bool:
        """Whether ``target``'s autograd graph reaches ``source``."""
        if not (isinstance(target, torch.Tensor) and isinstance(source, torch.Tensor)):
            return False
        if target is source:
            return True
        if not (target.requires_grad and source.requires_grad):
            return False
        start = target.grad_fn
        if start is None:  # a leaf other than source
            return False
        if source.grad_fn is None:
            def hit(node: Any, nr: int) -> bool:  # source is a leaf: its node alone identifies it
                return getattr(node, "variable", None) is source
        else:
            wanted = (source.grad_fn, source.output_nr)

            def hit(node: Any, nr: int) -> bool:
                return node is wanted[0] and nr == wanted[1]

            if start is source.grad_fn and target.output_nr == source.output_nr:
                return True
        # next_functions hands out fresh Python wrappers of the C++ nodes: the ones visited are kept
        # alive here, or a freed wrapper's id could be reused by another node and prune the walk.
        seen: dict[int, Any] = {}
        stack = [start]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen[id(node)] = node
            for child, nr in node.next_functions:
                if child is None:
                    continue
                if hit(child, nr):
                    return True
                stack.append(child)
        return False

    # --- lifetime ------------------------------------------------------------------------
    def _restore_flags(self) -> None:
        mine, self._mine = self._mine, []
        for key in mine:
            entry = _flipped.get(key)
            if entry is None:
                continue
            entry[1] -= 1
            if entry[1] <= 0:
                del _flipped[key]
                tensor = entry[0]
                if tensor.is_leaf and tensor.requires_grad:
                    tensor.requires_grad_(False)

    def release(self) -> None:
        self._restore_flags()
        self._released = True
        _live.discard(self)

    def reset(self) -> None:
        self._restore_flags()
        self._watched_ids = {}

    def __del__(self) -> None:
        try:
            self._restore_flags()
        except Exception:  # interpreter shutdown
            pass


# ============================================================ custom gradients


class _CustomGradient(torch.autograd.Function):
    """``forward(*args) -> (outputs, grad_fn)`` as one autograd node whose backward is ``grad_fn``."""

    @staticmethod
    def forward(ctx: Any, forward: Any, backward: Any, kwargs: dict, *args: Any) -> Any:
        outputs, grad_fn = forward(*args, **kwargs)
        ctx.custom = (forward, backward, kwargs, grad_fn, args)
        positions = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
        ctx.positions = positions
        ctx.save_for_backward(*[args[i] for i in positions])
        return outputs

    @staticmethod
    def backward(ctx: Any, *upstream: Any) -> tuple:
        forward, backward, kwargs, grad_fn, args = ctx.custom
        if torch.is_grad_enabled():
            # The gradient is differentiated again (create_graph): recompute the forward from
            # the saved inputs, which carry their history, so grad_fn's values depend on them.
            call = list(args)
            for position, tensor in zip(ctx.positions, ctx.saved_tensors):
                call[position] = tensor
            _, grad_fn = forward(*call, **kwargs)
        grads = backward(grad_fn, upstream[0] if len(upstream) == 1 else tuple(upstream), len(args))
        out: list[torch.Tensor | None] = []
        for arg, g in zip(args, grads):
            if g is None or not isinstance(arg, torch.Tensor) or not _differentiable(arg):
                out.append(None)
            else:
                if not isinstance(g, torch.Tensor):
                    g = torch.as_tensor(g, dtype=arg.dtype, device=arg.device)
                out.append(g.to(arg.dtype) if g.dtype != arg.dtype else g)
        return (None, None, None, *out)


def call_custom_gradient(forward: Any, backward: Any, args: tuple, kwargs: dict) -> Any:
    """Run a custom-gradient function as one ``torch.autograd.Function`` node.

    ``forward(*args, **kwargs) -> (outputs, grad_fn)``; ``backward(grad_fn, upstream, n_args)``
    returns one gradient (or None) per positional argument.
    """
    if calls.is_recording():  # a recorded graph (record_graph=True) sees it as one op, as on NumPy and MLX
        return _recorded_custom_gradient(forward, backward, args, kwargs)
    return _custom_gradient(forward, backward, args, kwargs)


def _custom_gradient(forward: Any, backward: Any, args: tuple, kwargs: dict) -> Any:
    if not torch.is_grad_enabled() or not any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
        return forward(*args, **kwargs)[0]  # nothing to differentiate: skip the autograd node
    return _CustomGradient.apply(forward, backward, kwargs, *args)


def _recorded_custom_gradient(forward: Any, backward: Any, args: tuple, kwargs: dict) -> Any:
    """The call offered to this thread's recording engines as op ``custom_gradient`` (the ops inside
    ``forward`` are not recorded, as for any recorded op)."""
    def run(*arrays: Any) -> Any:
        return _custom_gradient(forward, backward, arrays, kwargs)

    return calls.recorder("custom_gradient", run, None, None)(*args)
