#include "kmeans.hpp"

namespace osrt {
namespace {

// cost of the sorted items j..i from prefix sums A, B, C: k-means (medians false) the sse
// of the items' W, S, Q sums; k-medians the weighted absolute deviation around the first
// item at which the cumulative weight (A) reaches half (B: prefix of w v, C: the values)
inline double cost(const double* A, const double* B, const double* C, i64 j, i64 i,
                   bool medians) {
  if (!medians) return sse(A[i + 1] - A[j], B[i + 1] - B[j], C[i + 1] - C[j]);
  const double half = A[j] + 0.5 * (A[i + 1] - A[j]);
  i64 lo = j, hi = i;
  while (lo < hi) {
    const i64 mid = (lo + hi) / 2;
    if (A[mid + 1] >= half) hi = mid; else lo = mid + 1;
  }
  const double vm = C[lo];
  const double left = vm * (A[lo] - A[j]) - (B[lo] - B[j]);
  const double right = (B[i + 1] - B[lo + 1]) - vm * (A[i + 1] - A[lo + 1]);
  const double v = left + right;
  return v > 0.0 ? v : 0.0;
}

// D[i] = min_{0 <= j <= i} prev[j] + cost(j, i), the leftmost minimiser monotone in i
void dc_row(const double* prev, const double* A, const double* B, const double* C,
            bool medians, i64 n, double* D, std::vector<i64>& stack) {
  i64 top = 0;
  auto push = [&](i64 a, i64 b, i64 c, i64 d) {
    stack[4 * top] = a; stack[4 * top + 1] = b; stack[4 * top + 2] = c; stack[4 * top + 3] = d;
    ++top;
  };
  push(0, n - 1, 0, n - 1);
  while (top > 0) {
    --top;
    const i64 lo = stack[4 * top], hi = stack[4 * top + 1];
    const i64 olo = stack[4 * top + 2], ohi = stack[4 * top + 3];
    if (lo > hi) continue;
    const i64 mid = (lo + hi) / 2;
    double best = INF;
    i64 bj = olo;
    const i64 end = std::min(mid, ohi);
    for (i64 j = olo; j <= end; ++j) {
      const double v = prev[j] + cost(A, B, C, j, mid, medians);
      if (v < best) { best = v; bj = j; }
    }
    D[mid] = best;
    push(lo, mid - 1, olo, bj);
    push(mid + 1, hi, bj, ohi);
  }
}

i64 cluster_losses(const double* A, const double* B, const double* C, bool medians, i64 n,
                   i64 max_clusters, double stop_gain, bool use_stop, double* out) {
  if (n == 0) { out[0] = 0.0; return 1; }
  const i64 kmax = std::min(max_clusters, n);
  std::vector<double> D(n), prev(n);
  for (i64 i = 0; i < n; ++i) D[i] = cost(A, B, C, 0, i, medians);
  out[0] = D[n - 1];
  if (kmax <= 1) return 1;
  i64 depth = 2;
  while ((i64(1) << depth) < n + 2) ++depth;
  std::vector<i64> stack(4 * (2 * depth + 4));
  i64 k = 1;
  while (true) {
    prev[0] = 0.0;
    for (i64 i = 1; i < n; ++i) prev[i] = D[i - 1];
    double last = INF;
    for (i64 j = 0; j < n; ++j) {
      const double v = prev[j] + cost(A, B, C, j, n - 1, medians);
      if (v < last) last = v;
    }
    out[k] = last;
    ++k;
    if (k >= kmax) break;
    if (use_stop && out[k - 2] - out[k - 1] <= stop_gain) break;
    dc_row(prev.data(), A, B, C, medians, n, D.data(), stack);
  }
  return k;
}

}  // namespace

i64 kmeans_losses(const double* W, const double* S, const double* Q, i64 n, i64 max_clusters,
                  double stop_gain, bool use_stop, double* out) {
  std::vector<double> PW(n + 1, 0.0), PS(n + 1, 0.0), PQ(n + 1, 0.0);
  for (i64 i = 0; i < n; ++i) {
    PW[i + 1] = PW[i] + W[i];
    PS[i + 1] = PS[i] + S[i];
    PQ[i + 1] = PQ[i] + Q[i];
  }
  return cluster_losses(PW.data(), PS.data(), PQ.data(), false, n, max_clusters, stop_gain,
                        use_stop, out);
}

i64 kmedians_losses(const double* v, const double* w, i64 n, i64 max_clusters,
                    double stop_gain, bool use_stop, double* out) {
  std::vector<double> PW(n + 1, 0.0), PV(n + 1, 0.0);
  for (i64 i = 0; i < n; ++i) {
    PW[i + 1] = PW[i] + w[i];
    PV[i + 1] = PV[i] + w[i] * v[i];
  }
  return cluster_losses(PW.data(), PV.data(), v, true, n, max_clusters, stop_gain, use_stop,
                        out);
}

}  // namespace osrt
