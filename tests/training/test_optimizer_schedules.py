"""Learning rate schedules against NumPy float64 formulas of Keras 3's definitions, at many steps."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import ops, optimizers
from ember.optimizers import schedules
from tests.training import optimizer_reference as ref

STEPS = list(range(0, 130)) + [255, 256, 1000, 4095, 10_000, 123_457]

CASES = {
    "exponential": (schedules.ExponentialDecay, ref.exponential_decay,
                    {"initial_learning_rate": 0.1, "decay_steps": 7, "decay_rate": 0.96}),
    "exponential_staircase": (schedules.ExponentialDecay, ref.exponential_decay,
                              {"initial_learning_rate": 0.1, "decay_steps": 7, "decay_rate": 0.5, "staircase": True}),
    "piecewise": (schedules.PiecewiseConstantDecay, ref.piecewise_constant,
                  {"boundaries": [10, 50, 100], "values": [1.0, 0.5, 0.1, 0.01]}),
    "polynomial": (schedules.PolynomialDecay, ref.polynomial_decay,
                   {"initial_learning_rate": 1.0, "decay_steps": 100, "end_learning_rate": 0.01, "power": 2.0}),
    "polynomial_cycle": (schedules.PolynomialDecay, ref.polynomial_decay,
                         {"initial_learning_rate": 1.0, "decay_steps": 30, "end_learning_rate": 0.1, "power": 0.5,
                          "cycle": True}),
    "inverse_time": (schedules.InverseTimeDecay, ref.inverse_time_decay,
                     {"initial_learning_rate": 0.5, "decay_steps": 10, "decay_rate": 0.3}),
    "inverse_time_staircase": (schedules.InverseTimeDecay, ref.inverse_time_decay,
                               {"initial_learning_rate": 0.5, "decay_steps": 10, "decay_rate": 0.3,
                                "staircase": True}),
    "cosine": (schedules.CosineDecay, ref.cosine_decay,
               {"initial_learning_rate": 0.2, "decay_steps": 100, "alpha": 0.1}),
    "cosine_warmup": (schedules.CosineDecay, ref.cosine_decay,
                      {"initial_learning_rate": 0.0, "decay_steps": 90, "alpha": 0.05, "warmup_target": 0.3,
                       "warmup_steps": 20}),
    "cosine_warmup_from_nonzero": (schedules.CosineDecay, ref.cosine_decay,
                                   {"initial_learning_rate": 0.1, "decay_steps": 50, "warmup_target": 1.0,
                                    "warmup_steps": 7}),
    "restarts": (schedules.CosineDecayRestarts, ref.cosine_decay_restarts,
                 {"initial_learning_rate": 1.0, "first_decay_steps": 8, "t_mul": 2.0, "m_mul": 0.7, "alpha": 0.05}),
    "restarts_equal_periods": (schedules.CosineDecayRestarts, ref.cosine_decay_restarts,
                               {"initial_learning_rate": 1.0, "first_decay_steps": 10, "t_mul": 1.0, "m_mul": 0.9}),
    "restarts_fractional_t_mul": (schedules.CosineDecayRestarts, ref.cosine_decay_restarts,
                                  {"initial_learning_rate": 0.5, "first_decay_steps": 5, "t_mul": 1.5}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_schedule_matches_keras_formula(backend, case):
    cls, formula, config = CASES[case]
    schedule = cls(**config)
    expected = np.array([formula(float(s), **config) for s in STEPS])
    int_dtype = "int32" if backend == "mlx" else "int64"
    got = np.array([ops.to_numpy(schedule(ops.convert_to_tensor(s, dtype=int_dtype))) for s in STEPS])
    assert got.dtype == np.float32
    # float32 relative accuracy, with an absolute floor where the rate passes through zero
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-6 * max(abs(v) for v in expected))
    # a Python int step gives the same values
    np.testing.assert_array_equal(ops.to_numpy(schedule(STEPS[17])), got[17])  # exact: the same float32 formula


def test_restart_boundaries_start_a_new_period(backend):
    schedule = schedules.CosineDecayRestarts(1.0, first_decay_steps=3, t_mul=2.0, m_mul=0.5)
    starts = [0, 3, 9, 21, 45, 93, 189, 381, 765, 1533, 3069]  # 3 * (2**i - 1)
    got = [float(ops.to_numpy(schedule(ops.convert_to_tensor(s)))) for s in starts]
    # exact: a period starts at cos(0) = 1, scaled by m_mul**i = 0.5**i (a power of 2)
    np.testing.assert_array_equal(got, [0.5**i for i in range(len(starts))])


@pytest.mark.parametrize("case", sorted(CASES))
def test_schedule_config_round_trip(case):
    cls, _, config = CASES[case]
    schedule = cls(**config)
    clone = cls.from_config(schedule.get_config())
    assert clone.get_config() == schedule.get_config()
    data = schedules.serialize(schedule)
    assert data["class_name"] == f"ember>{cls.__name__}"
    assert schedules.deserialize(data).get_config() == schedule.get_config()
    keras_style = {"class_name": cls.__name__, "config": schedule.get_config()}
    assert type(schedules.deserialize(keras_style)) is cls


def test_bad_schedule_arguments():
    with pytest.raises(ValueError, match="decay_steps"):
        schedules.ExponentialDecay(0.1, decay_steps=0, decay_rate=0.9)
    with pytest.raises(ValueError, match="1 less than"):
        schedules.PiecewiseConstantDecay([1, 2], [1.0, 0.5])
    with pytest.raises(ValueError, match="strictly increasing"):
        schedules.PiecewiseConstantDecay([5, 2], [1.0, 0.5, 0.1])
    with pytest.raises(ValueError, match="first_decay_steps"):
        schedules.CosineDecayRestarts(0.1, first_decay_steps=-1)
    with pytest.raises(ValueError, match="initial_learning_rate"):
        schedules.CosineDecay("high", 10)
    with pytest.raises(NotImplementedError, match="__call__"):
        schedules.LearningRateSchedule()(0)


def test_schedule_drives_the_optimizer(backend):
    schedule = schedules.PiecewiseConstantDecay([1], [1.0, 0.5])
    opt = optimizers.SGD(schedule)
    params = {"w": ops.zeros((1,))}
    state = opt.init(params)
    for _ in range(3):
        params, state = opt.apply_gradients({"w": ops.ones((1,))}, state, params)
    np.testing.assert_allclose(ops.to_numpy(params["w"]), [-(1.0 + 1.0 + 0.5)])  # steps 0, 1 at 1.0; step 2 at 0.5


@pytest.mark.parametrize("case", sorted(CASES))
def test_period_boundaries_survive_a_reciprocal_division(case, monkeypatch):
    """CUDA divides by a scalar as a multiplication by its reciprocal (90 * (1/30) is not exactly 3 in
    float32): the staircase, cycle and restart boundaries stay exact. Simulated on NumPy."""
    ember.set_backend("numpy")
    divide = ops.divide

    def reciprocal_divide(x, y):
        if isinstance(y, float):
            return ops.multiply(x, np.float32(1.0) / np.float32(y))
        return divide(x, y)

    monkeypatch.setattr(ops, "divide", reciprocal_divide)
    cls, formula, config = CASES[case]
    expected = np.array([formula(float(s), **config) for s in STEPS])
    got = np.array([ops.to_numpy(cls(**config)(ops.convert_to_tensor(s, dtype="int64"))) for s in STEPS])
    # as in test_schedule_matches_keras_formula: float32 relative accuracy, an absolute floor through zero
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-6 * max(abs(v) for v in expected))
