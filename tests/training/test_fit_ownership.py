"""``fit`` adopts the arrays only the model handle holds (no copy at fit start), copies the others.

The reference is the memory itself: an adopted array's data lives at the same address as the
handle's array before ``fit``; a copied one does not, and the caller's array keeps its values.
"""

from __future__ import annotations

import collections
import weakref

import numpy as np
import optree
import pytest

import ember
from ember import layers, ops
from ember.training import ownership

X = np.random.default_rng(0).normal(size=(16, 4)).astype("float32")
Y = np.random.default_rng(1).integers(0, 3, 16)


def _model():
    model = ember.Sequential([ember.Input((4,)), layers.Dense(5, activation="relu", name="hidden"),
                              layers.Dense(3, name="logits")])
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.Adam(0.01),
                  loss=ember.losses.SparseCategoricalCrossentropy(from_logits=True), seed=0)
    return model


def _address(array) -> int:
    """The address of an array's data (torch: its storage's), from the array's own library."""
    if isinstance(array, np.ndarray):
        return array.__array_interface__["data"][0]
    return array.untyped_storage().data_ptr()


def _spy_on_own(monkeypatch, model) -> list:
    """Record, for every ``own`` call of the model's steps, ``{path: (address in, address out)}`` of the
    params and optimizer arrays (addresses only: the spy holds no array, so it shares none)."""
    steps = model._training.trainer.steps
    own = steps.own
    calls = []

    def spy(state, donated=frozenset()):
        before = _addresses(state)
        owned = own(state, donated)
        after = _addresses(owned)
        calls.append({path: (before[path], after[path]) for path in before})
        return owned

    monkeypatch.setattr(steps, "own", spy)
    return calls


def _addresses(state) -> dict:
    trees = {"params": state["model"]["params"], "optimizer": state["optimizer"]}
    paths, leaves, _ = optree.tree_flatten_with_path(trees)
    return {path: _address(leaf) for path, leaf in zip(paths, leaves)
            if ops.is_array(leaf) and int(np.prod(ops.shape(leaf))) > 1}


def _values(tree) -> list:
    return [np.array(ops.to_numpy(leaf)) for leaf in optree.tree_leaves(tree)]


@pytest.fixture(params=["numpy", "torch"])
def in_place_backend(request):
    """The backends whose fit updates arrays in place (MLX's arrays are immutable: nothing to adopt)."""
    ember.set_backend(request.param)
    return request.param


def test_fit_adopts_every_array_only_the_handle_holds(in_place_backend, monkeypatch):
    model = _model()
    calls = _spy_on_own(monkeypatch, model)
    model.fit(X, Y, batch_size=8, epochs=2, verbose=0)
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)  # the second fit: the optimizer state kept from the first
    assert len(calls) == 2
    for call in calls:
        assert call and all(before == after for before, after in call.values()), call


def test_fit_does_not_clone_on_torch(torch_backend, monkeypatch):
    from ember.backends.torch import training

    clones = []
    clone = training._clone
    monkeypatch.setattr(training, "_clone", lambda value: clones.append(1) or clone(value))
    model = _model()
    model.fit(X, Y, batch_size=8, epochs=2, verbose=0)
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    assert clones == []
    held = model.state
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    assert len(clones) == len(optree.tree_leaves(held["params"]))  # the held params, not the optimizer state


@pytest.mark.parametrize("hold", ["state", "params", "layer", "leaf", "view", "list", "build"])
def test_fit_copies_what_the_caller_holds_and_leaves_it_unchanged(backend, monkeypatch, hold):
    model = _model()
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    if hold == "build":
        kept = model.build(seed=0)  # the state build returns is the handle's
    else:
        kept = {"state": lambda s: s, "params": lambda s: s["params"], "layer": lambda s: s["params"]["hidden"],
                "leaf": lambda s: s["params"]["hidden"]["kernel"],
                "view": lambda s: s["params"]["hidden"]["kernel"][1:],
                "list": lambda s: [s["params"]["hidden"]["kernel"]]}[hold](model.state)
    expected = _values(kept)
    calls = _spy_on_own(monkeypatch, model) if backend != "mlx" else None
    model.fit(X, Y, batch_size=8, epochs=2, verbose=0)
    for got, want in zip(_values(kept), expected):
        np.testing.assert_array_equal(got, want)  # the caller's arrays kept their values
    if calls is not None:
        _assert_kernel_copied_slots_adopted(calls)


def test_fit_copies_an_array_the_caller_refers_to_weakly(in_place_backend, monkeypatch):
    model = _model()
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    kept = weakref.ref(model.state["params"]["hidden"]["kernel"])
    calls = _spy_on_own(monkeypatch, model)
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    _assert_kernel_copied_slots_adopted(calls)
    del kept


def _assert_kernel_copied_slots_adopted(calls: list) -> None:
    (call,) = calls
    kernel = [v for p, v in call.items() if p[:3] == ("params", "hidden", "kernel")][0]
    assert kernel[0] != kernel[1]  # the held kernel was copied
    slots = [v for p, v in call.items() if p[0] == "optimizer"]
    assert slots and all(before == after for before, after in slots)  # the optimizer state nobody holds: adopted


def test_trained_weights_are_the_same_whether_adopted_or_copied(backend):
    adopted = _model()
    adopted.fit(X, Y, batch_size=8, epochs=2, verbose=0)
    copied = _model()
    kept = copied.state
    copied.fit(X, Y, batch_size=8, epochs=2, verbose=0)
    for a, b in zip(_values(adopted.state), _values(copied.state)):
        np.testing.assert_array_equal(a, b)
    del kept


# ------------------------------------------------------------------------- unshared_leaves
def test_unshared_leaves_counts_holders_of_the_root_and_of_every_node():
    tree = {"a": {"w": np.zeros(2), "b": np.zeros(1)}, "list": [np.zeros(3), (np.ones(1), np.ones(2))]}
    ids = {id(tree["a"]["w"]), id(tree["a"]["b"]), id(tree["list"][0]), id(tree["list"][1][0]),
           id(tree["list"][1][1])}
    assert ownership.unshared_leaves(tree, holders=1) == ids
    assert ownership.unshared_leaves(tree, holders=2) == frozenset()  # the caller claims a holder that is not there
    sub = tree["list"]
    assert ownership.unshared_leaves(tree, holders=1) == {id(tree["a"]["w"]), id(tree["a"]["b"])}
    del sub
    ref = weakref.ref(tree["a"]["b"])
    assert ownership.unshared_leaves(tree, holders=1) == ids - {id(tree["a"]["b"])}
    del ref
    twice = np.zeros(4)
    shared = {"x": twice, "y": twice}
    del twice
    assert ownership.unshared_leaves(shared, holders=1) == frozenset()  # one array in two places


def test_unshared_leaves_treats_other_containers_as_shared():
    pair = collections.namedtuple("pair", "a b")
    tree = {"named": pair(np.zeros(1), np.zeros(1)), "plain": np.zeros(1)}
    assert ownership.unshared_leaves(tree, holders=1) == {id(tree["plain"])}


def test_leaves_stay_adoptable_after_a_failed_torch_compile(torch_backend):
    """A failed ``torch.compile`` leaves torch's frame hook holding one more reference to each argument
    of every later Python call; the reference counts are calibrated per use, so adoption still works
    (it used to find every leaf shared for the rest of the session)."""
    from ember.training.ownership import unshared_leaves

    model = ember.Sequential([ember.Input((4,)), layers.Dense(3)])
    model.build(seed=0)
    trainer = ember.Trainer(model, optimizer="sgd", loss="mse", jit_compile=True)
    with pytest.raises(ValueError):  # a batch of the wrong width: the compile fails, then the eager step
        trainer.steps.fit_step(trainer.init_state(seed=0), (np.zeros((8, 5), "float32"), np.zeros((8, 3), "f4"), None))

    def adoptable():
        state = {"params": {"w": np.zeros(3), "b": np.zeros(1)}}
        alone = len(unshared_leaves(state, holders=1))
        kept = state["params"]["w"]  # noqa: F841 - a second holder of one leaf
        unshared = unshared_leaves(state, holders=1)
        return alone, [key for key in state["params"] if id(state["params"][key]) in unshared]

    assert adoptable() == (2, ["b"])
