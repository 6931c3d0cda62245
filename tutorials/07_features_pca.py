"""Tutorial 07 - Feature preprocessing: standardize and PCA before a classifier.

What you learn:
    * ``ember.features.StandardScaler``: learn each feature's mean and spread on the
      training set (``fit``), apply the *same* shift and scale to new data (``transform``);
      ``ember.features.standardize(x)`` is the one-shot function when no test set is
      involved;
    * ``ember.features.PCA``: project onto the directions of largest variance (its
      attributes and conventions are scikit-learn's: ``explained_variance_ratio_``,
      ``components_``, ``n_components=0.95`` keeps enough components for 95% of the
      variance);
    * why the order matters: PCA on raw features only finds the feature with the largest
      *units*; after standardizing it finds real structure;
    * everything runs on the active backend's arrays, so the transformed features feed a
      model directly.

The task: scikit-learn's breast cancer data set (569 tumours, 30 measurements whose scales
range from ~0.001 to ~4000), classified malignant/benign by the same small network fed
four ways: raw features, standardized, standardized + PCA keeping 95% of the variance,
and standardized + PCA with only 2 components.

Run it::

    python tutorials/07_features_pca.py [--backend numpy|torch|mlx] [--fast] [--plot DIR]

Expected test accuracy: raw ~0.63 (it does not learn at all: see step 4), standardized
~0.97, PCA 95% (10 components) ~0.95, PCA 2 components ~0.94. PCA's first component
explains ~98% of the raw variance but ~44% of the standardized variance.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

import ember
from ember import features, layers, ops

from _common import parse_args, print_results


def train_classifier(x_train, y_train, x_test, y_test, epochs):
    """Fit a small network (one hidden layer, one sigmoid output) and return its test accuracy."""
    ember.clear_session()  # the same layer names, hence the same initial weights, for every feature set
    n_features = ops.shape(x_train)[1]
    model = ember.Sequential([
        ember.Input((n_features,)),
        layers.Dense(16, activation="relu"),
        layers.Dense(1, activation="sigmoid"),
    ])
    model.build(seed=0)
    model.compile(optimizer=ember.optimizers.Adam(learning_rate=0.003), loss="binary_crossentropy",
                  metrics=["binary_accuracy"], seed=0)
    history = model.fit(x_train, y_train, batch_size=32, epochs=epochs, verbose=0)
    test = model.evaluate(x_test, y_test, verbose=0, return_dict=True)
    return test["binary_accuracy"], history.history["loss"]


def main(argv=None):
    args = parse_args(argv, "Tutorial 07: StandardScaler and PCA before a classifier.")

    # --- 1. Data ---------------------------------------------------------------------------
    data = load_breast_cancer()
    x_train, x_test, y_train, y_test = train_test_split(
        data.data.astype("float32"), data.target.astype("float32")[:, None], test_size=0.25, random_state=0,
        stratify=data.target)
    print(f"feature scales: smallest std {x_train.std(axis=0).min():.4f}, largest {x_train.std(axis=0).max():.1f}")

    # --- 2. Standardize: fit on the training set only ---------------------------------------------
    scaler = features.StandardScaler().fit(x_train)
    z_train = scaler.transform(x_train)  # arrays of the active backend
    z_test = scaler.transform(x_test)    # the *training* mean and scale: no peeking at the test set
    # The one-shot function computes the statistics of whatever it is given: on the training
    # set itself it is the same as fit + transform.
    same = np.allclose(ops.to_numpy(features.standardize(x_train)), ops.to_numpy(z_train), atol=1e-5)
    print(f"standardize(x_train) == scaler.transform(x_train): {same}")

    # --- 3. PCA, and why it comes after standardizing -----------------------------------------------
    raw_pca = features.PCA().fit(x_train)
    std_pca = features.PCA().fit(z_train)
    raw_first = float(ops.to_numpy(raw_pca.explained_variance_ratio_)[0])
    std_ratios = ops.to_numpy(std_pca.explained_variance_ratio_)
    print(f"variance explained by the first component: raw features {raw_first:.3f}, "
          f"standardized {std_ratios[0]:.3f}")
    # The raw first component is essentially one feature (the one with the largest units):
    top = int(np.argmax(np.abs(ops.to_numpy(raw_pca.components_)[0])))
    print(f"  raw PC1 is dominated by '{data.feature_names[top]}' (std {x_train[:, top].std():.0f})")

    pca95 = features.PCA(n_components=0.95).fit(z_train)  # as many components as 95% of the variance needs
    pca2 = features.PCA(n_components=2).fit(z_train)
    print(f"PCA(0.95) keeps {pca95.n_components_} of 30 components; cumulative variance: "
          + ", ".join(f"{k}: {np.cumsum(std_ratios)[k - 1]:.2f}" for k in (1, 2, 5, pca95.n_components_)))

    # --- 4. The same classifier on four feature sets -------------------------------------------------
    # Expect the raw features to fail: inputs in the thousands saturate the sigmoid output
    # from the first step, its gradient vanishes, and the network keeps predicting the
    # majority class ("benign", 63% of the test set).
    epochs = 8 if args.fast else 40
    feature_sets = {
        "raw": (x_train, x_test),
        "standardized": (z_train, z_test),
        f"pca95 ({pca95.n_components_} comp.)": (pca95.transform(z_train), pca95.transform(z_test)),
        "pca2": (pca2.transform(z_train), pca2.transform(z_test)),
    }
    accuracies, losses = {}, {}
    start = time.perf_counter()
    for name, (train_features, test_features) in feature_sets.items():
        accuracies[name], losses[name] = train_classifier(train_features, y_train, test_features, y_test, epochs)
        print(f"{name:<20} test accuracy {accuracies[name]:.4f}   training loss "
              f"{losses[name][0]:.3f} -> {losses[name][-1]:.3f}")
    seconds = time.perf_counter() - start

    if args.plot is not None:
        import matplotlib
        matplotlib.use("Agg")  # files only, never a window
        import matplotlib.pyplot as plt

        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
        left.plot(np.arange(1, 31), np.cumsum(std_ratios), "o-", markersize=3)
        left.axhline(0.95, color="grey", linestyle=":")
        left.set(xlabel="components", ylabel="cumulative explained variance", title="PCA of standardized features")
        projected = ops.to_numpy(pca2.transform(z_train))
        for label, name in enumerate(data.target_names):
            chosen = y_train[:, 0] == label
            right.scatter(projected[chosen, 0], projected[chosen, 1], s=8, label=name)
        right.set(xlabel="PC 1", ylabel="PC 2", title="Training tumours in the first two components")
        right.legend()
        fig.savefig(args.plot / "07_pca.png", dpi=120, bbox_inches="tight")
        plt.close(fig)
        print("wrote", args.plot / "07_pca.png")

    results = {
        "backend": args.backend,
        "epochs": epochs,
        "raw_accuracy": accuracies["raw"],
        "standardized_accuracy": accuracies["standardized"],
        "pca95_accuracy": accuracies[f"pca95 ({pca95.n_components_} comp.)"],
        "pca2_accuracy": accuracies["pca2"],
        "pca95_components": pca95.n_components_,
        "raw_first_component_variance": raw_first,
        "standardized_first_component_variance": float(std_ratios[0]),
        "explained_variance_ratio": std_ratios.tolist(),
        "first_loss": losses["standardized"][0],
        "final_loss": losses["standardized"][-1],
        "seconds": seconds,
    }
    print_results("07 features: standardize + PCA",
                  {k: v for k, v in results.items() if k != "explained_variance_ratio"})
    return results


if __name__ == "__main__":
    main()
