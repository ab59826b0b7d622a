// The arithmetic every part of the engine shares: the objective (OSRT eq. 1), the
// squared-loss sums re-centred on a support's mean, the rounding tolerance of every
// prune / solved test, and the hash of a bit-packed support.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace osrt {

using i64 = std::int64_t;
using u64 = std::uint64_t;
using u8 = std::uint8_t;

inline constexpr double INF = std::numeric_limits<double>::infinity();
inline constexpr double TINY = std::numeric_limits<double>::min();
inline constexpr double RTOL = 1e-12;  // relative tolerance of every prune / solved test
inline constexpr i64 GREEDY = -3;      // Entry.feat of the root: its best tree is the incumbent
inline constexpr i64 UNTRIED = -2;     // Entry.klev: the kernel bound is still to be computed

// The four statistics (W, S, Q, N) of one class, added to a sum of four: one vector add
// where the compiler has vector extensions (GCC, Clang: two SSE2 adds on plain x86-64),
// else four scalar adds; the same floats either way.
struct Stat4 {
#if defined(__GNUC__)
  typedef double V __attribute__((vector_size(32), aligned(8), may_alias));
  V v;
  explicit Stat4(const double* s) { std::copy(s, s + 4, reinterpret_cast<double*>(&v)); }
  void add_to(double* t) const { *reinterpret_cast<V*>(t) += v; }
#else
  double v[4];
  explicit Stat4(const double* s) { std::copy(s, s + 4, v); }
  void add_to(double* t) const {
    t[0] += v[0];
    t[1] += v[1];
    t[2] += v[2];
    t[3] += v[3];
  }
#endif
};

// a >= b up to the relative rounding tolerance (b may be inf)
inline bool reaches(double a, double b) {
  return a >= (b > 0 ? b * (1.0 - RTOL) : b * (1.0 + RTOL));
}

// a < b by more than the rounding tolerance: near-ties keep the tree found first
inline bool improves(double a, double b) { return b > 0 ? a < b * (1.0 - RTOL) : a < b; }

// the objective of `leaves` leaves of summed loss `loss`: loss / norm + lam * leaves
inline double objective(double loss, double norm, double lam, double leaves = 1.0) {
  return loss / norm + lam * leaves;
}

// weighted mean St / Wt of a support (0 for an empty one)
inline double centre(double Wt, double St) { return Wt > 0.0 ? St / Wt : 0.0; }

// squared-loss sums of a class around a centre mu: S = W (m - mu), Q = E + W (m - mu)^2
inline void recentred(double W, double mean, double E, double mu, double& S, double& Q) {
  const double d = mean - mu;
  S = W * d;
  Q = E + W * d * d;
}

// weighted sum of squared errors around the weighted mean, max(Q - S^2 / W, 0)
inline double sse(double w, double s, double q) {
  const double v = q - s * s / std::max(w, TINY);
  return v > 0.0 ? v : 0.0;
}

inline u64 hash_words(const u64* w, i64 nw) {
  u64 h = 0x9E3779B97F4A7C15ULL;
  for (i64 j = 0; j < nw; ++j) {
    h ^= w[j];
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 31;
  }
  return h;
}

// The constant data of one fit: the equivalence classes (unique binary rows) and their
// statistics, the samples sorted by target (absolute loss), and the search's parameters.
struct Problem {
  i64 U = 0, M = 0, nw = 1;
  std::vector<u8> X;       // (U, M) 0/1 class rows
  std::vector<i64> ones;   // (U, M) the features set per class (first nones[u])
  std::vector<i64> nones;  // (U,)
  std::vector<u64> colw;   // (M, nw) packed feature columns
  std::vector<double> W, mean, E, N;  // (U,) class weight, mean target, internal loss, samples
  std::vector<i64> korder;            // (U,) classes by increasing mean
  std::vector<double> ys, ws;         // (n,) sorted internal targets, weights (absolute loss)
  std::vector<i64> cls_s;             // (n,) their classes
  double lam = 0, norm = 1, m1 = 1, look = 2, kmedians_max = 20000;
  i64 kl = 0;
  bool equiv = true, kmeans = true, hier = true, l1 = false, device = false;

  const u8* row(i64 u) const { return X.data() + u * M; }
};

}  // namespace osrt
