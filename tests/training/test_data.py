"""Data adapters: arrays, generators, ember.data.Dataset, torch DataLoader, splitting, shuffling."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import layers, ops
from ember.training.data import EpochIterator, get_adapter, split_validation
from tests.tolerances import FLOAT32_PAIR


def _batches(adapter, epoch=0):
    return [tuple(None if v is None else ops.to_numpy(v) if ops.is_array(v) else v for v in b)
            for b in adapter.batches(epoch)]


def test_array_batches_and_partial_last_batch(backend):
    x = np.arange(10, dtype=np.float64).reshape(10, 1)
    batches = _batches(get_adapter(x, np.arange(10), batch_size=4))
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]
    assert batches[0][0].dtype == np.float32  # float64 data becomes floatx, as in Keras
    assert batches[2][1].tolist() == [8, 9]


def test_shuffle_is_seeded_and_a_permutation(backend):
    x = np.arange(20, dtype=np.float32).reshape(20, 1)
    first = [b[0].ravel() for b in _batches(get_adapter(x, batch_size=8, shuffle=True, seed=5), epoch=0)]
    again = [b[0].ravel() for b in _batches(get_adapter(x, batch_size=8, shuffle=True, seed=5), epoch=0)]
    other = [b[0].ravel() for b in _batches(get_adapter(x, batch_size=8, shuffle=True, seed=5), epoch=1)]
    assert all((a == b).all() for a, b in zip(first, again))
    assert sorted(np.concatenate(first).tolist()) == list(range(20))
    assert not all((a == b).all() for a, b in zip(first, other))
    batch_order = [b[0].ravel() for b in _batches(get_adapter(x, batch_size=5, shuffle="batch", seed=1))]
    assert all((np.diff(b) == 1).all() for b in batch_order)  # contiguous batches, shuffled order
    assert sorted(b[0] for b in batch_order) == [0, 5, 10, 15]


def test_structures_of_arrays_and_tensors(backend):
    x = {"a": np.zeros((6, 2)), "b": [np.ones((6, 3)), ember.convert_to_tensor(np.ones((6,)))]}
    (bx, by, bsw), = list(get_adapter(x, [[1], [2], [3], [4], [5], [6]], batch_size=6).batches(0))
    assert ops.shape(bx["a"]) == (6, 2) and ops.shape(bx["b"][0]) == (6, 3) and ops.shape(bx["b"][1]) == (6,)
    assert ops.to_numpy(by).ravel().tolist() == [1, 2, 3, 4, 5, 6] and bsw is None


def test_validation_split_takes_the_last_fraction_before_shuffling():
    x = np.arange(10, dtype=np.float32).reshape(10, 1)
    (tx, ty, _), (vx, vy, _) = split_validation(x, np.arange(10), None, 0.3)
    assert ops.to_numpy(tx).ravel().tolist() == list(range(7))
    assert ops.to_numpy(vy).tolist() == [7, 8, 9]
    with pytest.raises(ValueError, match="leaves"):
        split_validation(x[:1], np.arange(1), None, 0.5)


def test_fit_validation_split_evaluates_the_held_out_samples():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 3)).astype(np.float32)
    y = rng.normal(size=(20, 1)).astype(np.float32)
    model = ember.Sequential([ember.Input((3,)), layers.Dense(1)])
    model.compile("sgd", "mse", seed=0)
    history = model.fit(x, y, validation_split=0.25, epochs=1, verbose=0)
    # exact: the same final weights on the same 5 samples, one batch, through the same test step
    assert history.history["val_loss"][0] == model.evaluate(x[15:], y[15:], verbose=0)


def _sum_model():
    model = ember.Sequential([ember.Input((2,)), layers.Dense(1, name="d")])
    model.build(seed=0)
    model.compile(ember.optimizers.SGD(0.05), "mse", seed=0)
    return model


def _xy(n=12):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    return x, x.sum(axis=1, keepdims=True)


def _kernel(model):
    return ops.to_numpy(model.state["params"]["d"]["kernel"])


def test_generator_iterable_dataset_and_arrays_train_alike(backend):
    x, y = _xy()
    arrays = _sum_model()
    arrays.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)

    def generator():
        for _ in range(2):
            for i in range(0, 12, 4):
                yield x[i:i + 4], y[i:i + 4]

    gen = _sum_model()
    gen.fit(generator(), steps_per_epoch=3, epochs=2, verbose=0)

    iterable = _sum_model()
    iterable.fit([(x[i:i + 4], y[i:i + 4]) for i in range(0, 12, 4)], epochs=2, verbose=0)

    class Batches(ember.data.Dataset):
        def __init__(self):
            super().__init__()
            self.epochs_ended = 0

        def __len__(self):
            return 3

        def __getitem__(self, index):
            return x[4 * index:4 * index + 4], y[4 * index:4 * index + 4]

        def on_epoch_end(self):
            self.epochs_ended += 1

    dataset = Batches()
    ds_model = _sum_model()
    ds_model.fit(dataset, epochs=2, shuffle=False, verbose=0)
    assert dataset.epochs_ended == 2
    for other in (gen, iterable, ds_model):
        np.testing.assert_array_equal(_kernel(other), _kernel(arrays))  # exact: the same batches in the same order


def test_torch_dataloader_by_duck_typing(backend):
    torch = pytest.importorskip("torch")
    x, y = _xy()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)),
                                         batch_size=4, shuffle=False)
    from_loader = _sum_model()
    history = from_loader.fit(loader, epochs=2, verbose=0)
    arrays = _sum_model()
    arrays.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_array_equal(_kernel(from_loader), _kernel(arrays))  # exact: the same batches in the same order
    assert len(history.history["loss"]) == 2
    # batches of 4 against one batch of 32: the mean loss summed in another order (FLOAT32_PAIR)
    np.testing.assert_allclose(from_loader.evaluate(loader, verbose=0), arrays.evaluate(x, y, verbose=0),
                               **FLOAT32_PAIR)


def test_one_shot_generator_runs_out_with_a_warning():
    x, y = _xy()
    model = _sum_model()
    with pytest.warns(RuntimeWarning, match="ran out"):
        history = model.fit(((x[i:i + 4], y[i:i + 4]) for i in range(0, 12, 4)), epochs=3, verbose=0)
    assert history.epoch == [0]


def test_steps_per_epoch_persists_the_iterator_across_epochs():
    x = np.arange(10, dtype=np.float32).reshape(10, 1)
    iterator = EpochIterator(get_adapter(x, batch_size=2), steps_per_epoch=3)
    firsts = [[ops.to_numpy(b[0])[0, 0] for _, b in iterator.epoch(e)] for e in range(3)]
    assert firsts == [[0, 2, 4], [6, 8], [0, 2, 4]]  # runs out in epoch 2, restarts in epoch 3
    assert iterator.ran_out


def test_dataset_threads_and_shuffle(backend):
    class Indexed(ember.data.Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, index):
            return np.full((2, 1), index, np.float32), np.zeros((2, 1), np.float32)

    adapter = get_adapter(Indexed(workers=3), shuffle=True, seed=2)
    threaded = [int(ops.to_numpy(b[0])[0, 0]) for b in adapter.batches(0)]
    plain = [int(ops.to_numpy(b[0])[0, 0]) for b in get_adapter(Indexed(), shuffle=True, seed=2).batches(0)]
    assert threaded == plain and sorted(threaded) == list(range(6)) and threaded != list(range(6))
    with pytest.raises(NotImplementedError, match="use_multiprocessing"):
        Indexed(use_multiprocessing=True)


def test_class_weight_to_sample_weight():
    from ember.training.data.adapter import class_weight_to_sample_weight

    np.testing.assert_array_equal(class_weight_to_sample_weight(np.array([0, 2, 1]), {0: 0.5, 2: 3.0}),
                                  [0.5, 3.0, 1.0])
    np.testing.assert_array_equal(class_weight_to_sample_weight(np.eye(3)[[2, 0]], {2: 4.0}), [4.0, 1.0])
    with pytest.raises(ValueError, match="single output"):
        class_weight_to_sample_weight([np.zeros(2), np.zeros(2)], {0: 1.0})


class _Batches(ember.utils.PyDataset):
    """Three batches of four rows, made by the dataset itself."""

    def __len__(self):
        return 3

    def __getitem__(self, index):
        x = np.arange(8, dtype="float32").reshape(4, 2) + index
        return x, x.sum(axis=1, keepdims=True)


def test_batch_size_beside_a_batched_dataset_is_ignored_with_a_warning(backend):
    """Keras ignores ``batch_size`` when x yields whole batches (a PyDataset, a DataLoader); Ember
    too, and says so: the run equals the one without ``batch_size``."""
    def fit(**kwargs):
        model = ember.Sequential([ember.Input((2,)), ember.layers.Dense(1, kernel_initializer="ones")])
        model.compile(optimizer=ember.optimizers.SGD(0.01), loss="mse")
        model.fit(_Batches(), epochs=1, verbose=0, shuffle=False, **kwargs)
        return model.get_weights()

    with pytest.warns(UserWarning, match=r"fit: batch_size=4 is ignored: x is an ember.data.Dataset"):
        given = fit(batch_size=4)
    for value, expected in zip(given, fit()):
        np.testing.assert_array_equal(value, expected)
