"""``run_layer_test``: the shared conformance check every layer's tests go through.

In the spirit of Keras's ``run_layer_test``: one call builds and runs a layer on every
installed backend and checks the properties DESIGN.md asks of every layer:

* ``build(input_shape, seed)`` returns ``{"params": ..., "buffers": ...}``; building
  twice with the same seed gives equal states, different seeds different ones (for
  layers with a random initializer);
* the same seed gives *identical* states on every backend (initializers are
  backend-independent), and the same outputs (float32 tolerance) on every backend;
* the eager output shape is ``compute_output_shape`` of the batch-less shape with the
  batch filled in, and the symbolic call (``layer(ember.Input(...))``) agrees;
* outputs match ``reference(params_float64, x_float64)``, an independent NumPy
  float64 implementation written in the test, and gradients match central finite
  differences of that reference;
* every trainable variable receives a finite, not-all-zero gradient (through
  ``value_and_grad``), the gradients agree across backends;
* ``get_config`` -> ``from_config`` -> ``get_config`` is a fixed point, also through
  ``json.dumps``/``loads``, and the rebuilt layer computes the same outputs;
* optree flatten/unflatten (namespace ``"ember"``) gives an equal config;
* the layer is immutable (setting or deleting a field raises ``AttributeError``) and
  holds no arrays;
* ``training=True`` runs and is reproducible for a fixed ``rng``; the input and the
  state passed to ``apply`` are never modified.

The helper loops over the backends itself (the comparisons are *between* backends),
so tests call it directly rather than through the ``backend`` fixture.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import optree

import ember
from ember import backends, dtypes, ops
from ember.autodiff import value_and_grad
from ember.layers import Layer
from ember.symbolic import SymbolicTensor, is_shape, shape_kwargs

# float32 tolerances (DESIGN.md): outputs against each other and against the float64 reference.
RTOL = 1e-5
ATOL = 1e-6
# Gradients are compared against central differences of the float64 reference and
# across backends: each entry is a float32 sum of products whose order differs between
# backends, and the loss (sum of squares) doubles the relative error of the output.
GRAD_RTOL = 1e-4
GRAD_ATOL = 1e-5
# Central differences are taken only when the parameters and inputs are this small.
_FD_MAX_ELEMENTS = 600
_FD_EPS = 1e-6


def _is_shape(value: Any) -> bool:
    return is_shape(value)


def _map_shapes(fn: Callable[[tuple], Any], shapes: Any) -> Any:
    """Apply ``fn`` to each shape in a shape or a list/dict of shapes."""
    return optree.tree_map(fn, shapes, is_leaf=_is_shape, none_is_leaf=False)


def _batchless(shape: tuple) -> tuple:
    return (None,) + tuple(shape[1:])


def _tree_to_numpy(tree: Any) -> Any:
    return optree.tree_map(lambda leaf: np.asarray(ops.to_numpy(leaf)), tree, none_is_leaf=False)


def _leaf_paths(tree: Any) -> list[str]:
    paths, _, _ = optree.tree_flatten_with_path(tree, none_is_leaf=False)
    return ["/".join(str(p) for p in path) or "<root>" for path in paths]


def _default_inputs(input_shape: Any, input_dtype: str, rng: np.random.Generator) -> Any:
    def make(shape: tuple) -> np.ndarray:
        if any(d is None for d in shape):
            raise ValueError(f"run_layer_test: input_shape must be concrete, received {shape}")
        np_dtype = dtypes.to_numpy_dtype(input_dtype)
        if np.issubdtype(np_dtype, np.floating):
            return rng.uniform(-1.0, 1.0, size=shape).astype(np_dtype)
        if np_dtype == np.bool_:
            return rng.random(size=shape) < 0.5
        return rng.integers(0, 5, size=shape).astype(np_dtype)

    return _map_shapes(make, input_shape)


def _to_native(x_np: Any) -> Any:
    return optree.tree_map(lambda a: ops.convert_to_tensor(np.array(a, copy=True)), x_np, none_is_leaf=False)


def _loss(outputs: Any) -> Any:
    total = None
    for leaf in optree.tree_leaves(outputs, none_is_leaf=False):
        term = ops.sum(ops.square(leaf))
        total = term if total is None else ops.add(total, term)
    return total


def _apply_loss(layer: Layer, buffers: Any, **call_kwargs: Any) -> Callable[[Any, Any], Any]:
    """``(params, inputs) -> _loss(layer.apply(...))``: what the gradient checks differentiate."""

    def loss(params: Any, inputs: Any) -> Any:
        return _loss(layer.apply({"params": params, "buffers": buffers}, inputs, **call_kwargs)[0])

    return loss


def _reference_loss(reference: Callable, params: Any, x: Any) -> float:
    out = reference(params, x)
    return float(sum(np.sum(np.square(np.asarray(leaf, dtype=np.float64)))
                     for leaf in optree.tree_leaves(out, none_is_leaf=False)))


def _finite_difference(reference: Callable, params: Any, x: Any, wrt_x: bool) -> tuple[Any, Any]:
    """Central-difference gradients of ``sum(reference(params, x) ** 2)`` in float64."""

    def grad_of(tree: Any, evaluate: Callable[[Any], float]) -> Any:
        leaves, spec = optree.tree_flatten(tree, none_is_leaf=False)
        grads = []
        for i, leaf in enumerate(leaves):
            g = np.zeros_like(leaf)
            for index in np.ndindex(leaf.shape):
                plus = [np.array(v, copy=True) for v in leaves]
                minus = [np.array(v, copy=True) for v in leaves]
                plus[i][index] += _FD_EPS
                minus[i][index] -= _FD_EPS
                g[index] = (evaluate(optree.tree_unflatten(spec, plus))
                            - evaluate(optree.tree_unflatten(spec, minus))) / (2 * _FD_EPS)
            grads.append(g)
        return optree.tree_unflatten(spec, grads)

    g_params = grad_of(params, lambda p: _reference_loss(reference, p, x))
    g_x = grad_of(x, lambda xx: _reference_loss(reference, params, xx)) if wrt_x else None
    return g_params, g_x


def _assert_trees_close(actual: Any, expected: Any, rtol: float, atol: float, what: str) -> None:
    a_leaves, a_spec = optree.tree_flatten(actual, none_is_leaf=False)
    e_leaves, e_spec = optree.tree_flatten(expected, none_is_leaf=False)
    assert a_spec == e_spec, f"{what}: structures differ: {a_spec} vs {e_spec}"
    for path, a, e in zip(_leaf_paths(actual), a_leaves, e_leaves):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, f"{what} [{path}]: shape {a.shape} != {e.shape}"
        np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol,
                                   err_msg=f"{what} [{path}]")


def _assert_trees_equal(actual: Any, expected: Any, what: str) -> None:
    a_leaves, a_spec = optree.tree_flatten(actual, none_is_leaf=False)
    e_leaves, e_spec = optree.tree_flatten(expected, none_is_leaf=False)
    assert a_spec == e_spec, f"{what}: structures differ: {a_spec} vs {e_spec}"
    for path, a, e in zip(_leaf_paths(actual), a_leaves, e_leaves):
        assert np.asarray(a).dtype == np.asarray(e).dtype, f"{what} [{path}]: dtype {a.dtype} != {e.dtype}"
        np.testing.assert_array_equal(np.asarray(a), np.asarray(e), err_msg=f"{what} [{path}]")


def _trees_equal(a: Any, b: Any) -> bool:
    a_leaves, a_spec = optree.tree_flatten(a, none_is_leaf=False)
    b_leaves, b_spec = optree.tree_flatten(b, none_is_leaf=False)
    return a_spec == b_spec and all(np.array_equal(x, y) for x, y in zip(a_leaves, b_leaves))


def _json_round_trip(config: dict) -> dict:
    return json.loads(json.dumps(config))


def _check_config(layer: Layer) -> Layer:
    """get_config -> from_config -> get_config fixed point, directly and through JSON."""
    config = layer.get_config()
    rebuilt = type(layer).from_config(config)
    assert type(rebuilt) is type(layer)
    assert _json_round_trip(rebuilt.get_config()) == _json_round_trip(config), (
        "from_config(get_config()) changed the config")
    through_json = _json_round_trip(config)
    rebuilt_json = type(layer).from_config(through_json)
    assert _json_round_trip(rebuilt_json.get_config()) == through_json, "config did not survive json.dumps/loads"
    assert rebuilt_json.name == layer.name
    return rebuilt_json


def _check_pytree(layer: Layer) -> None:
    leaves, spec = optree.tree_flatten(layer, namespace="ember")
    rebuilt = optree.tree_unflatten(spec, leaves)
    assert type(rebuilt) is type(layer)
    assert rebuilt.get_config() == layer.get_config(), "optree flatten/unflatten changed the config"
    _, spec_again = optree.tree_flatten(rebuilt, namespace="ember")
    assert spec_again == spec, "the rebuilt layer flattens to a different treespec"


def _check_immutable(layer: Layer) -> None:
    for field in dataclasses.fields(layer):
        current = getattr(layer, field.name)
        if field.name == "trainable":  # Keras's one switchable flag: a bool only
            try:
                layer.trainable = "yes"
            except TypeError:
                continue
            raise AssertionError(f"{type(layer).__name__}.trainable accepted a non-bool")
        try:
            setattr(layer, field.name, current)
        except AttributeError:
            pass
        else:
            raise AssertionError(f"setting {type(layer).__name__}.{field.name} did not raise AttributeError")
        try:
            delattr(layer, field.name)
        except AttributeError:
            pass
        else:
            raise AssertionError(f"deleting {type(layer).__name__}.{field.name} did not raise AttributeError")
        assert getattr(layer, field.name) is current
        assert not ops.is_array(current), f"layer field {field.name!r} holds an array; layers hold config only"
    try:
        layer.new_attribute = 1
    except AttributeError:
        pass
    else:
        raise AssertionError(f"adding an attribute to {type(layer).__name__} did not raise AttributeError")


def _symbolic_kwargs(call_kwargs: dict) -> dict:
    """``call_kwargs`` with each NumPy array as an ``ember.Input`` of its batch-less shape."""
    return optree.tree_map(
        lambda v: ember.Input(v.shape[1:], dtype=dtypes.standardize_dtype(v.dtype)) if isinstance(v, np.ndarray) else v,
        call_kwargs, none_is_leaf=False)


def _native_kwargs(call_kwargs: dict) -> dict:
    """``call_kwargs`` with each NumPy array converted to the active backend."""
    return optree.tree_map(lambda v: ops.convert_to_tensor(np.array(v, copy=True)) if isinstance(v, np.ndarray) else v,
                           call_kwargs, none_is_leaf=False)


def _check_symbolic(layer: Layer, input_shape: Any, input_dtype: str, expected: Any, call_kwargs: dict) -> None:
    inputs = _map_shapes(lambda s: ember.Input(tuple(s[1:]), dtype=input_dtype), input_shape)
    out = layer(inputs, **_symbolic_kwargs(call_kwargs))
    got = optree.tree_map(lambda t: t.shape, out, is_leaf=lambda v: isinstance(v, SymbolicTensor),
                          none_is_leaf=False)
    assert got == expected, f"symbolic output shape {got} != compute_output_shape {expected}"


def _fill_batch(shape: Any, batch: int | None) -> Any:
    return _map_shapes(lambda s: (batch if s and s[0] is None else s[0],) + tuple(s[1:]) if s else s, shape)


def _first_batch(input_shape: Any) -> int | None:
    leaves = optree.tree_leaves(input_shape, is_leaf=_is_shape, none_is_leaf=False)
    return leaves[0][0] if leaves and leaves[0] else None


def run_layer_test(
    layer_factory: Callable[[], Layer],
    input_shape: Any,
    *,
    backend_names: Iterable[str] | None = None,
    input_dtype: str = "float32",
    input_data: Any = None,
    reference: Callable[[Any, Any], Any] | None = None,
    expected_output_shape: Any = None,
    expected_output_dtype: str | None = "float32",
    expected_param_shapes: dict | None = None,
    supports_masking: bool = False,
    random_init: bool | None = None,
    check_gradients: bool = True,
    expect_zero_grad: Iterable[str] = (),
    training_changes_output: bool = False,
    seed: int = 0,
    call_kwargs: dict | None = None,
    rtol: float = RTOL,
    atol: float = ATOL,
) -> dict:
    """Run the common layer checks on every installed backend (see the module docstring).

    Args:
        layer_factory: makes the layer (called once per backend and for the checks).
        input_shape: concrete shape of the test input including the batch, or a
            list/dict of shapes for a layer called on several inputs.
        backend_names: backends to run on (default: every installed one).
        input_dtype: dtype of the generated input (floats in [-1, 1], ints in [0, 5)).
        input_data: NumPy input(s) to use instead of generated ones.
        reference: ``reference(params, x)`` with ``params`` the built params as
            float64 NumPy arrays and ``x`` the input in float64 (ints kept as ints):
            the expected output, written independently in NumPy.
        expected_output_shape: the eager output shape (default: derived from
            ``compute_output_shape``; given, it is checked against that too).
        expected_output_dtype: dtype of every output leaf (None skips the check).
        expected_param_shapes: ``{"kernel": (3, 4), ...}`` for the params' leaves.
        supports_masking: the layer's ``supports_masking`` flag.
        random_init: the layer's initial state depends on the seed (default: it has params).
        check_gradients: run the gradient checks.
        expect_zero_grad: ``"/"``-joined param paths whose gradient may be all zeros.
        training_changes_output: ``training=True`` must change the output (Dropout).
        seed: the build seed.
        call_kwargs: keyword arguments given to every ``apply`` (``use_causal_mask=True``,
            ``attention_mask=``): NumPy arrays among them become backend arrays, and
            ``ember.Input`` tensors in the symbolic call; the ``reference`` closes over them.
        rtol, atol: output tolerances.

    Returns:
        ``{"outputs": numpy outputs of the first backend, "state": its numpy state}``.
    """
    names = list(backend_names) if backend_names is not None else backends.available()
    assert names, "run_layer_test: no backend to run on"
    expect_zero_grad = set(expect_zero_grad)
    call_kwargs = dict(call_kwargs or {})
    data_rng = np.random.default_rng(1234)
    x_np = input_data if input_data is not None else _default_inputs(input_shape, input_dtype, data_rng)
    x_np = optree.tree_map(np.asarray, x_np, none_is_leaf=False)
    x_np_before = optree.tree_map(lambda a: np.array(a, copy=True), x_np, none_is_leaf=False)
    real_shape = _map_shapes(tuple, optree.tree_map(lambda a: a.shape, x_np, none_is_leaf=False))
    symbolic_shape = _map_shapes(_batchless, real_shape)
    x_is_float = all(np.issubdtype(a.dtype, np.floating) for a in optree.tree_leaves(x_np))

    first: dict | None = None
    for name in names:
        with ember.using_backend(name):
            where = f"[{name}]"
            layer = layer_factory()
            assert isinstance(layer, Layer)
            repr(layer)
            assert layer.supports_masking == supports_masking, f"{where} supports_masking is {layer.supports_masking}"
            _check_immutable(layer)
            _check_pytree(layer)
            rebuilt = _check_config(layer)

            # --- shapes -------------------------------------------------------------------
            out_shape_symbolic = layer.compute_output_shape(
                symbolic_shape, **shape_kwargs(layer, _symbolic_kwargs(call_kwargs)))
            expected_shape = _fill_batch(out_shape_symbolic, _first_batch(real_shape))
            if expected_output_shape is not None:
                assert _map_shapes(tuple, expected_output_shape) == expected_shape, (
                    f"{where} compute_output_shape gives {expected_shape}, expected {expected_output_shape}")
            _check_symbolic(layer_factory(), real_shape, input_dtype, out_shape_symbolic, call_kwargs)

            # --- build --------------------------------------------------------------------
            state = layer.build(symbolic_shape, seed=seed)
            assert isinstance(state, dict) and set(state) == {"params", "buffers"}, f"{where} bad state {state!r}"
            state_np = _tree_to_numpy(state)
            for leaf in optree.tree_leaves(state["params"]):
                assert ops.dtype(leaf) == layer.variable_dtype, f"{where} param dtype {ops.dtype(leaf)}"
            if expected_param_shapes is not None:
                got = {p: tuple(a.shape) for p, a in zip(_leaf_paths(state_np["params"]),
                                                         optree.tree_leaves(state_np["params"]))}
                assert got == {k: tuple(v) for k, v in expected_param_shapes.items()}, f"{where} param shapes {got}"
            _assert_trees_equal(_tree_to_numpy(layer.build(symbolic_shape, seed=seed)), state_np,
                                f"{where} building twice with seed {seed}")
            has_params = bool(optree.tree_leaves(state["params"]))
            if random_init if random_init is not None else has_params:
                other = _tree_to_numpy(layer.build(symbolic_shape, seed=seed + 1))
                assert not _trees_equal(other, state_np), f"{where} seeds {seed} and {seed + 1} gave the same state"

            # --- forward --------------------------------------------------------------------
            x = _to_native(x_np)
            kw = _native_kwargs(call_kwargs)
            out, new_state = layer.apply(state, x, **kw)
            out_np = _tree_to_numpy(out)
            got_shape = _map_shapes(tuple, optree.tree_map(lambda a: a.shape, out_np, none_is_leaf=False))
            assert got_shape == expected_shape, (
                f"{where} output shape {got_shape} != compute_output_shape {expected_shape}")
            if expected_output_dtype is not None:
                for leaf in optree.tree_leaves(out, none_is_leaf=False):
                    assert ops.dtype(leaf) == expected_output_dtype, f"{where} output dtype {ops.dtype(leaf)}"
            _assert_trees_equal(_tree_to_numpy(new_state), state_np, f"{where} state returned by apply")
            _assert_trees_equal(_tree_to_numpy(state), state_np, f"{where} state after apply")
            _assert_trees_equal(_tree_to_numpy(x), x_np_before, f"{where} input after apply")
            _assert_trees_equal(x_np, x_np_before, f"{where} NumPy input after apply")

            again, _ = rebuilt.apply(state, x, **kw)
            _assert_trees_equal(_tree_to_numpy(again), out_np, f"{where} layer rebuilt from its config")

            if reference is not None:
                params64 = optree.tree_map(lambda a: a.astype(np.float64), state_np["params"])
                x64 = optree.tree_map(lambda a: a.astype(np.float64) if np.issubdtype(a.dtype, np.floating) else a,
                                      x_np_before, none_is_leaf=False)
                expected = reference(params64, x64)
                _assert_trees_close(out_np, optree.tree_map(np.asarray, expected), rtol, atol,
                                    f"{where} output vs the float64 reference")

            # --- training path ------------------------------------------------------------------
            train_out, _ = layer.apply(state, x, training=True, rng=seed + 7, **kw)
            train_np = _tree_to_numpy(train_out)
            train_again, _ = layer.apply(state, x, training=True, rng=seed + 7, **kw)
            _assert_trees_equal(_tree_to_numpy(train_again), train_np, f"{where} training=True with a fixed rng")
            assert _map_shapes(tuple, optree.tree_map(lambda a: a.shape, train_np)) == expected_shape
            if training_changes_output:
                assert not _trees_equal(train_np, out_np), f"{where} training=True did not change the output"
            _assert_trees_equal(_tree_to_numpy(x), x_np_before, f"{where} input after training=True")

            # --- masking ------------------------------------------------------------------------
            leaves = optree.tree_leaves(x, none_is_leaf=False)
            if supports_masking and len({ops.ndim(a) for a in leaves}) == 1:
                # Keras's convention: a mask drops the feature axis, e.g. (batch, time).
                masks = [ops.convert_to_tensor(np.ones(tuple(ops.shape(a))[:-1], dtype=bool)) for a in leaves]
                mask = masks[0] if len(masks) == 1 and not isinstance(x, (list, tuple)) else masks
                assert layer.compute_mask(x, mask) is not None, f"{where} compute_mask dropped a mask"

            # --- gradients ----------------------------------------------------------------------
            grads_np = grad_x_np = None
            if check_gradients and (has_params or x_is_float):
                argnums = (0, 1) if x_is_float else (0,)
                loss = _apply_loss(layer, state["buffers"], **kw)
                value, grads = value_and_grad(loss, argnums=argnums)(state["params"], x)
                np.testing.assert_allclose(float(ops.to_numpy(value)),
                                           float(sum(np.sum(np.square(a.astype(np.float64)))
                                                     for a in optree.tree_leaves(out_np))),
                                           rtol=rtol, err_msg=f"{where} loss value")
                # The training path under a tape sees the same randomness (e.g. the same
                # dropout mask for the same rng) as the plain call above.
                train_loss = _apply_loss(layer, state["buffers"], training=True, rng=seed + 7, **kw)
                train_value, _ = value_and_grad(train_loss)(state["params"], x)  # argnums=0: params only
                np.testing.assert_allclose(float(ops.to_numpy(train_value)),
                                           float(sum(np.sum(np.square(a.astype(np.float64)))
                                                     for a in optree.tree_leaves(train_np))),
                                           rtol=rtol, err_msg=f"{where} training=True loss under a tape")
                grads_np = _tree_to_numpy(grads[0])
                for path, g in zip(_leaf_paths(grads_np), optree.tree_leaves(grads_np)):
                    assert np.all(np.isfinite(g)), f"{where} gradient of {path} is not finite"
                    if path not in expect_zero_grad:
                        assert np.any(g != 0), f"{where} gradient of {path} is all zeros"
                assert optree.tree_structure(grads_np) == optree.tree_structure(state_np["params"])
                if x_is_float:
                    grad_x_np = _tree_to_numpy(grads[1])
                    for g in optree.tree_leaves(grad_x_np):
                        assert np.all(np.isfinite(g)), f"{where} input gradient is not finite"
                n_elements = sum(a.size for a in optree.tree_leaves(state_np["params"])) + (
                    sum(a.size for a in optree.tree_leaves(x_np)) if x_is_float else 0)
                if reference is not None and n_elements <= _FD_MAX_ELEMENTS and first is None:
                    fd_params, fd_x = _finite_difference(reference, params64, x64, x_is_float)
                    _assert_trees_close(grads_np, fd_params, GRAD_RTOL, GRAD_ATOL,
                                        f"{where} param gradient vs finite differences of the reference")
                    if x_is_float:
                        _assert_trees_close(grad_x_np, fd_x, GRAD_RTOL, GRAD_ATOL,
                                            f"{where} input gradient vs finite differences of the reference")

            # --- across backends ------------------------------------------------------------------
            if first is None:
                first = {"backend": name, "state": state_np, "outputs": out_np, "grads": grads_np,
                         "grad_x": grad_x_np}
            else:
                versus = f"{where} vs [{first['backend']}]"
                _assert_trees_equal(state_np, first["state"], f"{versus} state built with seed {seed}")
                _assert_trees_close(out_np, first["outputs"], rtol, atol, f"{versus} outputs")
                if grads_np is not None and first["grads"] is not None:
                    _assert_trees_close(grads_np, first["grads"], GRAD_RTOL, GRAD_ATOL, f"{versus} gradients")
                if grad_x_np is not None and first["grad_x"] is not None:
                    _assert_trees_close(grad_x_np, first["grad_x"], GRAD_RTOL, GRAD_ATOL, f"{versus} input gradients")
    return {"outputs": first["outputs"], "state": first["state"]}
