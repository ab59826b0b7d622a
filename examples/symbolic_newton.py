"""Newton's law of universal gravitation recovered by deterministic symbolic regression.

The experiment of section 3 of the DoME paper: 1000 samples with two masses in
[1e23, 1e25] kg and a distance in [1e8, 1e12] m, target F = G * m1 * m2 / d^2 with
G = 6.67392e-11. Strategy 1 and, because the targets span twelve orders of magnitude, a
goal MSE equal to the mean of the target. The paper (Table 3) needs 4 iterations, all of them
constant-variable searches at the constants, and returns
((((6.673919999999998e-11 / x3) * x1) * x2) / x3).

Run: ``python examples/symbolic_newton.py``
"""

import time
import warnings

import numpy as np
import sympy

from jaxsr.datasets import GRAVITATIONAL_CONSTANT, make_newton_gravitation
from jaxsr.symbolic import ExtrapolationWarning, SymbolicRegressor

X, y = make_newton_gravitation(n_samples=1000, seed=0)
goal = float(np.mean(y))
model = SymbolicRegressor(
    strategy=1, beam_width=1, goal_mse=goal, rational_start=False
)  # the paper's greedy search

t0 = time.perf_counter()
model.fit(X, y)
seconds = time.perf_counter() - t0

print(f"iteration 0: {goal:.16g} (the mean of the target)")
for step in model.history_:
    print(
        f"iteration {step['iteration']}: {step['search']} search at node {step['node']}: "
        f"{step['expression']}   MSE {step['mse']:.4e}"
    )
print(f"\nrecovered: F = {model.expression_}")
print(f"           F = {sympy.simplify(model.sympy())}   (simplified by sympy)")
print(f"{model.n_iterations_} iterations in {seconds:.2f} s (with JIT compilation)")

# predict warns (ExtrapolationWarning) for rows outside the box of the training data; a
# few of the new samples, and (1, 1, 1) below, are outside it on purpose: the law holds there
warnings.simplefilter("ignore", ExtrapolationWarning)

# the law holds on samples the model never saw
X_new, y_new = make_newton_gravitation(n_samples=1000, seed=1)
rel = np.abs(np.asarray(model.predict(X_new)) - y_new) / y_new
print(f"largest relative error on 1000 new samples: {rel.max():.2e}")
assert rel.max() < 1e-9, "the law was not recovered"

# the recovered constant is G
G = float(np.asarray(model.predict(np.array([[1.0, 1.0, 1.0]])))[0])
print(f"F(m1=1, m2=1, d=1) = {G!r}  (G = {GRAVITATIONAL_CONSTANT!r})")
