// The 1-D k-means / k-medians dynamic program (OSRT Algorithm 1) with the early stop of
// Theorem 3.7: the losses of 1, 2, ... clusters of sorted items, each DP row by divide and
// conquer over the monotone split points (O(n log n) a row, O(n) memory).
#pragma once

#include "common.hpp"

namespace osrt {

// Constrained k-means losses D_k[n - 1], k = 1, 2, ... of items sorted by mean, from
// their statistics W, S, Q (n each). Stops after max_clusters, or (use_stop) after the
// first k whose gain D_{k-1} - D_k is at most stop_gain. Writes out[0..k); returns k >= 1.
i64 kmeans_losses(const double* W, const double* S, const double* Q, i64 n, i64 max_clusters,
                  double stop_gain, bool use_stop, double* out);

// Weighted 1-D k-medians losses of values v sorted ascending with weights w (the median of
// a cluster: its first item at which the cumulative weight reaches half of its weight).
i64 kmedians_losses(const double* v, const double* w, i64 n, i64 max_clusters,
                    double stop_gain, bool use_stop, double* out);

}  // namespace osrt
