"""The shared argument checks (ember.validation) and seed helpers (ember.seeds)."""

import numpy as np
import pytest

import ember
from ember import activations, constraints, initializers, losses, metrics, ops, optimizers, regularizers
from ember.seeds import call_seed, check_seed, derive_seed, sub_seed
from ember.validation import check_bool, check_last_dim, check_positive_int, check_rate, close_matches, did_you_mean


class _Named:
    name = "lyr"
    seed = 5


@pytest.mark.parametrize("value", [0, -1, 2.0, True, "3", None])
def test_positive_int_rejects(value):
    with pytest.raises(ValueError, match=r"^lyr: units must be a positive int, received "):
        check_positive_int("lyr", "units", value)


def test_positive_int_normalizes_numpy_ints():
    out = check_positive_int("lyr", "units", np.int64(3))
    assert out == 3 and type(out) is int


@pytest.mark.parametrize("value", [-0.1, 1.0, 1, False, "0.5"])
def test_rate_rejects(value):
    with pytest.raises(ValueError, match=r"^lyr: rate must be a number in \[0, 1\)"):
        check_rate("lyr", "rate", value)


def test_rate_and_bool():
    assert check_rate("lyr", "rate", np.float32(0.25)) == 0.25
    assert check_bool("lyr", "flag", False) is False
    with pytest.raises(TypeError, match="lyr: flag must be a bool, received 1"):
        check_bool("lyr", "flag", 1)


@pytest.mark.parametrize("shape, expected, message", [
    ((3,), None, r"layer 'lyr' expects inputs of rank >= 2, received shape \(3,\)"),
    ((2, None), None, "layer 'lyr' needs a known last dimension"),
    ((2, 3), 4, "layer 'lyr' expects a last dimension of 4"),
])
def test_last_dim_errors(shape, expected, message):
    with pytest.raises(ValueError, match=message):
        check_last_dim(_Named(), shape, expected)


def test_last_dim_known():
    assert check_last_dim(_Named(), (None, 7), expected=7) == 7


def test_seed_helpers(backend):
    assert sub_seed(None, "kernel") is None
    assert sub_seed(3, "kernel") == derive_seed(3, "kernel")
    assert call_seed(_Named(), None) == 5 and call_seed(_Named(), np.int32(2)) == 2
    with pytest.raises(TypeError, match="layer 'lyr': rng must be an int seed or None, received 1.5"):
        call_seed(_Named(), 1.5)
    array_seed = ops.convert_to_tensor(4, dtype="int32")
    assert check_seed(array_seed, "seed") is array_seed


# ---------------------------------------------------------------------------------- did you mean
@pytest.mark.parametrize(("name", "choices", "expected"), [
    ("mean_sqared_error", ["mae", "mean_squared_error", "MeanSquaredError", "mse"], ["mean_squared_error"]),
    ("MeanSquaredErr", ["mean_squared_error", "MeanSquaredError"], ["MeanSquaredError"]),  # the user's spelling
    ("adamm", ["sgd", "adam", "nadam", "adamw"], ["adam", "adamw", "nadam"]),  # equally close: all, best first
    ("max", ["max_norm", "MaxNorm", "unit_norm"], ["max_norm"]),  # underscores do not count against a name
    ("zzz", ["relu", "tanh"], []),
    ("relu", [], []),
    (3, ["relu"], []),
])
def test_close_matches(name, choices, expected):
    assert close_matches(name, choices) == expected


def test_did_you_mean_joins_the_matches_or_says_nothing():
    assert did_you_mean("adamm", ["adam", "adamw", "nadam"]) == " (did you mean 'adam', 'adamw' or 'nadam'?)"
    assert did_you_mean("rellu", ["relu"]) == " (did you mean 'relu'?)"
    assert did_you_mean("zzz", ["relu"]) == ""


@pytest.mark.parametrize(("lookup", "typo", "message"), [
    (losses.get, "mean_sqared_error", "unknown loss 'mean_sqared_error' (did you mean 'mean_squared_error'?); "
                                      "expected one of ["),
    (optimizers.get, "rmsprob", "unknown optimizer 'rmsprob' (did you mean 'rmsprop'?); expected one of ["),
    (metrics.get, "acuracy", "unknown metric 'acuracy' (did you mean 'accuracy'?); expected one of ["),
    (activations.get, "rellu", "activation: unknown activation 'rellu' (did you mean 'relu' or 'relu6'?); "),
    (initializers.get, "glorot_unifrom", "unknown initializer 'glorot_unifrom' (did you mean 'glorot_uniform'?); "),
    (regularizers.get, "orthogonal_regulariser", "regularizer: unknown regularizer 'orthogonal_regulariser' (did "
                                                  "you mean 'orthogonal_regularizer'?); "),
    (constraints.get, "unitnorm", "constraint: unknown constraint 'unitnorm' (did you mean 'unit_norm'?); "),
])
def test_every_name_lookup_suggests_the_closest_names(lookup, typo, message):
    with pytest.raises(ValueError) as error:
        lookup(typo)
    assert str(error.value).startswith(message), str(error.value)


def test_compile_with_a_misspelt_name_suggests_the_right_one():
    model = ember.Sequential([ember.Input((2,)), ember.layers.Dense(1)])
    with pytest.raises(ValueError, match=r"^unknown loss 'mean_sqared_error' \(did you mean 'mean_squared_error'\?\)"):
        model.compile(optimizer="sgd", loss="mean_sqared_error")


def test_unchecked_values_is_per_thread():
    """A fit's steps (which skip the host reads of values) leave another thread's checks on."""
    import threading

    from ember.validation import unchecked_values, values_checked

    seen = []
    with unchecked_values():
        assert not values_checked()
        other = threading.Thread(target=lambda: seen.append(values_checked()))
        other.start()
        other.join()
    assert seen == [True] and values_checked()
