// The squared loss as a task: a leaf's loss is sum E + sum W (m - mu)^2 around the
// support's own mean; the split bound is the equivalent points bound with the k-Means
// bound (Theorems 3.3, 3.5, 3.7) on the classes in order of their means.
#pragma once

#include "task.hpp"

namespace osrt {

class SquaredTask final : public Task {
 public:
  double leaf_loss(const Problem& P, const u8* mask) const override;
  SupportBounds bounds(const Problem& P, const u8* mask, i64 d) const override;
  void split_losses(const Problem& P, const u8* mask, const i64* F, i64 nk, const double* a,
                    const double* comp, double* lossT, double* lossF) const override;
};

// constrained k-means losses of a support's classes sel[:n] (by mean), re-centred
i64 support_kmeans_losses(const Problem& P, const i64* sel, i64 n, i64 max_clusters,
                          double stop_gain, bool use_stop, double* out);

}  // namespace osrt
