"""Tutorial 05 - Neural circuit policies: forecasting the yearly sunspot numbers.

What you learn:
    * turning a time series into supervised windows: the last ``WINDOW`` years -> the next
      year, with a chronological train/test split (no peeking at the future) and
      normalization fitted on the training years only;
    * a *wiring*: ``ember.wirings.AutoNCP(units, output_size)`` builds a sparse Neural
      Circuit Policy (sensory -> inter -> command -> motor neurons), and ``wiring.draw()``
      plots it;
    * continuous-time recurrent layers: ``layers.CfC`` (closed-form continuous-time) on
      that wiring, and ``layers.LTC`` (liquid time-constant: an ODE solved in a few
      unfolds per step) with fully connected neurons, each trained with ``fit``;
    * judging a forecaster against the *persistence* baseline (next year = this year),
      which any useful model must beat.

The data: statsmodels' yearly mean sunspot numbers, 1700-2008 (309 years). The ~11-year
solar cycle makes the series predictable a year ahead, but not trivially so.

Run it::

    python tutorials/05_ncp_sunspots.py [--backend numpy|torch|mlx] [--fast] [--plot DIR]

With ``--plot DIR`` it writes ``DIR/wiring.png`` (the CfC's circuit) and
``DIR/05_forecast.png`` (test years: truth, forecasts, persistence).

Expected on the test years (1947-2008): persistence RMSE ~33 sunspots, CfC ~24, LTC ~22
(the same on every backend: same seeds, same shuffling).
"""

from __future__ import annotations

import time

import numpy as np
import statsmodels.api as sm

import ember
from ember import layers, wirings

from _common import parse_args, print_results

WINDOW = 16  # years of history per forecast: more than one solar cycle


def make_windows(series, window):
    """``x[i] = series[i:i + window]`` (as ``(window, 1)``: one feature per step), ``y[i] = series[i + window]``."""
    x = np.stack([series[i:i + window] for i in range(len(series) - window)])
    return x[..., np.newaxis].astype("float32"), series[window:, np.newaxis].astype("float32")


def train_forecaster(name, recurrent, x_train, y_train, x_test, y_test, epochs, learning_rate):
    """Put ``recurrent`` in a Sequential with a linear head, fit it, return (model, history, test MSE)."""
    model = ember.Sequential([
        ember.Input((WINDOW, 1)),      # (time steps, features)
        recurrent,                     # reads the window, returns the last step's output
        layers.Dense(1, name=f"{name}_head"),
    ], name=f"{name}_forecaster")
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.Adam(learning_rate=learning_rate), loss="mse", seed=0)
    start = time.perf_counter()
    history = model.fit(x_train, y_train, batch_size=16, epochs=epochs)
    print(f"{name}: {model.count_params()} params, {epochs} epochs in {time.perf_counter() - start:.1f} s, "
          f"training loss {history.history['loss'][0]:.3f} -> {history.history['loss'][-1]:.3f}")
    return model, history, model.evaluate(x_test, y_test, verbose=0)


def main(argv=None):
    args = parse_args(argv, "Tutorial 05: CfC and LTC forecasting statsmodels' yearly sunspots.")
    ember.clear_session()  # fresh layer names, so the seeded initial weights are the same every run

    # --- 1. The series, normalized with training statistics -------------------------------------
    data = sm.datasets.sunspots.load_pandas().data  # columns YEAR, SUNACTIVITY
    years = data["YEAR"].to_numpy().astype(int)
    series = data["SUNACTIVITY"].to_numpy(np.float64)
    split = int(0.8 * len(series))  # train on 1700-1946, test on the years after
    mean, std = series[:split].mean(), series[:split].std()
    normalized = (series - mean) / std

    # Windows whose target lies in the training years train; the rest test. The test
    # windows look back into the training years, which is fine: that is the past.
    x, y = make_windows(normalized, WINDOW)
    target_years = years[WINDOW:]
    train = target_years < years[split]
    x_train, y_train, x_test, y_test = x[train], y[train], x[~train], y[~train]
    print(f"{len(x_train)} training windows, {len(x_test)} test windows "
          f"(targets {target_years[~train][0]}-{target_years[-1]})")

    # The baseline: next year's value = this year's (the last value of each window).
    persistence_mse = float(np.mean((x_test[:, -1] - y_test) ** 2))

    # --- 2. A wired CfC: 16 neurons, 4 of them motor (output) neurons -------------------------------
    # The wiring is plain data (seeded NumPy matrices): the same circuit on every backend.
    wiring = wirings.AutoNCP(16, output_size=4, sparsity_level=0.5, seed=0)
    epochs = 4 if args.fast else 20
    cfc_model, cfc_history, cfc_mse = train_forecaster(
        "cfc", layers.CfC(wiring, name="cfc"), x_train, y_train, x_test, y_test, epochs, 0.01)

    # --- 3. An LTC with 8 fully connected neurons ---------------------------------------------------
    # An int instead of a wiring means FullyConnected(8): every neuron is an output.
    # ode_unfolds=2: two solver sub-steps per time step (6 is the default; fewer is faster).
    # Each sub-step crosses one synapse, which is enough here (every neuron sees the input
    # directly). On an NCP wiring keep ode_unfolds >= 3 (sensory -> inter -> command -> motor),
    # or the forecast ignores the latest year; a wired LTC also wants more epochs (~60).
    ltc_model, ltc_history, ltc_mse = train_forecaster(
        "ltc", layers.LTC(8, ode_unfolds=2, name="ltc"), x_train, y_train, x_test, y_test, epochs, 0.03)

    # Errors in sunspot units (undo the normalization) are easier to read.
    rmse = lambda mse: float(np.sqrt(mse)) * std  # noqa: E731
    print(f"\ntest RMSE in sunspots: persistence {rmse(persistence_mse):.1f}, CfC {rmse(cfc_mse):.1f}, "
          f"LTC {rmse(ltc_mse):.1f}")
    print("CfC wiring:", {k: v for k, v in wiring.statistics().items() if k in ("neurons", "synapses")})

    if args.plot is not None:
        import matplotlib
        matplotlib.use("Agg")  # files only, never a window
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 5))
        # The layer kept its own copy of the wiring; build ours for 1 input feature so the
        # drawing shows the sensory neuron feeding the circuit.
        wiring.build(1)
        wiring.draw(ax=ax, draw_labels=True)
        fig.savefig(args.plot / "wiring.png", dpi=120, bbox_inches="tight")
        plt.close(fig)
        fig, ax = plt.subplots(figsize=(9, 4))
        test_years = target_years[~train]
        ax.plot(test_years, y_test[:, 0] * std + mean, "k-", label="observed")
        ax.plot(test_years, x_test[:, -1, 0] * std + mean, ":", color="grey", label="persistence")
        for label, model in (("CfC", cfc_model), ("LTC", ltc_model)):
            ax.plot(test_years, model.predict(x_test, verbose=0)[:, 0] * std + mean, label=label)
        ax.set(xlabel="year", ylabel="sunspot number", title="One-year-ahead forecasts on the test years")
        ax.legend()
        fig.savefig(args.plot / "05_forecast.png", dpi=120, bbox_inches="tight")
        plt.close(fig)
        print("wrote", args.plot / "wiring.png", "and", args.plot / "05_forecast.png")

    results = {
        "backend": args.backend,
        "persistence_mse": persistence_mse,
        "cfc_first_loss": cfc_history.history["loss"][0],
        "cfc_final_loss": cfc_history.history["loss"][-1],
        "cfc_test_mse": cfc_mse,
        "ltc_first_loss": ltc_history.history["loss"][0],
        "ltc_final_loss": ltc_history.history["loss"][-1],
        "ltc_test_mse": ltc_mse,
        "persistence_rmse_sunspots": rmse(persistence_mse),
        "cfc_rmse_sunspots": rmse(cfc_mse),
        "ltc_rmse_sunspots": rmse(ltc_mse),
    }
    print_results("05 NCP sunspots", results)
    return results


if __name__ == "__main__":
    main()
