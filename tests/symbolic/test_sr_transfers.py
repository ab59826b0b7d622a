"""Device-to-host transfers of a greedy iteration: with the candidates' checks batched
(``strategies.BATCH_CHECKS``, the accelerators' path, forced here on the CPU) an iteration
of strategy 1 reads the device twice, both explicit (``jax.device_get``): the searches'
scores and the candidates' checks. Any other read of a device array's value (``float(x)``,
``np.asarray(x)``, ``bool(x)``) is counted as an implicit transfer, which must not happen:
on an accelerator each one waits for the device."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.array import ArrayImpl

from jaxsr.symbolic import strategies
from jaxsr.symbolic.strategies import DomeSearch


def _engine():
    rng = np.random.default_rng(0)
    X = rng.uniform(1.0, 2.0, (256, 3))
    y = X[:, 0] * X[:, 1] / X[:, 2] + X[:, 1]
    return DomeSearch(
        jnp.asarray(X.T),
        jnp.asarray(y),
        np.ones(3, bool),
        max_nodes=31,
        max_height=None,
        min_improvement=1e-6,
        feature_names=None,
        weights=jnp.ones(256),
    )


@pytest.fixture
def transfers(monkeypatch):
    """``{"explicit": [...], "implicit": [...]}``: per stage (the first: the setup;
    append a 0 to each before the next), the ``jax.device_get`` calls and the other
    reads of an array's value."""
    log = {"explicit": [0], "implicit": [0]}
    inside = [False]
    real_get, real_value = jax.device_get, ArrayImpl._value

    def device_get(x):
        log["explicit"][-1] += 1
        inside[0] = True
        try:
            return real_get(x)
        finally:
            inside[0] = False

    def value(self):
        if not inside[0] and self._npy_value is None:
            log["implicit"][-1] += 1
        return real_value.fget(self)

    monkeypatch.setattr(jax, "device_get", device_get)
    monkeypatch.setattr(ArrayImpl, "_value", property(value))
    return log


@pytest.mark.parametrize("batched", [True, False])
def test_transfers_per_greedy_iteration(monkeypatch, transfers, batched):
    monkeypatch.setattr(strategies, "BATCH_CHECKS", batched)
    eng = _engine()
    changes = 0
    for _ in range(6):
        transfers["explicit"].append(0)
        transfers["implicit"].append(0)
        if eng.step(1) is None:
            break
        changes += 1
    assert changes >= 3
    explicit, implicit = (transfers[k][1 : changes + 1] for k in ("explicit", "implicit"))
    assert implicit == [0] * changes
    if batched:  # the scores, then the checks
        assert explicit == [2] * changes
    else:  # the scores, then one check per candidate tried
        assert all(2 <= e <= 1 + strategies.MAX_TRIES for e in explicit)


def test_implicit_reads_are_counted(transfers):
    """The counter sees a ``float()`` of a device array (so the test above can fail)."""
    transfers["explicit"].append(0)
    transfers["implicit"].append(0)
    x = jnp.arange(3.0) * 2.0
    float(x[1])
    jax.device_get(x * 3.0)
    assert transfers["implicit"][-1] == 1 and transfers["explicit"][-1] == 1


@pytest.mark.parametrize("batched", [True, False])
def test_pruning_checks_a_round_in_one_transfer(monkeypatch, transfers, batched):
    """The pruning's deletions of one round are checked in one device call with the batch;
    both ways prune the same tree to the same result."""
    from jaxsr.symbolic import Expression

    monkeypatch.setattr(strategies, "BATCH_CHECKS", batched)
    eng = _engine()
    tree = Expression.parse("(((x1 * x2) / x3) + x2) + (0.0 * x3)", ["x1", "x2", "x3"])
    eng.expr = tree
    eng.mse = eng._true_mse(tree)[0]
    transfers["explicit"].append(0)
    transfers["implicit"].append(0)
    assert eng.prune() == 4
    assert eng.expr.to_string() == "(((x1 * x2) / x3) + x2)"
    assert transfers["implicit"][-1] == 0
    # round 1 finds the deletion at its second trial (the root's left child); round 2
    # tries all 6 deletions of the 7-node tree (3 binary nodes) and keeps none
    want = 2 if batched else 2 + 6
    assert transfers["explicit"][-1] == want
