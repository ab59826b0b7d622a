// The terminal solver: exact best trees with 1 to 3 levels of splits of one support,
// squared loss (STreeD / MurTree's specialised depth-two solver, one level deeper), from
// the single, pair and triple statistics of the support's classes.
#pragma once

#include "common.hpp"

namespace osrt {

// Element operations of one call with `levels` split levels on n classes and M features
// (rough; times a call before it is made under a time limit).
inline double kernel_work(i64 M, i64 n, i64 levels) {
  const double m = double(M), c = double(n);
  if (levels >= 3) return c * m * m * 3.0 + 40.0 * m * m * m + 1.0;
  return c * m * 3.0 * (levels == 2 ? m : 1.0) + 40.0 * m * m + 1.0;
}

// ones[u, :nones[u]]: the features set in row u of the (U, M) 0/1 matrix X, increasing.
void feature_lists(const u8* X, i64 U, i64 M, i64* ones, i64* nones);

// The features that split a support in distinct ways: keep[:k], in increasing order, the
// lowest feature of each distinct split that is not constant on the support (equal or
// complementary columns make the same split). Returns k.
i64 support_splits(const u8* mask, const u8* X, i64 U, i64 M, i64* keep);

// The best tree with at most `levels` (1-3) split levels of the classes X (U, M) with
// statistics st (U, 4: W, S, Q, N), per root feature: split[f] its cost (loss units;
// inf where a side has fewer than m1 samples). Returns the cost of one leaf.
double subtree_splits(const u8* X, const double* st, i64 U, i64 M, i64 levels, double lamn,
                      double m1, double* split);

// Exact best tree with at most `levels` split levels on a support (squared loss): the
// classes' statistics re-centred on the support's mean, its distinct splits, near-ties
// (1e-12 relative) to the leaf, then to the lowest feature. Returns (cost in loss units,
// root feature or -1 for a leaf).
std::pair<double, i64> support_subtree(const Problem& P, const u8* mask, i64 levels,
                                       double lamn);

}  // namespace osrt
