"""Adafactor and Ftrl against Keras 3 (torch backend): same weights, same gradients, three steps."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ember import ops, optimizers

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")

rng = np.random.default_rng(11)
PARAMS = {"w": rng.normal(size=(3, 4)).astype(np.float32), "b": rng.normal(size=(4,)).astype(np.float32),
          "k": rng.normal(size=(2, 3, 2)).astype(np.float32)}
GRADS = [{k: rng.normal(size=v.shape).astype(np.float32) for k, v in PARAMS.items()} for _ in range(3)]

CASES = [
    ("Adafactor", {"learning_rate": 0.05}),
    ("Adafactor", {"learning_rate": 0.01, "relative_step": False, "clip_threshold": 0.5, "beta_2_decay": -0.6}),
    ("Ftrl", {"learning_rate": 0.1}),
    ("Ftrl", {"learning_rate": 0.05, "learning_rate_power": -0.3, "l1_regularization_strength": 0.01,
              "l2_regularization_strength": 0.02, "l2_shrinkage_regularization_strength": 0.05, "beta": 0.1}),
]


@pytest.mark.parametrize("name, kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_optimizer_matches_keras(backend, name, kwargs):
    theirs = getattr(keras.optimizers, name)(**kwargs)
    variables = {k: keras.Variable(v) for k, v in PARAMS.items()}
    ours = getattr(optimizers, name)(**kwargs)
    params = {k: ops.convert_to_tensor(v) for k, v in PARAMS.items()}
    state = ours.init(params)
    for grads in GRADS:
        theirs.apply_gradients([(keras.ops.convert_to_tensor(grads[k]), variables[k]) for k in PARAMS])
        params, state = ours.apply_gradients({k: ops.convert_to_tensor(v) for k, v in grads.items()}, state, params)
    for k in PARAMS:
        # float32 arithmetic in two orders over three steps
        np.testing.assert_allclose(ops.to_numpy(params[k]), keras.ops.convert_to_numpy(variables[k]),
                                   rtol=2e-5, atol=2e-6, err_msg=k)
    rebuilt = optimizers.deserialize(optimizers.serialize(ours))
    assert type(rebuilt) is type(ours) and rebuilt.get_config() == ours.get_config()


def test_adafactor_state_is_factored_and_bad_arguments_refused(backend):
    state = optimizers.Adafactor().init({k: ops.convert_to_tensor(v) for k, v in PARAMS.items()})
    assert ops.shape(state["row"]["k"]) == (2, 3) and ops.shape(state["column"]["k"]) == (2, 2)
    assert ops.shape(state["row"]["b"]) == ()
    with pytest.raises(ValueError, match="Ftrl"):
        optimizers.Ftrl(learning_rate_power=0.5)
    with pytest.raises(TypeError, match="relative_step"):
        optimizers.Adafactor(relative_step="yes")
