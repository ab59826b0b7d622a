#include "squared.hpp"

#include "../bounds.hpp"
#include "../kmeans.hpp"

namespace osrt {

double SquaredTask::leaf_loss(const Problem& P, const u8* mask) const {
  double Wt = 0.0, St = 0.0;
  for (i64 u = 0; u < P.U; ++u)
    if (mask[u]) {
      Wt += P.W[u];
      St += P.W[u] * P.mean[u];
    }
  const double mu = centre(Wt, St);
  double loss = 0.0, S, Q;
  for (i64 u = 0; u < P.U; ++u)
    if (mask[u]) {
      recentred(P.W[u], P.mean[u], P.E[u], mu, S, Q);
      loss += Q;
    }
  return loss;
}

i64 support_kmeans_losses(const Problem& P, const i64* sel, i64 n, i64 max_clusters,
                          double stop_gain, bool use_stop, double* out) {
  double Wt = 0.0, St = 0.0;
  for (i64 t = 0; t < n; ++t) {
    Wt += P.W[sel[t]];
    St += P.W[sel[t]] * P.mean[sel[t]];
  }
  const double mu = centre(Wt, St);
  std::vector<double> w(n), s(n), q(n);
  for (i64 t = 0; t < n; ++t) {
    const i64 u = sel[t];
    w[t] = P.W[u];
    recentred(P.W[u], P.mean[u], P.E[u], mu, s[t], q[t]);
  }
  return kmeans_losses(w.data(), s.data(), q.data(), n, max_clusters, stop_gain, use_stop, out);
}

SupportBounds SquaredTask::bounds(const Problem& P, const u8* mask, i64 d) const {
  const Totals t = support_totals(P, mask);
  const double leaf = leaf_loss(P, mask);
  const double eq = P.equiv ? t.E : 0.0;
  const double lam = P.lam, norm = P.norm, look = P.look;
  const i64 kl = P.kl;
  const double b = objective(eq, norm, lam, look);
  const i64 cmax = most_leaves(P, t, d);
  const i64 kdeep = kl + 2;
  double deep = cmax < kdeep ? INF : objective(eq, norm, lam, double(kdeep));
  const i64 counted = (P.kmeans && d > std::max<i64>(kl, 1)) ? 1 : 0;
  if (!P.kmeans || d <= kl) return {leaf, b, deep, counted};
  if (double(cmax) < look) return {leaf, INF, INF, counted};
  std::vector<i64> sel(t.C);
  i64 j = 0;
  for (i64 i = 0; i < P.U; ++i) {
    const i64 u = P.korder[i];
    if (mask[u]) sel[j++] = u;
  }
  std::vector<double> out(std::max<i64>(1, std::min(cmax, t.C)));
  const i64 k = support_kmeans_losses(P, sel.data(), t.C, cmax, lam * norm, true, out.data());
  if (kl > 0 && cmax >= kdeep)
    deep = std::max(deep, kmeans_bound(out.data(), k, lam, norm, double(kdeep)));
  return {leaf, std::max(b, kmeans_bound(out.data(), k, lam, norm, look)), deep, counted};
}

void SquaredTask::split_losses(const Problem&, const u8*, const i64*, i64 nk,
                               const double* a, const double* comp, double* lossT,
                               double* lossF) const {
  for (i64 i = 0; i < nk; ++i) {
    const double* x = a + 6 * i;
    const double* y = comp + 6 * i;
    lossT[i] = std::max(sse(x[0], x[1], x[2]), x[3]);
    lossF[i] = std::max(sse(y[0], y[1], y[2]), y[3]);
  }
}

}  // namespace osrt
