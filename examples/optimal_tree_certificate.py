"""An optimal sparse regression tree and its certificate of optimality.

OSRT minimises ``MSE / Var(y) + regularization * leaves`` over all trees on binary
features. The search keeps a lower and an upper bound for every subproblem; when they meet
at the root, the tree is *certified* optimal: ``lower_bound_ == objective_``. This script
fits a tree on binary data generated from a known tree, prints it with its certificate,
checks the certificate against a brute-force enumeration of every tree of depth <= 2, and
shows what stopping early does to the certificate (and that the tree returned then is never
worse than greedy CART's, on binary data and on the diabetes data with ~1100 thresholds).

Run: ``python examples/optimal_tree_certificate.py``
"""

import time
import warnings

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning

from jaxsr.trees import OptimalTreeRegressor

rng = np.random.default_rng(0)
n, m = 400, 8
X = rng.integers(0, 2, size=(n, m)).astype(np.float64)
frame = pd.DataFrame(X, columns=[f"b{j}" for j in range(m)])  # column names name the splits
# the truth: split on b0, then on b3 (left) and b5 (right), plus noise
y = np.where(X[:, 0] == 1, np.where(X[:, 3] == 1, 10.0, 6.0), np.where(X[:, 5] == 1, 2.0, 0.0))
y = y + rng.normal(0.0, 1.0, n)
lam = 0.01

tree = OptimalTreeRegressor(regularization=lam, depth_budget=3)
t0 = time.perf_counter()
tree.fit(frame, y)
seconds = time.perf_counter() - t0
print(tree.export_text())
print(f"objective   {tree.objective_:.12f}   (MSE/Var(y) + {lam} x {tree.n_leaves_} leaves)")
print(f"lower bound {tree.lower_bound_:.12f}")
print(f"optimal: {tree.optimal_}   gap {tree.gap_:.2e}   ({seconds:.2f} s with JIT compilation)")

# the objective, recomputed from the tree's own predictions
var = np.var(y)
recomputed = np.mean((np.asarray(tree.predict(frame)) - y) ** 2) / var + lam * tree.n_leaves_
print(f"recomputed from predictions: {recomputed:.12f}")
assert abs(recomputed - tree.objective_) < 1e-9


# brute force: every tree with at most 3 levels (one root split, optional splits below)
def leaf_loss(mask):
    return float(np.sum((y[mask] - y[mask].mean()) ** 2)) if mask.any() else 0.0


def best_subtree(mask, levels):
    """Optimal objective (in SSE/SST units + lam * leaves) of a subtree on ``mask``."""
    best = leaf_loss(mask) / (var * n) + lam
    if levels > 1:
        for j in range(m):
            left, right = mask & (X[:, j] == 1), mask & (X[:, j] == 0)
            if left.any() and right.any():
                best = min(best, best_subtree(left, levels - 1) + best_subtree(right, levels - 1))
    return best


t0 = time.perf_counter()
brute = best_subtree(np.ones(n, bool), 3)
print(
    f"brute force over all {1 + m * (1 + m) ** 2} trees of depth <= 3: {brute:.12f} "
    f"({time.perf_counter() - t0:.2f} s)"
)
assert abs(brute - tree.objective_) < 1e-9

# stopped early (here after 50 steps of the search, max_steps; time_limit stops it the
# same way, by the clock) with no depth limit, the search may end before the bounds meet:
# the certificate then tells how far from optimal the returned tree can be. The search
# starts from greedy CART (pruned at lambda) on the same binary features, so the tree
# returned is never worse than greedy CART's. A step limit, unlike a time limit, gives
# the same tree on a busy machine as on an idle one.
quick = OptimalTreeRegressor(regularization=0.001, depth_budget=None, max_steps=50)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)  # "stopped at its node limit"
    t0 = time.perf_counter()
    quick.fit(X, y)
    seconds = time.perf_counter() - t0
print(
    f"\n50 steps, lambda 0.001, no depth budget: {quick.n_leaves_} leaves, "
    f"objective {quick.objective_:.6f}, lower bound {quick.lower_bound_:.6f}, "
    f"status {quick.status_} (gap {quick.gap_:.2e}), fit {seconds:.3f} s"
)
assert quick.lower_bound_ <= quick.objective_ + 1e-12

# the same on real data with many thresholds: scikit-learn's diabetes data, every midpoint
# of every column a binary feature (about 1100), 200 steps of the search; greedy CART
# is scikit-learn's DecisionTreeRegressor on those features, pruned with the equivalent
# ccp_alpha (lambda * SST / n)
from sklearn.tree import DecisionTreeRegressor  # noqa: E402

from jaxsr.datasets import load_diabetes  # noqa: E402
from jaxsr.trees import Binarizer  # noqa: E402

Xd, yd = load_diabetes()
Xd, yd = np.asarray(Xd, dtype=float), np.asarray(yd, dtype=float)
lam = 0.001
big = OptimalTreeRegressor(
    regularization=lam, depth_budget=None, max_steps=200, binarizer=Binarizer(strategy="midpoints")
)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    t0 = time.perf_counter()
    big.fit(Xd, yd)
    seconds = time.perf_counter() - t0
Xbd = Binarizer(strategy="midpoints").fit_transform(Xd)
sst = float(np.sum((yd - yd.mean()) ** 2))
cart = DecisionTreeRegressor(ccp_alpha=lam * sst / yd.size, random_state=0).fit(Xbd, yd)
r = yd - cart.predict(Xbd)
cart_objective = float(r @ r / sst + lam * cart.get_n_leaves())
print(
    f"diabetes, {Xbd.shape[1]} binary features, lambda {lam}, 200 steps: "
    f"{big.n_leaves_} leaves (depth {big.depth_}), objective {big.objective_:.6f}, "
    f"lower bound {big.lower_bound_:.6f}, fit {seconds:.3f} s; greedy CART "
    f"(scikit-learn, ccp_alpha) {cart.get_n_leaves()} leaves, objective "
    f"{cart_objective:.6f}"
)
assert big.objective_ <= cart_objective * (1 + 1e-9)
