"""A real dataset, binarized, fitted to provable optimality.

OSRT splits on binary features, so real-valued measurements are first turned into tests
``x <= threshold`` by a ``Binarizer`` (OSRT section 2 lists the ways; the paper uses
buckets). This script takes the UCI Real Estate Valuation data from the project's shared
data folder when it is found (``shared/data/osrt/raw/real_estate``, 414 sales in Taipei,
price per unit area), else scikit-learn's diabetes data, and fits an optimal tree with two
binarizers: quantile buckets and the thresholds of a gradient-boosted reference model.

Run: ``python examples/binarized_real_dataset.py``
"""

import time

import numpy as np

from jaxsr.datasets import load_diabetes, load_shared_csv, shared_data_dir
from jaxsr.trees import Binarizer, OptimalTreeRegressor

root = shared_data_dir(required=False)
if root is not None and (root / "osrt/raw/real_estate/real_estate.csv").is_file():
    X, y = load_shared_csv(
        "osrt/raw/real_estate/real_estate.csv",
        target="Y house price of unit area",
        encoding="utf-8-sig",
    )
    X = X.drop(columns=["No"])  # a row number, not a measurement
    print(
        f"UCI Real Estate Valuation (shared data folder {root}): {X.shape[0]} sales, "
        f"{X.shape[1]} measurements; target: price per unit area"
    )
else:
    X, y = load_diabetes()
    print(
        "shared data folder not found; scikit-learn's diabetes data: "
        f"{X.shape[0]} patients, {X.shape[1]} measurements"
    )

rng = np.random.default_rng(0)
test = np.zeros(len(y), bool)
test[rng.permutation(len(y))[: len(y) // 4]] = True
X_train, X_test, y_train, y_test = X[~test], X[test], y[~test], y[test]

for binarizer in (
    Binarizer(strategy="quantile", n_thresholds=4),
    Binarizer(strategy="gbdt", max_features=30),
):
    tree = OptimalTreeRegressor(regularization=0.01, depth_budget=4, binarizer=binarizer)
    t0 = time.perf_counter()
    tree.fit(X_train, y_train)
    seconds = time.perf_counter() - t0
    n_binary = len(tree.binarizer_.feature_names_out_)
    print(
        f"\n== binarizer {binarizer.strategy!r}: {n_binary} binary features "
        f"from {X.shape[1]} columns"
    )
    print(tree.export_text())
    print(
        f"certificate: objective {tree.objective_:.6f}, lower bound {tree.lower_bound_:.6f}, "
        f"optimal: {tree.optimal_}; {tree.n_leaves_} leaves; {seconds:.2f} s"
    )
    print(f"R^2 train {tree.score(X_train, y_train):.3f}, test {tree.score(X_test, y_test):.3f}")
    assert tree.optimal_
