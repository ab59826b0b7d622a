// The best least-squares stump of one boosting stage over presorted columns: the splits of
// the Binarizer's boosted reference ensemble (jaxsr/trees/binarize.py), one pass a column.
#pragma once

#include "common.hpp"

namespace osrt {

struct Stump {
  double score;  // S_L^2 / W_L + S_R^2 / W_R of the best split (-inf: none)
  i64 feature;   // its column (-1: none)
  i64 pos;       // its position: the first pos + 1 samples of the column's order go left
  double sl, wl; // the left child's weighted sum of residuals and its weight
};

// order (p, n): each column's sample order; cand (p, n - 1): a split after position q is
// allowed; g = w * residual, w (n each); S = sum g, Wt = sum w. The first split of the
// largest score in column order, then position order (strictly larger replaces).
Stump best_stump(const i64* order, const u8* cand, const double* g, const double* w, i64 n,
                 i64 p, double S, double Wt);

}  // namespace osrt
