"""``ember.utils.plot_history``: what it draws, and its errors."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import ember
from ember import layers
from ember.utils import plot
from ember.utils.plot import epoch_axis, panels, plot_history

pytest.importorskip("matplotlib", reason="plot_history needs the [plot] extra (matplotlib)")


def test_fit_history_is_plotted_with_one_panel_per_metric(backend, tmp_path, monkeypatch):
    ember.set_backend(backend)
    model = ember.Sequential([ember.Input((3,)), layers.Dense(2, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x = np.random.default_rng(0).normal(size=(32, 3)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    history = model.fit(x, y, epochs=3, validation_split=0.25, verbose=0)

    drawn = []
    figure_class = __import__("matplotlib.figure", fromlist=["Figure"]).Figure
    original = figure_class.savefig

    def spy(self, *args, **kwargs):
        drawn.append({ax.get_title(): [line.get_label() for line in ax.get_lines()]
                      for ax in self.axes if ax.get_visible()})
        return original(self, *args, **kwargs)

    monkeypatch.setattr(figure_class, "savefig", spy)
    path = plot_history(history, tmp_path / "history.png", title="digits")
    assert path == tmp_path / "history.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert drawn == [{"loss": ["train", "validation"], "accuracy": ["train", "validation"]}]


def test_plot_accepts_the_history_dict_and_other_formats(tmp_path):
    logs = {"loss": [3.0, 2.0], "mae": [1.0, 0.5]}
    assert plot_history(logs, tmp_path / "h.svg").read_text().lstrip().startswith("<?xml")


def test_panels_put_loss_first_and_pair_validation():
    logs = {"accuracy": [0.5], "val_accuracy": [0.4], "loss": [1.0], "val_loss": [1.2], "learning_rate": [0.1]}
    assert panels(logs) == [("loss", [1.0], [1.2]), ("accuracy", [0.5], [0.4]), ("learning_rate", [0.1], None)]


def test_a_shorter_validation_series_is_spread_over_the_epochs():
    assert epoch_axis([1.0, 2.0, 3.0, 4.0], 4) == [1, 2, 3, 4]
    assert epoch_axis([1.0, 2.0], 4) == [2.0, 4.0]  # validation_freq=2


@pytest.mark.parametrize("history, error, match", [
    ([1.0, 2.0], TypeError, "History .* or a dict of lists, received list"),
    ({}, ValueError, "history is empty"),
    ({"loss": []}, ValueError, "history is empty"),
    ({"loss": ["high"]}, TypeError, r"history\['loss'\] must be a list of numbers"),
])
def test_bad_history_is_rejected(tmp_path, history, error, match):
    with pytest.raises(error, match=match):
        plot_history(history, tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_a_missing_directory_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        plot_history({"loss": [1.0]}, tmp_path / "nowhere" / "x.png")


def test_missing_matplotlib_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r'pip install "ember\[plot\]"'):
        plot.plot_history({"loss": [1.0]}, tmp_path / "x.png")


def test_many_metrics_wrap_onto_rows_of_three(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    grids = []
    original = Figure.savefig

    def spy(self, *args, **kwargs):
        grids.append((self.axes[0].get_gridspec().get_geometry(), sum(ax.get_visible() for ax in self.axes)))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", spy)
    logs = {name: [1.0, 0.5] for name in ("loss", "a", "b", "c", "d")}
    plot_history(logs, tmp_path / "h.png")
    assert grids == [((2, 3), 5)]
