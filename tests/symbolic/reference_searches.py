"""Oracle for the batched searches: every (node, candidate) pair scored one by one through
:func:`optimal_constant` (no closed-form matrix product, no chunking), with the forbidden
sets, exclusions and limits of :func:`jaxsr.symbolic.search_all` written out in numpy.

This is the engine before the batched kernels (one candidate row at a time), kept as the
reference the tests compare ``search_all`` against.
"""

import jax
import jax.numpy as jnp
import numpy as np

from jaxsr.symbolic import child_equation, child_forbidden, optimal_constant
from jaxsr.symbolic.expression import ADD, CONST, DIV, MUL, SUB, VAR
from jaxsr.symbolic.searches import CE_OPS, CV_OPS


@jax.jit
def _rows(a, b, c, d, S, n_used, W, ops):
    """``(k, f, ok)`` of the rows ``k op W[r]`` of one node, ``(R,)`` each."""

    def one(w, op):
        a2, b2, c2, d2 = child_equation(op, True, a, b, c, d, w)
        S2 = child_forbidden(op, True, S, w[None])
        k, f, ok = optimal_constant(a2, b2, c2, d2, S2, n_used)
        used = jnp.arange(S.shape[0]) < n_used
        hit = jnp.any((jnp.isnan(S2) | (S2 == k)) & used[:, None])
        return k, f, ok & ~hit  # the solver already excludes forbidden values

    return jax.vmap(one)(W, ops)


def reference_search_all(tree, sem, eqs, S, XT, masks, var_mask, max_nodes, max_height):
    """Same outputs as :func:`jaxsr.symbolic.search_all`, as numpy arrays."""
    t = {k: np.asarray(v) for k, v in tree._asdict().items()}
    sem, XT = np.asarray(sem), np.asarray(XT)
    a, b, c, d = (np.asarray(v) for v in eqs)
    S = np.asarray(S)
    masks, var_mask = np.asarray(masks, bool), np.asarray(var_mask, bool)
    cap, M = sem.shape[0], XT.shape[0]
    n = int(t["n_nodes"])
    with np.errstate(all="ignore"):
        base = np.mean(((a * sem - b) / (c * sem - d)) ** 2, axis=-1)
    out = dict(
        constant=np.full(cap, -np.inf),
        constant_k=np.full(cap, np.nan),
        variable=np.full((cap, M), -np.inf),
        constant_variable=np.full((cap, M, 4), -np.inf),
        constant_variable_k=np.full((cap, M, 4), np.nan),
        constant_expression=np.full((cap, 2), -np.inf),
        constant_expression_k=np.full((cap, 2), np.nan),
    )

    def red(j, f, ok):
        r = base[j] - f
        return r if ok and np.isfinite(r) else -np.inf

    for j in range(n):
        op, left, right = t["op"][j], t["left"][j], t["right"][j]
        used = np.arange(S.shape[1]) < t["n_slots"][j]

        def forbidden(v, j=j, used=used):
            return bool(np.any((np.isnan(S[j]) | (S[j] == v)) & used[:, None]))

        W, ops, where = [], [], []
        if masks[0, j]:
            W.append(np.zeros_like(sem[j]))
            ops.append(ADD)
            where.append(("c",))
        cv_room = (max_nodes - n + t["size"][j] >= 3) and (t["depth"][j] + 2 <= max_height)
        if masks[2, j] and cv_room:
            for m in range(M):
                for o, cop in enumerate(CV_OPS):
                    hides = (
                        op == cop
                        and t["op"][left] == CONST
                        and t["op"][right] == VAR
                        and t["feature"][right] == m
                    )
                    if not var_mask[m] or hides or (cop == DIV and np.any(XT[m] == 0)):
                        continue
                    W.append(XT[m])
                    ops.append(cop)
                    where.append(("cv", m, o))
        ce_room = (max_nodes - n >= 2) and (t["depth"][j] + t["height"][j] + 1 <= max_height)
        if masks[3, j] and ce_room and op >= ADD:
            const_child = t["op"][left] == CONST or t["op"][right] == CONST
            for o, cop in enumerate(CE_OPS):
                if const_child and (
                    (cop == ADD and op in (ADD, SUB)) or (cop == MUL and op in (MUL, DIV))
                ):
                    continue
                W.append(sem[j])
                ops.append(cop)
                where.append(("ce", o))
        if W:
            n_rows = 1 + 4 * M + 2  # one padded shape: compiled once
            Wp = np.zeros((n_rows, sem.shape[1]))
            Wp[: len(W)] = np.stack(W)
            opp = np.full(n_rows, ADD, np.int32)
            opp[: len(ops)] = ops
            ks, fs, oks = (
                np.asarray(v)[: len(W)]
                for v in _rows(
                    a[j], b[j], c[j], d[j], S[j], t["n_slots"][j], jnp.asarray(Wp), jnp.asarray(opp)
                )
            )
            for (kind, *idx), k, f, ok in zip(where, ks, fs, oks, strict=True):
                if kind == "c":
                    out["constant"][j], out["constant_k"][j] = red(j, f, ok), k
                elif kind == "cv":
                    out["constant_variable"][(j, *idx)] = red(j, f, ok)
                    out["constant_variable_k"][(j, *idx)] = k
                else:
                    out["constant_expression"][(j, *idx)] = red(j, f, ok)
                    out["constant_expression_k"][(j, *idx)] = k
        if masks[1, j]:
            for m in range(M):
                if not var_mask[m] or (op == VAR and t["feature"][j] == m):
                    continue
                with np.errstate(all="ignore"):
                    f = np.mean(((a[j] * XT[m] - b[j]) / (c[j] * XT[m] - d[j])) ** 2)
                out["variable"][j, m] = red(j, f, np.isfinite(f) and not forbidden(XT[m]))
    return out


__all__ = ["reference_search_all", "SUB"]
