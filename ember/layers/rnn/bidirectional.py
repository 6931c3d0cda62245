"""``Bidirectional``: run a recurrent layer forwards and backwards and merge the two."""

from __future__ import annotations

from typing import Any, Protocol, TypeGuard

from ember import ops
from ember.layers.layer import DeclarativeLayer, Layer
from ember.layers.rnn.rnn import first_mask, sequence_shape, state_shapes
from ember.seeds import sub_seed

MERGE_MODES = ("concat", "sum", "mul", "ave", None)


def _removeprefix(name: str, prefix: str) -> str:
    return name[len(prefix):] if name.startswith(prefix) else name


class RecurrentLayer(Protocol):
    """What Bidirectional uses of the layer it wraps: a Layer with Keras's recurrent flags."""

    @property
    def name(self) -> str: ...
    @property
    def go_backwards(self) -> bool: ...
    @property
    def return_sequences(self) -> bool: ...
    @property
    def return_state(self) -> bool: ...
    def replace(self, **changes: Any) -> Any: ...


def _is_recurrent(layer: Any) -> TypeGuard[RecurrentLayer]:
    return isinstance(layer, Layer) and all(
        hasattr(layer, a) for a in ("go_backwards", "return_sequences", "return_state"))


class Bidirectional(DeclarativeLayer):
    """Bidirectional wrapper for recurrent layers (``LSTM``, ``GRU``, ``RNN(cell)``, ...).

    The forward layer is a copy of ``layer`` named ``forward_<name>``; the backward
    layer is ``backward_layer`` or a copy of ``layer`` named ``backward_<name>`` with
    ``go_backwards`` flipped. Backward sequence outputs are flipped back to forward
    time order before merging.

    Args:
        layer: a recurrent layer (has ``go_backwards``, ``return_sequences``,
            ``return_state``).
        merge_mode: ``"concat"`` (default), ``"sum"``, ``"mul"``, ``"ave"`` or None (a
            list ``[forward, backward]``).
        backward_layer: optional recurrent layer for the backward direction; it must
            have the same ``return_sequences``/``return_state`` as ``layer`` and the
            opposite ``go_backwards``.

    With ``return_state`` the outputs are ``[merged, *forward_states,
    *backward_states]`` (``[forward, backward, *states...]`` for merge_mode None);
    ``initial_state`` takes the forward states followed by the backward ones.

    State: ``{"params": {"forward_<name>": ..., "backward_<name>": ...}}``, each the
    wrapped layer's own state. Sequence outputs of masked steps are zeros
    (``zero_output_for_mask``), as in Keras.

    Example:
        >>> import ember
        >>> from ember import layers, ops
        >>> ember.set_backend("numpy")
        >>> bi = layers.Bidirectional(layers.LSTM(4, return_sequences=True, name="lstm"))
        >>> state = bi.build((None, 5, 3), seed=0)
        >>> sorted(state["params"])
        ['backward_lstm', 'forward_lstm']
        >>> ops.shape(bi.apply(state, ops.ones((2, 5, 3)))[0])
        (2, 5, 8)
    """

    layer: Any
    merge_mode: str | None = "concat"
    backward_layer: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.merge_mode not in MERGE_MODES:
            raise ValueError(f"{self.name}: merge_mode must be one of {list(MERGE_MODES)}, "
                             f"received {self.merge_mode!r}")
        layer = self._checked(self.layer, "layer")
        base = _removeprefix(layer.name, "forward_")
        forward = self._with_mask_zeros(layer.replace(name="forward_" + base))
        if self.backward_layer is None:
            backward = layer.replace(name="backward_" + _removeprefix(base, "backward_"),
                                     go_backwards=not layer.go_backwards)
        else:
            backward = self._checked(self.backward_layer, "backward_layer")
            for flag in ("return_sequences", "return_state"):
                if getattr(backward, flag) != getattr(layer, flag):
                    raise ValueError(f"{self.name}: layer and backward_layer must have the same {flag}, received "
                                     f"{getattr(layer, flag)} and {getattr(backward, flag)}")
            if backward.go_backwards == layer.go_backwards:
                raise ValueError(f"{self.name}: backward_layer must have the opposite go_backwards of layer "
                                 f"(both are {layer.go_backwards})")
        backward = self._with_mask_zeros(backward)
        if backward.name == forward.name:
            raise ValueError(f"{self.name}: the forward and backward layers need different names, both are "
                             f"{forward.name!r}")
        self._normalize("layer", forward)
        self._normalize("backward_layer", backward)

    def _checked(self, layer: Any, argument: str) -> RecurrentLayer:
        if not _is_recurrent(layer):
            raise TypeError(f"{self.name}: {argument} must be a recurrent layer (LSTM, GRU, RNN, ...), "
                            f"received {layer!r}")
        if getattr(layer, "stateful", False):
            raise NotImplementedError(f"{self.name}: Bidirectional of a stateful=True layer is not supported; "
                                      f"carry the states of the two directions yourself (return_state=True and "
                                      f"initial_state=), or use a stateful one-directional layer")
        return layer

    @staticmethod
    def _with_mask_zeros(layer: RecurrentLayer) -> RecurrentLayer:
        """Keras: sequence outputs of masked steps are zeros (so the two directions line up)."""
        if hasattr(layer, "zero_output_for_mask") and layer.zero_output_for_mask != layer.return_sequences:
            return layer.replace(zero_output_for_mask=layer.return_sequences)
        return layer

    # --- properties -------------------------------------------------------------------------
    @property
    def forward_layer(self) -> Layer:
        return self.layer

    @property
    def return_sequences(self) -> bool:
        return self.layer.return_sequences

    @property
    def return_state(self) -> bool:
        return self.layer.return_state

    @property
    def supports_masking(self) -> bool:  # type: ignore[override]  # per instance; a class flag in Layer
        return self.layer.return_sequences

    def _time_axis(self) -> int:
        return 0 if getattr(self.layer, "time_major", False) else 1

    def _state_counts(self) -> tuple[int, int]:
        return len(self.layer.state_sizes), len(self.backward_layer.state_sizes)

    # --- shapes ---------------------------------------------------------------------------------
    def _split_states(self, states: Any) -> tuple[Any, Any]:
        if states is None:
            return None, None
        states = list(states)
        n_forward, n_backward = self._state_counts()
        if len(states) != n_forward + n_backward:
            raise ValueError(f"layer {self.name!r}: initial_state must hold {n_forward} forward then {n_backward} "
                             f"backward state(s), received {len(states)}")
        return states[:n_forward], states[n_forward:]

    def _merge_shapes(self, forward: tuple, backward: tuple) -> Any:
        if self.merge_mode == "concat":
            last = None if forward[-1] is None or backward[-1] is None else forward[-1] + backward[-1]
            return tuple(forward[:-1]) + (last,)
        if self.merge_mode is None:
            return [forward, backward]
        if forward != backward:
            raise ValueError(f"layer {self.name!r}: merge_mode {self.merge_mode!r} needs equal forward and backward "
                             f"output shapes, received {forward} and {backward}")
        return forward

    def compute_output_shape(self, input_shape: Any, initial_state: Any = None) -> Any:
        sequence = sequence_shape(self, input_shape)
        forward_states, backward_states = self._split_states(state_shapes(self, initial_state))
        forward = self.layer.compute_output_shape(sequence, initial_state=forward_states)
        backward = self.backward_layer.compute_output_shape(sequence, initial_state=backward_states)
        if not self.return_state:
            return self._merge_shapes(forward, backward)
        merged = self._merge_shapes(forward[0], backward[0])
        outputs = merged if self.merge_mode is None else [merged]
        return outputs + list(forward[1:]) + list(backward[1:])

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        mask = first_mask(mask)
        output = mask if self.return_sequences else None
        outputs = [output, output] if self.merge_mode is None else [output]
        if self.return_state:
            return outputs + [None] * sum(self._state_counts())
        return outputs if self.merge_mode is None else output

    def output_dtype(self, input_dtype: str) -> str:
        return self.layer.output_dtype(input_dtype) if hasattr(self.layer, "output_dtype") else input_dtype

    def build(self, input_shape: Any, seed: int | None = None) -> dict:
        sequence = sequence_shape(self, input_shape)
        self.compute_output_shape(sequence)
        params, buffers = {}, {}
        for layer in (self.layer, self.backward_layer):
            child = layer.build(sequence, sub_seed(seed, layer.name))
            params[layer.name] = child["params"]
            if child["buffers"]:
                buffers[layer.name] = child["buffers"]
        return self.make_state(params=params, buffers=buffers)

    def regularization_losses(self, params: dict) -> list:
        """Both directions' weight penalties (each from its own params); none when frozen."""
        if not self.trainable:
            return []
        return [loss for layer in (self.layer, self.backward_layer) if layer.name in params
                for loss in layer.regularization_losses(params[layer.name])]

    def constraints(self) -> dict:
        """Both directions' weight constraints, under their layer names (as their params are)."""
        if not self.trainable:
            return {}
        found = {layer.name: layer.constraints() for layer in (self.layer, self.backward_layer)}
        return {name: inner for name, inner in found.items() if inner}

    # --- computation -----------------------------------------------------------------------------
    def apply(self, state: dict, inputs: Any, *, training: bool = False, rng: Any = None,
              initial_state: Any = None, mask: Any = None, timespans: Any = None) -> tuple[Any, dict]:
        sequences, mask = inputs, first_mask(mask)
        if initial_state is not None and (ops.is_array(initial_state) or not isinstance(initial_state, (list, tuple))):
            raise TypeError(f"layer {self.name!r}: initial_state must be a list (forward states, then backward)")
        halves = self._split_states(initial_state)
        results = []
        new_buffers = {}
        for layer, states in zip((self.layer, self.backward_layer), halves):
            kwargs = {}
            for key, value in (("initial_state", states), ("mask", mask), ("timespans", timespans)):
                if value is not None:
                    kwargs[key] = value
            child = {"params": state["params"].get(layer.name, {}), "buffers": state["buffers"].get(layer.name, {})}
            out, child = layer.apply(child, sequences, training=training,
                                     rng=sub_seed(rng, layer.name), **kwargs)
            if child["buffers"]:
                new_buffers[layer.name] = child["buffers"]
            results.append(out)
        forward, backward = results
        if self.return_state:
            forward, forward_states = forward[0], list(forward[1:])
            backward, backward_states = backward[0], list(backward[1:])
        if self.return_sequences:
            backward = ops.flip(backward, axis=self._time_axis())
        if self.merge_mode == "concat":
            merged = [ops.concatenate([forward, backward], axis=-1)]
        elif self.merge_mode == "sum":
            merged = [ops.add(forward, backward)]
        elif self.merge_mode == "mul":
            merged = [ops.multiply(forward, backward)]
        elif self.merge_mode == "ave":
            merged = [ops.multiply(ops.add(forward, backward), 0.5)]
        else:
            merged = [forward, backward]
        if self.return_state:
            outputs = merged + forward_states + backward_states
        else:
            outputs = merged[0] if self.merge_mode is not None else merged
        new_state = {"params": state["params"], "buffers": {**state["buffers"], **new_buffers}}
        return outputs, new_state

