// The absolute loss as a task: a leaf's loss is sum w |y - median| over its samples, the
// median the first sample (in y order) at which the cumulative weight reaches half of the
// total; the split bound is the equivalent points bound with the k-medians bound of the
// support's distinct targets (Theorem 3.5 relaxed: valid, weaker than the constrained
// problem) for subproblems with at least 3 levels.
#pragma once

#include "task.hpp"

namespace osrt {

class AbsoluteTask final : public Task {
 public:
  double leaf_loss(const Problem& P, const u8* mask) const override;
  SupportBounds bounds(const Problem& P, const u8* mask, i64 d) const override;
  void split_losses(const Problem& P, const u8* mask, const i64* F, i64 nk, const double* a,
                    const double* comp, double* lossT, double* lossF) const override;
};

}  // namespace osrt
