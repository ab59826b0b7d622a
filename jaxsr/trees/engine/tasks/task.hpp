// A loss as a task (STreeD's tasks/): what the one search needs to know of it -- the loss
// of one leaf, the losses of the two children of every split of a support, and a new
// subproblem's leaf and lower bounds.
#pragma once

#include "../common.hpp"

namespace osrt {

struct SupportBounds {
  double leaf;  // loss of one leaf (internal units)
  double b;     // lower bound of every tree that splits (objective units)
  double deep;  // lower bound of the trees the terminal solver does not cover
  i64 n_kmeans; // k-means / k-medians bounds computed (0 or 1)
};

class Task {
 public:
  virtual ~Task() = default;
  // loss of one leaf on the support (internal units)
  virtual double leaf_loss(const Problem& P, const u8* mask) const = 0;
  // the leaf and lower bounds of a new subproblem with d levels
  virtual SupportBounds bounds(const Problem& P, const u8* mask, i64 d) const = 0;
  // losses of the children of the splits F[:nk] of a support (internal units): the true
  // child (feature set) into lossT, the false one into lossF; a, comp (nk, 6) their
  // statistics (W, S, Q re-centred on the support's mean, E, N, C)
  virtual void split_losses(const Problem& P, const u8* mask, const i64* F, i64 nk,
                            const double* a, const double* comp, double* lossT,
                            double* lossF) const = 0;
};

}  // namespace osrt
