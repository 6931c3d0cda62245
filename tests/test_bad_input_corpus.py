"""A corpus of bad inputs across the public API, on every backend.

Each case makes one mistake a user could make. It must raise the expected exception type
with a message naming the culprit (the layer/argument/op and the received value or shape),
and leave everything as it was: the model's weights, its optimizer state, the files in the
working directory and the active backend.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ember
from ember import callbacks, features, layers, losses, metrics, ops, optimizers
from tests.helpers import same_state, state_snapshot

X = np.random.default_rng(0).normal(size=(16, 4)).astype("float32")
Y = np.random.default_rng(1).integers(0, 3, 16)
Y_ONE_HOT = np.eye(3, dtype="float32")[Y]


def _sce():
    return losses.SparseCategoricalCrossentropy(from_logits=True)


def _trained_model():
    """A compiled, once-trained model (so an optimizer state exists), its layers named."""
    model = ember.Sequential([ember.Input((4,), name="features"), layers.Dense(5, activation="relu", name="hidden"),
                              layers.Dense(3, name="logits")], name="corpus")
    model.build(seed=0)
    model.compile(optimizer=optimizers.Adam(0.01), loss=_sce(), metrics=["accuracy"], seed=0)
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    return model


class Context:
    """What a case may use: the model, a scratch directory and a saved checkpoint in it."""

    def __init__(self, model, directory):
        self.model = model
        self.dir = directory
        self.checkpoint = os.path.join(directory, "saved.h5")
        self.weights = os.path.join(directory, "saved.weights.h5")
        self.text = os.path.join(directory, "notes.txt")

    def path(self, name):
        return os.path.join(self.dir, name)


def _other_model():
    return ember.Sequential([ember.Input((4,)), layers.Dense(7, name="hidden"), layers.Dense(3, name="logits")])


def _dense_state(ctx):
    return ctx.model.state["params"]["hidden"]


# (id, call(ctx), exception type, regex the message must match: it names the culprit)
CASES = [
    # --- layers: construction -----------------------------------------------------------------
    ("Dense units=0", lambda c: layers.Dense(0), ValueError, r"units.*0"),
    ("Dense units=-3", lambda c: layers.Dense(-3), ValueError, r"units.*-3"),
    ("Dense units='a'", lambda c: layers.Dense("a"), (TypeError, ValueError), r"units.*'a'"),
    ("Dense units=2.5", lambda c: layers.Dense(2.5), (TypeError, ValueError), r"units.*2\.5"),
    ("Dense activation", lambda c: layers.Dense(3, activation="nope"), ValueError, r"nope"),
    ("Dense initializer", lambda c: layers.Dense(3, kernel_initializer="nope"), ValueError, r"nope"),
    ("Dense regularizer", lambda c: layers.Dense(3, kernel_regularizer="nope"), ValueError, r"nope"),
    ("Dense constraint", lambda c: layers.Dense(3, kernel_constraint="nope"), ValueError, r"nope"),
    ("Dense use_bias", lambda c: layers.Dense(3, use_bias="yes"), TypeError, r"use_bias.*'yes'"),
    ("Dropout rate=1.5", lambda c: layers.Dropout(1.5), ValueError, r"rate.*1\.5"),
    ("Dropout rate=-0.1", lambda c: layers.Dropout(-0.1), ValueError, r"rate.*-0\.1"),
    ("Conv2D filters=0", lambda c: layers.Conv2D(0, 3), ValueError, r"filters.*0"),
    ("Conv2D kernel_size=0", lambda c: layers.Conv2D(4, 0), ValueError, r"kernel_size.*0"),
    ("Conv2D padding", lambda c: layers.Conv2D(4, 3, padding="full"), ValueError, r"padding.*full"),
    ("Conv2D strides=0", lambda c: layers.Conv2D(4, 3, strides=0), ValueError, r"strides.*0"),
    ("Embedding input_dim=0", lambda c: layers.Embedding(0, 4), ValueError, r"input_dim.*0"),
    ("Embedding output_dim=-1", lambda c: layers.Embedding(10, -1), ValueError, r"output_dim.*-1"),
    ("LSTM units=0", lambda c: layers.LSTM(0), ValueError, r"units.*0"),
    ("GRU units='x'", lambda c: layers.GRU("x"), (TypeError, ValueError), r"units.*'x'"),
    ("MaxPooling2D pool_size=0", lambda c: layers.MaxPooling2D(0), ValueError, r"pool_size.*0"),
    ("BatchNormalization momentum", lambda c: layers.BatchNormalization(momentum=1.5), ValueError,
     r"momentum.*1\.5"),
    ("LayerNormalization epsilon", lambda c: layers.LayerNormalization(epsilon=-1.0), ValueError, r"epsilon.*-1"),
    ("MultiHeadAttention heads=0", lambda c: layers.MultiHeadAttention(0, 4), ValueError, r"num_heads.*0"),
    ("Reshape two -1", lambda c: layers.Reshape((-1, -1)), ValueError, r"target_shape.*\(-1, -1\)"),
    ("Dense frozen attribute", lambda c: setattr(layers.Dense(3), "units", 4), (AttributeError, TypeError),
     r"units|frozen|immutable|cannot"),
    # --- layers: build / apply ----------------------------------------------------------------
    ("Dense build rank 0", lambda c: layers.Dense(3, name="d").build(()), ValueError, r"'d'.*\(\)"),
    ("Conv2D build rank 2", lambda c: layers.Conv2D(2, 3, name="c").build((None, 8)), ValueError,
     r"'c'.*\(None, 8\)"),
    ("apply state None", lambda c: layers.Dense(3, name="d").apply(None, X), TypeError, r"'d'.*state.*NoneType"),
    ("apply state no params", lambda c: layers.Dense(3, name="d").apply({"buffers": {}}, X), ValueError,
     r"'d'.*'params'"),
    ("apply params None", lambda c: layers.Dense(3, name="d").apply({"params": None, "buffers": {}}, X),
     TypeError, r"'d'.*params.*NoneType"),
    ("apply missing kernel", lambda c: layers.Dense(5, name="d").apply(
        {"params": {"bias": np.zeros(5, "float32")}, "buffers": {}}, X), ValueError, r"'d'.*params/kernel is missing"),
    ("apply wrong kernel", lambda c: layers.Dense(5, name="hidden").apply(
        {"params": {"kernel": np.zeros((6, 5), "float32"), "bias": np.zeros(5, "float32")}, "buffers": {}}, X),
     ValueError, r"'hidden'.*6"),
    ("model.apply missing layer", lambda c: c.model.apply(
        {"params": {"logits": c.model.state["params"]["logits"]}, "buffers": {}}, X), ValueError,
     r"'hidden'.*params/kernel is missing"),
    ("model.apply state list", lambda c: c.model.apply([1, 2], X), TypeError, r"'corpus'.*state.*list"),
    ("model.apply wrong bias", lambda c: c.model.apply({"params": {
        **c.model.state["params"], "logits": {"kernel": c.model.state["params"]["logits"]["kernel"],
                                              "bias": np.zeros((2, 2), "float32")}}, "buffers": {}}, X),
     ValueError, r"'logits'"),
    # --- models --------------------------------------------------------------------------------
    ("Sequential non-layer", lambda c: ember.Sequential([ember.Input((4,)), "dense"]), TypeError, r"'dense'|str"),
    ("Input shape str", lambda c: ember.Input("a"), (TypeError, ValueError), r"shape.*'a'"),
    ("Input shape negative", lambda c: ember.Input((-2,)), ValueError, r"-2"),
    ("Model outputs not symbolic", lambda c: ember.Model(ember.Input((4,)), X), TypeError, r"outputs"),
    ("predict feature count", lambda c: c.model.predict(np.ones((2, 5), "float32"), verbose=0), ValueError,
     r"\(2, 5\)|5"),
    ("predict rank", lambda c: c.model.predict(np.ones((2, 4, 1), "float32"), verbose=0), ValueError,
     r"\(2, 4, 1\)"),
    ("predict batch_size=0", lambda c: c.model.predict(X, batch_size=0, verbose=0), ValueError, r"batch_size.*0"),
    ("predict verbose=7", lambda c: c.model.predict(X, verbose=7), ValueError, r"verbose.*7"),
    ("predict steps=-1", lambda c: c.model.predict(X, steps=-1, verbose=0), ValueError, r"steps.*-1"),
    ("predict dict for Sequential", lambda c: c.model.predict({"wrong": X}, verbose=0), TypeError,
     r"predict.*'wrong'.*'features'"),
    ("predict strings", lambda c: c.model.predict(np.array([["a"] * 4]), verbose=0), TypeError, r"dtype|<U1"),
    ("predict_on_batch rank", lambda c: c.model.predict_on_batch(np.ones((4,), "float32")), ValueError,
     r"\(4,\)"),
    ("summary bad line_length", lambda c: c.model.summary(line_length="x"), (TypeError, ValueError),
     r"line_length"),
    ("get_layer unknown", lambda c: c.model.get_layer("nope"), ValueError, r"nope"),
    ("to_backend unknown", lambda c: c.model.to_backend("jax"), ValueError, r"jax"),
    # --- compile / fit / evaluate ---------------------------------------------------------------
    ("compile unknown optimizer", lambda c: _other_model().compile(optimizer="adamz", loss="mse"), ValueError,
     r"adamz"),
    ("compile unknown loss", lambda c: _other_model().compile(optimizer="sgd", loss="msez"), ValueError, r"msez"),
    ("compile unknown metric", lambda c: _other_model().compile(optimizer="sgd", loss="mse", metrics=["accz"]),
     ValueError, r"accz"),
    ("compile loss dict unknown output", lambda c: _other_model().compile(optimizer="sgd", loss={"nope": "mse"}),
     ValueError, r"nope"),
    ("compile jit_compile", lambda c: _other_model().compile(optimizer="sgd", loss="mse", jit_compile="yes"),
     ValueError, r"jit_compile.*'yes'"),
    ("fit before compile", lambda c: _other_model().fit(X, Y, verbose=0), (RuntimeError, ValueError), r"compile"),
    ("evaluate before compile", lambda c: _other_model().evaluate(X, Y, verbose=0), (RuntimeError, ValueError),
     r"compile"),
    ("fit epochs=-1", lambda c: c.model.fit(X, Y, epochs=-1, verbose=0), ValueError, r"epochs.*-1"),
    ("fit epochs='2'", lambda c: c.model.fit(X, Y, epochs="2", verbose=0), ValueError, r"epochs.*'2'"),
    ("fit batch_size=0", lambda c: c.model.fit(X, Y, batch_size=0, verbose=0), ValueError, r"batch_size.*0"),
    ("fit batch_size=2.5", lambda c: c.model.fit(X, Y, batch_size=2.5, verbose=0), ValueError, r"batch_size.*2\.5"),
    ("fit verbose=3", lambda c: c.model.fit(X, Y, verbose=3), ValueError, r"verbose.*3"),
    ("fit shuffle='x'", lambda c: c.model.fit(X, Y, shuffle="x", verbose=0), ValueError, r"shuffle.*'x'"),
    ("fit validation_split=1.5", lambda c: c.model.fit(X, Y, validation_split=1.5, verbose=0), ValueError,
     r"validation_split.*1\.5"),
    ("fit validation_freq=0", lambda c: c.model.fit(X, Y, validation_freq=0, verbose=0), ValueError,
     r"validation_freq.*0"),
    ("fit steps_per_epoch=0", lambda c: c.model.fit(X, Y, steps_per_epoch=0, verbose=0), ValueError,
     r"steps_per_epoch.*0"),
    ("fit initial_epoch='a'", lambda c: c.model.fit(X, Y, initial_epoch="a", verbose=0), ValueError,
     r"initial_epoch.*'a'"),
    ("fit x None", lambda c: c.model.fit(None, Y, verbose=0), ValueError, r"x.*None"),
    ("fit length mismatch", lambda c: c.model.fit(X, Y[:10], verbose=0), ValueError, r"16.*10|10.*16"),
    ("fit y shape", lambda c: c.model.fit(X, np.zeros((16, 2, 2), "int64"), verbose=0), ValueError,
     r"\(16, 2, 2\)|y_true"),
    ("fit label out of range (first batch)", lambda c: c.model.fit(X, np.full(16, 5), verbose=0, shuffle=False),
     ValueError, r"received 5"),
    ("fit label negative", lambda c: c.model.fit(X, np.full(16, -1), verbose=0, shuffle=False), ValueError,
     r"received -1"),
    ("fit float non-integral labels", lambda c: c.model.fit(X, np.full(16, 0.5), verbose=0), ValueError, r"0\.5"),
    ("fit one-hot to sparse loss", lambda c: c.model.fit(X, Y_ONE_HOT, verbose=0), ValueError,
     r"one-hot|categorical_crossentropy"),
    ("fit feature count", lambda c: c.model.fit(np.ones((16, 5), "float32"), Y, verbose=0), ValueError,
     r"\(\w*,? ?5\)|5"),
    ("fit sample_weight length", lambda c: c.model.fit(X, Y, sample_weight=np.ones(3), verbose=0), ValueError,
     r"sample_weight.*3|3.*16"),
    ("fit class_weight bad", lambda c: c.model.fit(X, Y, class_weight={"a": 1.0}, verbose=0), (TypeError, ValueError),
     r"class_weight.*'a'"),
    ("fit class_weight list", lambda c: c.model.fit(X, Y, class_weight=[1.0], verbose=0), (TypeError, ValueError),
     r"class_weight"),
    ("fit validation_data arrays only", lambda c: c.model.fit(X, Y, validation_data=X, verbose=0), ValueError,
     r"validation_data"),
    ("fit validation_data shape", lambda c: c.model.fit(X, Y, validation_data=(X, Y_ONE_HOT), verbose=0),
     ValueError, r"validation_data"),
    ("fit validation_data features", lambda c: c.model.fit(X, Y, validation_data=(np.ones((4, 3), "float32"),
                                                                                 Y[:4]), verbose=0),
     ValueError, r"\(4, 3\)|3"),
    ("fit dict for Sequential", lambda c: c.model.fit({"wrong": X}, Y, verbose=0), TypeError,
     r"fit.*'wrong'.*'features'"),
    ("fit complex data", lambda c: c.model.fit(X.astype("complex64"), Y, verbose=0), TypeError, r"complex64"),
    ("fit string data", lambda c: c.model.fit(np.array([["a"] * 4] * 16), Y, verbose=0), TypeError, r"<U1|dtype"),
    ("fit y with generator", lambda c: c.model.fit(iter([(X, Y)]), Y, verbose=0), ValueError, r"`y`"),
    ("fit callbacks not callbacks", lambda c: c.model.fit(X, Y, callbacks=[1], verbose=0), TypeError, r"1|int"),
    ("fit empty data", lambda c: c.model.fit(X[:0], Y[:0], verbose=0), ValueError, r"empty|no batches|0"),
    ("evaluate batch_size=-2", lambda c: c.model.evaluate(X, Y, batch_size=-2, verbose=0), ValueError,
     r"batch_size.*-2"),
    ("evaluate label out of range", lambda c: c.model.evaluate(X, np.full(16, 9), verbose=0), ValueError,
     r"received 9"),
    ("evaluate no y", lambda c: c.model.evaluate(X, verbose=0), ValueError, r"y|target"),
    ("evaluate feature count", lambda c: c.model.evaluate(np.ones((16, 2), "float32"), Y, verbose=0), ValueError,
     r"2"),
    ("train_on_batch bad labels", lambda c: c.model.train_on_batch(X, np.full(16, 4)), ValueError, r"received 4"),
    ("train_on_batch class_weight", lambda c: c.model.train_on_batch(X, Y, class_weight=5), (TypeError, ValueError),
     r"class_weight"),
    ("test_on_batch no y", lambda c: c.model.test_on_batch(X), ValueError, r"y"),
    # --- losses / metrics -----------------------------------------------------------------------
    ("loss unknown name", lambda c: losses.get("msez"), ValueError, r"msez"),
    ("loss reduction", lambda c: losses.MeanSquaredError(reduction="avg"), ValueError, r"reduction.*'avg'"),
    ("Huber delta", lambda c: losses.Huber(delta=-1.0), ValueError, r"delta.*-1"),
    ("loss label_smoothing", lambda c: losses.CategoricalCrossentropy(label_smoothing=2.0), ValueError,
     r"label_smoothing.*2"),
    ("sparse CE out of range", lambda c: losses.sparse_categorical_crossentropy(np.array([3]), np.ones((1, 3))),
     ValueError, r"received 3"),
    ("sparse CE shape", lambda c: losses.sparse_categorical_crossentropy(np.zeros((2, 2), "int64"), np.ones((3, 3))),
     ValueError, r"\(2, 2\)"),
    ("mse shapes", lambda c: losses.mean_squared_error(np.ones((2, 3)), np.ones((2, 4))), ValueError,
     r"\(2, 3\).*\(2, 4\)"),
    ("categorical CE int labels", lambda c: losses.categorical_crossentropy(np.array([1, 2]), np.ones((2, 3))),
     ValueError, r"\(2,\)|shape"),
    ("metric unknown", lambda c: metrics.get("accz"), ValueError, r"accz"),
    ("TopK k=0", lambda c: metrics.TopKCategoricalAccuracy(k=0), ValueError, r"k.*0"),
    ("AUC thresholds=1", lambda c: metrics.AUC(num_thresholds=1), ValueError, r"num_thresholds.*1"),
    ("Precision thresholds=2", lambda c: metrics.Precision(thresholds=2.0), ValueError, r"threshold.*2"),
    ("F1 average", lambda c: metrics.F1Score(average="most"), ValueError, r"average.*'most'"),
    ("accuracy shapes", lambda c: metrics.categorical_accuracy(np.ones((2, 3)), np.ones((3, 3))), ValueError,
     r"\(2, 3\)|\(3, 3\)"),
    ("sparse accuracy shapes", lambda c: metrics.sparse_categorical_accuracy(np.zeros((4, 2)), np.ones((3, 3))),
     ValueError, r"\(4, 2\)"),
    ("MeanMetricWrapper non-callable", lambda c: metrics.MeanMetricWrapper(5), TypeError, r"5|callable"),
    # --- optimizers -----------------------------------------------------------------------------
    ("Adam lr=-1", lambda c: optimizers.Adam(learning_rate=-1), ValueError, r"learning_rate.*-1"),
    ("Adam lr=inf", lambda c: optimizers.Adam(learning_rate=float("inf")), ValueError, r"learning_rate.*inf"),
    ("Adam lr=nan", lambda c: optimizers.Adam(learning_rate=float("nan")), ValueError, r"learning_rate.*nan"),
    ("Adam lr='fast'", lambda c: optimizers.Adam(learning_rate="fast"), (TypeError, ValueError),
     r"learning_rate.*'fast'"),
    ("Adam beta_1", lambda c: optimizers.Adam(beta_1=1.5), ValueError, r"beta_1.*1\.5"),
    ("Adam epsilon", lambda c: optimizers.Adam(epsilon=-1.0), ValueError, r"epsilon.*-1"),
    ("SGD momentum", lambda c: optimizers.SGD(momentum=-0.5), ValueError, r"momentum.*-0\.5"),
    ("SGD clipnorm", lambda c: optimizers.SGD(clipnorm=-1.0), ValueError, r"clipnorm.*-1"),
    ("SGD clipvalue", lambda c: optimizers.SGD(clipvalue="x"), (TypeError, ValueError), r"clipvalue.*'x'"),
    ("RMSprop rho", lambda c: optimizers.RMSprop(rho=2.0), ValueError, r"rho.*2"),
    ("optimizer unknown", lambda c: optimizers.get("adamz"), ValueError, r"adamz"),
    ("set learning_rate negative", lambda c: setattr(c.model.optimizer, "learning_rate", -0.1), ValueError,
     r"learning_rate.*-0\.1"),
    ("schedule decay_steps", lambda c: optimizers.schedules.ExponentialDecay(0.1, decay_steps=0, decay_rate=0.5),
     ValueError, r"decay_steps.*0"),
    # --- callbacks ------------------------------------------------------------------------------
    ("EarlyStopping patience", lambda c: callbacks.EarlyStopping(patience=-1), ValueError, r"patience.*-1"),
    ("EarlyStopping mode", lambda c: callbacks.EarlyStopping(mode="best"), ValueError, r"mode.*'best'"),
    ("ReduceLROnPlateau factor", lambda c: callbacks.ReduceLROnPlateau(factor=1.5), ValueError, r"factor.*1\.5"),
    ("LearningRateScheduler", lambda c: callbacks.LearningRateScheduler(0.1), TypeError, r"schedule|0\.1"),
    ("ModelCheckpoint save_freq", lambda c: callbacks.ModelCheckpoint(c.path("m.h5"), save_freq="often"),
     ValueError, r"save_freq.*'often'"),
    ("ModelCheckpoint path type", lambda c: callbacks.ModelCheckpoint(123), TypeError, r"filepath|123"),
    ("CSVLogger missing dir", lambda c: c.model.fit(X, Y, verbose=0, callbacks=[
        callbacks.CSVLogger(c.path("missing/log.csv"))]), FileNotFoundError, r"CSVLogger.*missing"),
    ("LambdaCallback not callable", lambda c: callbacks.LambdaCallback(on_epoch_end=3), TypeError,
     r"on_epoch_end|3"),
    ("BackupAndRestore save_freq", lambda c: callbacks.BackupAndRestore(c.path("b"), save_freq=0),
     (ValueError, NotImplementedError), r"save_freq=0"),
    # --- saving ---------------------------------------------------------------------------------
    ("save .txt", lambda c: c.model.save(c.path("model.txt")), ValueError, r"model\.txt"),
    ("save into a directory", lambda c: c.model.save(c.dir + os.sep + "."), ValueError, r"\.h5|directory"),
    ("save missing dir", lambda c: c.model.save(c.path("missing/m.h5")), FileNotFoundError, r"missing"),
    ("save overwrite=False", lambda c: c.model.save(c.checkpoint, overwrite=False), FileExistsError,
     r"saved\.h5"),
    ("save path type", lambda c: c.model.save(42), TypeError, r"42|int"),
    ("save_weights .txt", lambda c: c.model.save_weights(c.path("w.txt")), ValueError, r"w\.txt"),
    ("load_model missing", lambda c: ember.load_model(c.path("nope.h5")), FileNotFoundError, r"nope\.h5"),
    ("load_model text file", lambda c: ember.load_model(c.text), ember.saving.CheckpointError, r"notes\.txt"),
    ("load_model weights file", lambda c: ember.load_model(c.weights), ember.saving.CheckpointError,
     r"saved\.weights\.h5.*weights"),
    ("load_weights other architecture", lambda c: _other_model().load_weights(c.weights), ValueError,
     r"saved\.weights\.h5|hidden"),
    ("load_weights into unbuilt mismatch", lambda c: ember.Sequential(
        [ember.Input((2,)), layers.Dense(3, name="hidden")]).load_weights(c.weights), ValueError, r"hidden|shape"),
    ("load_model path type", lambda c: ember.load_model(3.5), TypeError, r"3\.5|float"),
    ("load_model directory", lambda c: ember.load_model(c.dir), ember.saving.CheckpointError, r"directory"),
    # --- features -------------------------------------------------------------------------------
    ("PCA n_components=0", lambda c: features.PCA(n_components=0), ValueError, r"n_components.*0"),
    ("PCA too many components", lambda c: features.PCA(n_components=9).fit(X), ValueError, r"n_components.*9"),
    ("PCA fit 1-D", lambda c: features.PCA(2).fit(np.ones(5)), ValueError, r"\(5,\)|2-D|2D"),
    ("PCA transform unfitted", lambda c: features.PCA(2).transform(X), features.NotFittedError, r"PCA|fit"),
    ("PCA transform features", lambda c: features.PCA(2).fit(X).transform(np.ones((2, 3))), ValueError,
     r"3|\(2, 3\)"),
    ("StandardScaler unfitted", lambda c: features.StandardScaler().transform(X), features.NotFittedError,
     r"StandardScaler|fit"),
    ("MinMaxScaler range", lambda c: features.MinMaxScaler(feature_range=(1, 0)), ValueError, r"feature_range"),
    ("one_hot float", lambda c: features.one_hot(np.array([0.5, 1.0]), 3), TypeError, r"float|integer"),
    ("one_hot classes=0", lambda c: features.one_hot(np.array([0, 1]), 0), ValueError, r"0"),
    ("normalize norm", lambda c: features.normalize(X, norm="l7"), ValueError, r"norm.*'l7'"),
    ("standardize axis", lambda c: features.standardize(X, axis=5), ValueError, r"axis.*5"),
    ("segment_sum ids length", lambda c: features.segment_sum(X, np.array([0, 1])), ValueError, r"2|16"),
    # --- ops ------------------------------------------------------------------------------------
    ("ops.take out of bounds", lambda c: ops.take(X, np.array([7]), axis=1), IndexError,
     r"take: index 7 is out of bounds for axis 1 with size 4"),
    ("ops.take negative", lambda c: ops.take(X, np.array([-20]), axis=0), IndexError, r"take: index -20"),
    ("ops.take float indices", lambda c: ops.take(X, np.array([0.5]), axis=0), TypeError, r"integer"),
    ("ops.take_along_axis bounds", lambda c: ops.take_along_axis(X, np.full((16, 1), 9), axis=1), IndexError,
     r"take_along_axis: index 9 is out of bounds for axis 1 with size 4"),
    ("ops.add broadcast", lambda c: ops.add(X, np.ones(3, "float32")), ValueError,
     r"add: .*\(16, 4\), \(3,\)"),
    ("ops.multiply broadcast", lambda c: ops.multiply(X, np.ones((4, 16), "float32")), ValueError,
     r"multiply: .*\(16, 4\), \(4, 16\)"),
    ("ops.subtract broadcast", lambda c: ops.subtract(X, np.ones(5, "float32")), ValueError, r"subtract: .*\(5,\)"),
    ("ops.matmul", lambda c: ops.matmul(X, X), ValueError, r"matmul.*\(16, 4\)"),
    ("ops.ones str", lambda c: ops.ones("a"), TypeError, r"shape.*'a'"),
    ("ops.full str dim", lambda c: ops.full((2, "a"), 1.0), TypeError, r"shape.*'a'"),
    ("ops.zeros negative", lambda c: ops.zeros((-1, 2)), ValueError, r"\(-1, 2\)"),
    ("ops.reshape", lambda c: ops.reshape(X, (5, 5)), ValueError, r"reshape.*\(16, 4\).*\(5, 5\)"),
    ("ops.concatenate", lambda c: ops.concatenate([X, np.ones((2, 3), "float32")], axis=0), ValueError,
     r"concatenate.*\(2, 3\)"),
    ("ops.stack", lambda c: ops.stack([X, X[:2]]), ValueError, r"stack.*\(2, 4\)"),
    ("ops.broadcast_to", lambda c: ops.broadcast_to(X, (3, 3)), ValueError, r"broadcast_to.*\(3, 3\)"),
    ("ops.transpose perm", lambda c: ops.transpose(X, (0, 0)), ValueError, r"transpose.*\(0, 0\)"),
    ("ops.tile negative", lambda c: ops.tile(X, (-1, 1)), ValueError, r"tile: repeats.*-1"),
    ("ops.one_hot bool", lambda c: ops.one_hot(np.array([True]), 3), TypeError, r"one_hot.*bool"),
    ("ops.cast dtype", lambda c: ops.cast(X, "float99"), TypeError, r"float99"),
    ("ops.split", lambda c: ops.split(X, 3, axis=1), ValueError, r"split.*3"),
    ("ops.squeeze", lambda c: ops.squeeze(X, axis=0), ValueError, r"squeeze.*axis 0"),
    ("ops.expand_dims axis", lambda c: ops.expand_dims(X, 7), ValueError, r"axis.*7"),
    ("ops.sum axis", lambda c: ops.sum(X, axis=3), ValueError, r"axis.*3"),
    ("ops.mean axis str", lambda c: ops.mean(X, axis="a"), TypeError, r"axis.*'a'"),
    ("ops.arange step 0", lambda c: ops.arange(0, 5, 0), ValueError, r"arange.*step"),
    ("ops.dropout rate", lambda c: ops.random.dropout(X, 1.5), ValueError, r"rate.*1\.5"),
    ("ops.slice", lambda c: ops.slice(X, (0, 0), (20, 4)), ValueError, r"slice.*20"),
    ("ops.conv kernel rank", lambda c: ops.nn.conv(np.ones((1, 4, 4), "float32"), np.ones((3, 3, 1, 2), "float32")),
     ValueError, r"conv.*\(3, 3, 1, 2\)"),
    ("ops.linalg.inv singular", lambda c: ops.linalg.inv(np.zeros((2, 2), "float32")), np.linalg.LinAlgError,
     r"[Ss]ingular"),
    ("ops.linalg.cholesky", lambda c: ops.linalg.cholesky(-np.eye(2, dtype="float32")), np.linalg.LinAlgError,
     r"positive"),
    ("ops.linalg.inv non-square", lambda c: ops.linalg.inv(np.ones((2, 3), "float32")), ValueError,
     r"inv.*\(2, 3\)|square"),
    ("ops.convert_to_tensor str", lambda c: ops.convert_to_tensor("abc"), TypeError, r"str|<U3"),
    ("ops.nn.softmax axis", lambda c: ops.nn.softmax(X, axis=4), ValueError, r"axis.*4"),
    # --- autodiff -------------------------------------------------------------------------------
    ("tape watch non-array", lambda c: ember.GradientTape().watch("x"), TypeError, r"watch.*str"),
    ("tape gradient twice", lambda c: _gradient_twice(), RuntimeError, r"non-persistent.*once"),
    ("tape gradient int source", lambda c: _int_source_gradient(), TypeError, r"source 0.*int"),
    ("tape unconnected_gradients", lambda c: _tape_with(unconnected_gradients="zeros"), ValueError,
     r"unconnected_gradients.*'zeros'"),
    ("tape output_gradients structure", lambda c: _tape_with(output_gradients=[1.0, 2.0]), ValueError,
     r"output_gradients"),
    ("tape gradient before use", lambda c: ember.GradientTape().gradient(X, X), RuntimeError, r"nothing was recorded"),
    ("value_and_grad not callable", lambda c: ember.value_and_grad(3), TypeError, r"3|callable"),
    ("backend unknown", lambda c: ember.set_backend("jax"), ValueError, r"jax"),
    # --- data that used to give raw library tracebacks or misleading messages (issue #38) -------
    ("fit ragged nested list", lambda c: c.model.fit([[1.0] * 4, [1.0] * 2] + [[0.0] * 4] * 14, Y, verbose=0),
     ValueError, r"fit: x is a ragged nested list: x\[1\] has 2 element\(s\) where x\[0\] has 4.*pad the rows"),
    ("predict tuple (x, y)", lambda c: c.model.predict((X, Y), verbose=0), TypeError,
     r"predict: x is a tuple of 2 arrays \(shapes \(16, 4\), \(16,\)\).*one input \('features'.*evaluate\(x, y\)"),
    ("fit Dataset __len__ -1", lambda c: c.model.fit(_BatchesDataset(claimed=-1), verbose=0), ValueError,
     r"x: _BatchesDataset.__len__\(\) returned -1; it must return the number of batches as a non-negative int"),
    ("fit Dataset __len__ 2.5", lambda c: c.model.fit(_BatchesDataset(claimed=2.5), verbose=0), ValueError,
     r"__len__\(\) returned 2\.5; it must return the number of batches"),
    ("predict Dataset __len__ overstates", lambda c: c.model.predict(_BatchesDataset(batches=2, claimed=3), verbose=0),
     IndexError, r"__getitem__\(2\) raised IndexError \(no batch 2\) although _BatchesDataset.__len__\(\) returned 3"),
    ("fit Dataset __len__ overstates", lambda c: c.model.fit(_BatchesDataset(batches=0, claimed=2), verbose=0),
     IndexError, r"__getitem__\(0\) raised IndexError.*__len__\(\) returned 2.*make __len__ return"),
    ("fit rows holding str", lambda c: c.model.fit([["a", "b", "c", "d"]] * 16, Y, verbose=0), TypeError,
     r"fit: x is a list of rows, but x\[0\]\[0\] is 'a' \(str\), not a number"),
    ("fit rows holding None", lambda c: c.model.fit([[None, 1.0, 2.0, 3.0]] * 16, Y, verbose=0), TypeError,
     r"x\[0\]\[0\] is None \(NoneType\), not a number"),
    ("fit generator of dict batches", lambda c: c.model.fit(_dict_batches(), verbose=0), ValueError,
     r"no targets y: each batch is a dict \(keys \['features', 'y'\]\).*\(x, y\).*inputs: \['features'\]"),
    ("layer named '.'", lambda c: layers.Dense(3, name="."), ValueError, r"Dense: name '\.' is not allowed"),
    ("layer named '..'", lambda c: layers.Dense(3, name=".."), ValueError, r"Dense: name '\.\.' is not allowed"),
]


class _BatchesDataset(ember.data.Dataset):
    """``batches`` batches of 8 rows of X (with labels), while ``__len__`` claims ``claimed``."""

    def __init__(self, batches=2, claimed=2):
        super().__init__()
        self.batches, self.claimed = batches, claimed

    def __len__(self):
        return self.claimed

    def __getitem__(self, index):
        if index >= self.batches:
            raise IndexError(f"no batch {index}")
        return X[8 * index:8 * index + 8], Y[8 * index:8 * index + 8]


def _dict_batches():
    for start in (0, 8):
        yield {"features": X[start:start + 8], "y": Y[start:start + 8]}


def _gradient_twice():
    x = ops.convert_to_tensor(np.ones(3, "float32"))
    with ember.GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(ops.multiply(x, x))
    tape.gradient(y, x)
    tape.gradient(y, x)


def _int_source_gradient():
    x = ops.convert_to_tensor(np.ones(3, "int32"))
    with ember.GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(x)
    tape.gradient(y, x)


def _tape_with(**kwargs):
    x = ops.convert_to_tensor(np.ones(3, "float32"))
    with ember.GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(ops.multiply(x, x))
    tape.gradient(y, x, **kwargs)


@pytest.fixture(scope="module")
def trained():
    """One trained model and checkpoint directory per backend (cases must leave both unchanged)."""
    return {}


def _files(directory):
    out = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, directory)] = handle.read()
    return out


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_bad_input_raises_a_clear_error_and_changes_nothing(backend, trained, tmp_path_factory, case):
    name, call, error_type, pattern = case
    if backend not in trained:
        directory = str(tmp_path_factory.mktemp(f"corpus-{backend}"))
        model = _trained_model()
        context = Context(model, directory)
        model.save(context.checkpoint)
        model.save_weights(context.weights)
        with open(context.text, "w") as handle:
            handle.write("not a checkpoint\n")
        trained[backend] = context
    context = trained[backend]
    model = context.model
    before_state, before_files = state_snapshot(model), _files(context.dir)
    before_lr = model.optimizer.learning_rate
    with pytest.raises(error_type) as caught:
        call(context)
    message = str(caught.value)
    try:
        assert __import__("re").search(pattern, message), f"{name}: the message does not name the culprit: {message}"
        assert ember.get_backend() == backend, f"{name}: the active backend changed"
        assert same_state(state_snapshot(model), before_state), f"{name}: the model or optimizer state changed"
        assert model.optimizer.learning_rate == before_lr, f"{name}: the learning rate changed"
        assert _files(context.dir) == before_files, f"{name}: files changed"
    finally:  # a failing case must not spoil the next ones
        ember.set_backend(backend)
