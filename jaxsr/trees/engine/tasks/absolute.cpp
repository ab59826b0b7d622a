#include "absolute.hpp"

#include "../bounds.hpp"
#include "../kmeans.hpp"

namespace osrt {

double AbsoluteTask::leaf_loss(const Problem& P, const u8* mask) const {
  const i64 n = i64(P.ys.size());
  const double* ys = P.ys.data();
  const double* ws = P.ws.data();
  const i64* cls = P.cls_s.data();
  double W = 0.0;
  for (i64 i = 0; i < n; ++i)
    if (mask[cls[i]]) W += ws[i];
  const double half = 0.5 * W;
  double c = 0.0, med = 0.0;
  for (i64 i = 0; i < n; ++i)
    if (mask[cls[i]]) {
      c += ws[i];
      if (c >= half) { med = ys[i]; break; }
    }
  double loss = 0.0;
  for (i64 i = 0; i < n; ++i)
    if (mask[cls[i]]) loss += ws[i] * std::abs(ys[i] - med);
  return loss;
}

void AbsoluteTask::split_losses(const Problem& P, const u8* mask, const i64* F, i64 nk,
                                const double*, const double*, double* lossT,
                                double* lossF) const {
  const i64 n = i64(P.ys.size());
  const double* ys = P.ys.data();
  const double* ws = P.ws.data();
  const i64* cls = P.cls_s.data();
  std::vector<double> WT(nk, 0.0), WF(nk, 0.0), medT(nk, 0.0), medF(nk, 0.0);
  std::vector<double> cT(nk, 0.0), cF(nk, 0.0);
  std::vector<char> doneT(nk, 0), doneF(nk, 0);
  for (i64 i = 0; i < n; ++i) {
    const i64 u = cls[i];
    if (!mask[u]) continue;
    const u8* xu = P.row(u);
    for (i64 q = 0; q < nk; ++q) {
      if (xu[F[q]] != 0) WT[q] += ws[i]; else WF[q] += ws[i];
    }
  }
  i64 left = 2 * nk;
  for (i64 i = 0; i < n && left > 0; ++i) {
    const i64 u = cls[i];
    if (!mask[u]) continue;
    const u8* xu = P.row(u);
    const double w = ws[i];
    for (i64 q = 0; q < nk; ++q) {
      if (xu[F[q]] != 0) {
        if (!doneT[q]) {
          cT[q] += w;
          if (cT[q] >= 0.5 * WT[q]) { medT[q] = ys[i]; doneT[q] = 1; --left; }
        }
      } else if (!doneF[q]) {
        cF[q] += w;
        if (cF[q] >= 0.5 * WF[q]) { medF[q] = ys[i]; doneF[q] = 1; --left; }
      }
    }
  }
  for (i64 q = 0; q < nk; ++q) lossT[q] = lossF[q] = 0.0;
  for (i64 i = 0; i < n; ++i) {
    const i64 u = cls[i];
    if (!mask[u]) continue;
    const u8* xu = P.row(u);
    const double w = ws[i], y = ys[i];
    for (i64 q = 0; q < nk; ++q) {
      if (xu[F[q]] != 0) lossT[q] += w * std::abs(y - medT[q]);
      else lossF[q] += w * std::abs(y - medF[q]);
    }
  }
}

SupportBounds AbsoluteTask::bounds(const Problem& P, const u8* mask, i64 d) const {
  const Totals t = support_totals(P, mask);
  const double leaf = leaf_loss(P, mask);
  const double lam = P.lam, norm = P.norm, look = P.look;
  const double eq = P.equiv ? t.E : 0.0;
  const double b = objective(eq, norm, lam, look);
  const i64 cmax = most_leaves(P, t, d);
  const double deep = cmax < 2 ? INF : objective(eq, norm, lam, 2.0);
  if (!P.kmeans || d <= 2) return {leaf, b, deep, 0};
  if (double(cmax) < look) return {leaf, INF, INF, 0};
  // the support's distinct targets and their summed weights
  const i64 n = i64(P.ys.size());
  std::vector<double> vals(n), wts(n);
  i64 k = 0;
  for (i64 i = 0; i < n; ++i)
    if (mask[P.cls_s[i]]) {
      if (k == 0 || P.ys[i] > vals[k - 1]) {
        vals[k] = P.ys[i];
        wts[k] = P.ws[i];
        ++k;
      } else {
        wts[k - 1] += P.ws[i];
      }
    }
  if (k == 0 || double(k) > P.kmedians_max) return {leaf, b, deep, 0};
  std::vector<double> out(std::max<i64>(1, std::min(cmax, k)));
  const i64 kk = kmedians_losses(vals.data(), wts.data(), k, cmax, lam * norm, true, out.data());
  return {leaf, std::max(b, kmeans_bound(out.data(), kk, lam, norm, look)), deep, 1};
}

}  // namespace osrt
