#include "stumps.hpp"

namespace osrt {

Stump best_stump(const i64* order, const u8* cand, const double* g, const double* w, i64 n,
                 i64 p, double S, double Wt) {
  Stump best{-INF, -1, -1, 0.0, 0.0};
  for (i64 f = 0; f < p; ++f) {
    const i64* o = order + f * n;
    const u8* c = cand + f * (n - 1);
    double sl = 0.0, wl = 0.0;
    for (i64 q = 0; q + 1 < n; ++q) {
      const i64 i = o[q];
      sl += g[i];
      wl += w[i];
      if (!c[q]) continue;
      const double sr = S - sl, wr = Wt - wl;
      const double score = sl * sl / wl + sr * sr / wr;
      if (score > best.score) best = {score, f, q, sl, wl};
    }
  }
  return best;
}

}  // namespace osrt
