"""``plot_model``/``model_to_dot``: the drawn graph is the model's graph (boxes, arrows, labels), and a
real image comes out with or without Graphviz's ``dot`` program."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import ember
from ember import layers, utils
from ember.models import plotting as model_plot
from tests.helpers import needs, optional_import

Image = optional_import("PIL.Image")  # reads the images back; None on a core-only install


def _two_branch_model():
    a, b = ember.Input((4,), name="a"), ember.Input((3,), name="b")
    inner_in = ember.Input((4,), name="inner_in")
    inner = ember.Model(inner_in, layers.Dense(4, activation="relu", name="inner_dense")(inner_in), name="inner")
    shared = layers.Dense(4, name="shared", trainable=False)
    merged = layers.Concatenate(name="cat")([inner(shared(a)), layers.Dense(4, name="proj")(b)])
    return ember.Model([a, b], layers.Dense(1, name="out")(merged), name="net")


def test_graph_has_one_box_per_layer_and_the_model_edges():
    graph = model_plot.layer_graph(_two_branch_model(), show_shapes=True, show_dtype=True, show_trainable=True)
    assert [n.id for n in graph.nodes] == ["a", "b", "shared", "inner", "proj", "cat", "out"]
    assert sorted(graph.edges) == sorted([("a", "shared"), ("shared", "inner"), ("inner", "cat"), ("b", "proj"),
                                          ("proj", "cat"), ("cat", "out")])
    labels = {n.id: n.label for n in graph.nodes}
    assert labels["cat"] == ("cat (Concatenate)\nInput shape: [(None, 4), (None, 4)]\nOutput shape: (None, 8)\n"
                             "Output dtype: float32\nTrainable: True")
    assert labels["shared"].endswith("Trainable: False")


def test_expand_nested_draws_the_inner_layers_in_a_cluster():
    graph = model_plot.layer_graph(_two_branch_model(), expand_nested=True, show_layer_names=False,
                                   show_layer_activations=True)
    ids = [n.id for n in graph.nodes]
    assert "inner" not in ids and {"inner/inner_in", "inner/inner_dense"} <= set(ids)
    assert ("shared", "inner/inner_in") in graph.edges and ("inner/inner_dense", "cat") in graph.edges
    node = next(n for n in graph.nodes if n.id == "inner/inner_dense")
    assert node.cluster == "inner" and node.label == "Dense\nActivation: relu"
    source = model_plot.dot_source(graph)
    assert "subgraph cluster_" in source and '"inner/inner_in" -> "inner/inner_dense";' in source


@needs("pydot")
def test_sequential_is_a_chain_and_model_to_dot_parses():
    model = ember.Sequential([ember.Input((5,), name="x"), layers.Dense(3, name="h"), layers.Dense(1, name="y")])
    graph = model_plot.layer_graph(model, show_shapes=True)
    assert graph.edges == [("x", "h"), ("h", "y")]
    assert "Output shape: (None, 3)" in graph.nodes[1].label
    dot = utils.model_to_dot(model, rankdir="LR")
    assert {n.get_name().strip('"') for n in dot.get_nodes()} >= {"x", "h", "y"}
    assert len(dot.get_edges()) == 2


@needs("PIL.Image", "matplotlib")
@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot_model_writes_an_image(tmp_path, suffix):
    path = utils.plot_model(_two_branch_model(), tmp_path / f"net{suffix}", show_shapes=True, dpi=40)
    if suffix == ".png":
        with Image.open(path) as image:
            assert image.size[0] > 50 and image.size[1] > 50
            assert len(np.unique(np.asarray(image.convert("L")))) > 2  # something is drawn
    else:
        assert "<svg" in path.read_text()


@needs("PIL.Image", "matplotlib")
def test_matplotlib_drawing_when_graphviz_is_absent(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    path = utils.plot_model(_two_branch_model(), tmp_path / "net.png", rankdir="LR", dpi=40)
    with Image.open(path) as image:
        assert image.size[0] > image.size[1]  # left to right: wider than tall


def test_dot_file_and_bad_arguments(tmp_path):
    model = _two_branch_model()
    text = utils.plot_model(model, tmp_path / "net.dot").read_text()
    assert text.startswith("digraph G {") and '"cat" -> "out";' in text
    with pytest.raises(ValueError, match="rankdir"):
        utils.plot_model(model, tmp_path / "x.png", rankdir="UP")
    with pytest.raises(TypeError, match="ember.Model"):
        utils.plot_model(layers.Dense(2), tmp_path / "x.png")
    with pytest.raises(ValueError, match="suffix"):
        utils.plot_model(model, tmp_path / "noext")
    with pytest.raises(FileNotFoundError):
        utils.plot_model(model, tmp_path / "missing" / "x.png")
