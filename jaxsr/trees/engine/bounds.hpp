// The lower bounds of a subproblem (OSRT section 3): equivalent points (Theorem 3.3) with
// the one-step lookahead (Theorem 3.2), the k-Means equivalent points bound from the DP's
// losses (Theorem 3.5) with its early stop (Theorem 3.7), the levels that can matter to a
// support and the leaf budget under a cap. The hierarchical bound (Theorem 3.1) is the
// search's use of them (search.cpp).
#pragma once

#include "common.hpp"

namespace osrt {

// k-Means bound of the trees with at least min_leaves leaves from the first k >= 1 losses
// of 1, 2, ... clusters: min over C >= min_leaves of losses[C - 1] / norm + lam C; below
// min_leaves entries the missing loss is at least the last minus the last gain per extra
// cluster (convexity), and at least 0.
inline double kmeans_bound(const double* losses, i64 k, double lam, double norm,
                           double min_leaves) {
  if (double(k) >= min_leaves) {
    double best = INF;
    for (i64 c = i64(min_leaves); c <= k; ++c)
      best = std::min(best, objective(losses[c - 1], norm, lam, double(c)));
    return best;
  }
  const double gain = k >= 2 ? losses[k - 2] - losses[k - 1] : 0.0;
  const double lo = std::max(losses[k - 1] - (min_leaves - double(k)) * gain, 0.0);
  return objective(lo, norm, lam, min_leaves);
}

// The levels a subtree on a support (C classes, Nn samples, equivalence loss Eq, leaf
// cost leaf) can use to any purpose, at most d, at least 1: at most its classes and
// Nn / m1 leaves, and with lam > 0 at most the leaves h with Eq / norm + lam h below the
// leaf (Theorem 3.3).
inline i64 useful_levels(const Problem& P, double d, double C, double Nn, double Eq,
                         double leaf) {
  double r = std::min(std::min(C, std::floor(Nn / P.m1)), d);
  if (P.lam > 0) {
    const double gap = leaf - (P.equiv ? Eq / P.norm : 0.0);
    r = std::min(r, std::floor(gap / P.lam * (1 + 1e-9) + 1e-9));
  }
  return i64(std::max(r, 1.0));
}

// equivalent points loss of a support in objective units (0 without that bound)
inline double eq_loss(const Problem& P, double Eq) { return P.equiv ? Eq / P.norm : 0.0; }

// equivalent points bound of the trees that split (with the lookahead: 2 leaves)
inline double cheap_bound(const Problem& P, double Eq) {
  return objective(P.equiv ? Eq : 0.0, P.norm, P.lam, P.look);
}

// The most leaves of a tree that can cost less than cap (lam > 0): a tree with L leaves
// costs at least eq + lam L (Theorem 3.3). Returns 0 when not even a leaf can; <= 2^30.
inline i64 leaf_budget(const Problem& P, double Eq, double cap) {
  const double lam = P.lam, eq = eq_loss(P, Eq);
  const double x = (cap - eq) / lam;
  if (!(x < 1073741824.0)) return i64(1) << 30;
  i64 L = i64(std::max(std::floor(x), 0.0));
  while (L >= 1 && reaches(eq + lam * double(L), cap)) --L;
  while (!reaches(eq + lam * double(L + 1), cap)) ++L;
  return L;
}

// the classes' E and N summed over a support, and its number of classes
struct Totals {
  double E = 0.0, N = 0.0;
  i64 C = 0;
};

inline Totals support_totals(const Problem& P, const u8* mask) {
  Totals t;
  for (i64 u = 0; u < P.U; ++u)
    if (mask[u]) {
      t.E += P.E[u];
      t.N += P.N[u];
      ++t.C;
    }
  return t;
}

// the most leaves of a tree on a support with d levels: its classes, N / m1, 2^(d-1)
inline i64 most_leaves(const Problem& P, const Totals& t, i64 d) {
  i64 cmax = std::min(t.C, i64(std::floor(t.N / P.m1)));
  if (d - 1 < 40) cmax = std::min(cmax, i64(1) << (d - 1));
  return cmax;
}

}  // namespace osrt
