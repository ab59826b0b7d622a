#include "terminal.hpp"

namespace osrt {
namespace {

// totals tot (4), singles a (M, 4) and pairs Pp[g, h] (g <= h; (M, M, 4)) of the classes
void pairs(const i64* ones, const i64* nones, const double* st, i64 U, i64 M, double* a,
           double* Pp, double* tot) {
  std::fill(tot, tot + 4, 0.0);
  std::fill(a, a + M * 4, 0.0);
  std::fill(Pp, Pp + M * M * 4, 0.0);
  for (i64 u = 0; u < U; ++u) {
    const double* s = st + 4 * u;
    for (int c = 0; c < 4; ++c) tot[c] += s[c];
    const i64 k = nones[u];
    const i64* on = ones + u * M;
    const Stat4 s4(s);  // in registers: Pp and a cannot alias it
    for (i64 x = 0; x < k; ++x) {
      const i64 g = on[x];
      s4.add_to(a + 4 * g);
      double* Pg = Pp + 4 * g * M;
      for (i64 z = x; z < k; ++z) s4.add_to(Pg + 4 * on[z]);
    }
  }
}

// best trees with at most one split of S & x_g (c1T[g]) and S & ~x_g (c1F[g])
void depth1_children(i64 M, const double* a, const double* Pp, const double* tot,
                     double lamn, double m1, double* c1T, double* c1F) {
  for (i64 g = 0; g < M; ++g) {
    const double* ag = a + 4 * g;
    c1T[g] = sse(ag[0], ag[1], ag[2]) + lamn;
    c1F[g] = sse(tot[0] - ag[0], tot[1] - ag[1], tot[2] - ag[2]) + lamn;
  }
  for (i64 g = 0; g < M; ++g) {
    const double* ag = a + 4 * g;
    for (i64 h = g + 1; h < M; ++h) {
      const double* ah = a + 4 * h;
      const double* p = Pp + 4 * (g * M + h);
      const double tw = p[0], ts = p[1], tq = p[2], tn = p[3];
      const double fw = ag[0] - tw, fs = ag[1] - ts, fq = ag[2] - tq, fn = ag[3] - tn;
      const double ew = ah[0] - tw, es = ah[1] - ts, eq = ah[2] - tq, en = ah[3] - tn;
      const double zw = tot[0] - ag[0] - ew, zs = tot[1] - ag[1] - es;
      const double zq = tot[2] - ag[2] - eq, zn = tot[3] - ag[3] - en;
      const double LTT = sse(tw, ts, tq), LTF = sse(fw, fs, fq);
      const double LFT = sse(ew, es, eq), LFF = sse(zw, zs, zq);
      const bool okTT = tn >= m1, okTF = fn >= m1, okFT = en >= m1, okFF = zn >= m1;
      if (okTT && okTF) { const double v = LTT + LTF + 2.0 * lamn; if (v < c1T[g]) c1T[g] = v; }
      if (okFT && okFF) { const double v = LFT + LFF + 2.0 * lamn; if (v < c1F[g]) c1F[g] = v; }
      if (okTT && okFT) { const double v = LTT + LFT + 2.0 * lamn; if (v < c1T[h]) c1T[h] = v; }
      if (okTF && okFF) { const double v = LTF + LFF + 2.0 * lamn; if (v < c1F[h]) c1F[h] = v; }
    }
  }
}

// split[r]: the best tree with three split levels whose root splits on r. Every set met
// below the root is S & (+-x_f) & (+-x_g) & (+-x_h) of one triple f < g < h: its sums are
// one inclusion-exclusion of the triple, pair and single sums, each octant's loss once.
void depth3_splits(const i64* ones, const i64* nones, const double* st, i64 U, i64 M,
                   const double* a, const double* Pp, const double* tot, double lamn, double m1,
                   double* split) {
  // c1[i, j, si, sj] (i < j): best tree with at most one split of that quadrant
  std::vector<double> c1(M * M * 4);
  auto C1 = [&](i64 i, i64 j, int si, int sj) -> double& {
    return c1[((i * M + j) * 2 + si) * 2 + sj];
  };
  auto PP = [&](i64 i, i64 j, int c) { return Pp[4 * (i * M + j) + c]; };
  auto A = [&](i64 i, int c) { return a[4 * i + c]; };
  for (i64 i = 0; i < M; ++i)
    for (i64 j = i + 1; j < M; ++j) {
      const double tw = PP(i, j, 0), ts = PP(i, j, 1), tq = PP(i, j, 2);
      C1(i, j, 1, 1) = sse(tw, ts, tq) + lamn;
      C1(i, j, 1, 0) = sse(A(i, 0) - tw, A(i, 1) - ts, A(i, 2) - tq) + lamn;
      C1(i, j, 0, 1) = sse(A(j, 0) - tw, A(j, 1) - ts, A(j, 2) - tq) + lamn;
      C1(i, j, 0, 0) = sse(tot[0] - A(i, 0) - A(j, 0) + tw, tot[1] - A(i, 1) - A(j, 1) + ts,
                           tot[2] - A(i, 2) - A(j, 2) + tq) + lamn;
    }
  std::vector<double> T(M * M * 4);  // T[g, h] (g < h): sums over the classes with f, g, h
  double oc[8][4];
  double L[8];
  const double two = 2.0 * lamn;
  std::vector<i64> pos(U, 0);
  for (i64 f = 0; f < M; ++f) {
    for (i64 g = f + 1; g < M; ++g)
      for (i64 h = g + 1; h < M; ++h)
        for (int c = 0; c < 4; ++c) T[4 * (g * M + h) + c] = 0.0;
    for (i64 u = 0; u < U; ++u) {
      // ones[u] is increasing and f visits every feature in order: the next feature of
      // class u not yet passed is at pos[u]
      const i64 k = nones[u];
      i64 x0 = pos[u];
      const i64* on = ones + u * M;
      if (x0 >= k || on[x0] != f) continue;
      ++x0;
      pos[u] = x0;
      const Stat4 s(st + 4 * u);  // in registers: T cannot alias it
      for (i64 x = x0; x < k; ++x) {
        double* Tg = T.data() + 4 * on[x] * M;
        for (i64 z = x + 1; z < k; ++z) s.add_to(Tg + 4 * on[z]);
      }
    }
    for (i64 g = f + 1; g < M; ++g)
      for (i64 h = g + 1; h < M; ++h) {
        // octants o = 4 sf + 2 sg + sh (1: the feature is set)
        for (int c = 0; c < 4; ++c) {
          const double t = T[4 * (g * M + h) + c];
          const double pfg = PP(f, g, c), pfh = PP(f, h, c), pgh = PP(g, h, c);
          oc[7][c] = t;
          oc[6][c] = pfg - t;
          oc[5][c] = pfh - t;
          oc[3][c] = pgh - t;
          oc[4][c] = A(f, c) - pfg - pfh + t;
          oc[2][c] = A(g, c) - pfg - pgh + t;
          oc[1][c] = A(h, c) - pfh - pgh + t;
          oc[0][c] = tot[c] - A(f, c) - A(g, c) - A(h, c) + pfg + pfh + pgh - t;
        }
        for (int o = 0; o < 8; ++o) L[o] = sse(oc[o][0], oc[o][1], oc[o][2]);
        for (int sa = 0; sa < 2; ++sa)
          for (int sb = 0; sb < 2; ++sb) {
            int o1 = 4 * sa + 2 * sb + 1, o0 = 4 * sa + 2 * sb;  // (f, g) split on h
            double v = L[o1] + L[o0] + two;
            v = (oc[o1][3] >= m1) & (oc[o0][3] >= m1) ? v : INF;
            C1(f, g, sa, sb) = std::min(C1(f, g, sa, sb), v);
            o1 = 4 * sa + 2 + sb; o0 = 4 * sa + sb;  // (f, h) split on g
            v = L[o1] + L[o0] + two;
            v = (oc[o1][3] >= m1) & (oc[o0][3] >= m1) ? v : INF;
            C1(f, h, sa, sb) = std::min(C1(f, h, sa, sb), v);
            o1 = 4 + 2 * sa + sb; o0 = 2 * sa + sb;  // (g, h) split on f
            v = L[o1] + L[o0] + two;
            v = (oc[o1][3] >= m1) & (oc[o0][3] >= m1) ? v : INF;
            C1(g, h, sa, sb) = std::min(C1(g, h, sa, sb), v);
          }
      }
  }
  for (i64 r = 0; r < M; ++r) {
    if (!(A(r, 3) >= m1 && tot[3] - A(r, 3) >= m1)) { split[r] = INF; continue; }
    double total = 0.0;
    for (int sr = 0; sr < 2; ++sr) {
      double best = sr == 1 ? sse(A(r, 0), A(r, 1), A(r, 2)) + lamn
                            : sse(tot[0] - A(r, 0), tot[1] - A(r, 1), tot[2] - A(r, 2)) + lamn;
      const double nr = sr == 1 ? A(r, 3) : tot[3] - A(r, 3);
      for (i64 p = 0; p < M; ++p) {
        if (p == r) continue;
        const i64 i = r < p ? r : p, j = r < p ? p : r;
        const double pn = PP(i, j, 3);
        const double n1 = sr == 1 ? pn : A(p, 3) - pn;
        const double n0 = nr - n1;
        if (n1 >= m1 && n0 >= m1) {
          const double v = r < p ? C1(i, j, sr, 1) + C1(i, j, sr, 0)
                                 : C1(i, j, 1, sr) + C1(i, j, 0, sr);
          if (v < best) best = v;
        }
      }
      total += best;
    }
    split[r] = total;
  }
}

}  // namespace

void feature_lists(const u8* X, i64 U, i64 M, i64* ones, i64* nones) {
  for (i64 u = 0; u < U; ++u) {
    i64 k = 0;
    for (i64 g = 0; g < M; ++g) {
      if (X[u * M + g]) ones[u * M + k++] = g;
    }
    for (i64 g = k; g < M; ++g) ones[u * M + g] = 0;
    nones[u] = k;
  }
}

double subtree_splits(const u8* X, const double* st, i64 U, i64 M, i64 levels, double lamn,
                      double m1, double* split) {
  std::vector<i64> ones(U * M), nones(U);
  feature_lists(X, U, M, ones.data(), nones.data());
  std::vector<double> a(M * 4, 0.0);
  double tot[4] = {0, 0, 0, 0};
  if (levels <= 1) {
    for (i64 u = 0; u < U; ++u) {
      for (int c = 0; c < 4; ++c) tot[c] += st[4 * u + c];
      for (i64 x = 0; x < nones[u]; ++x) {
        const i64 g = ones[u * M + x];
        for (int c = 0; c < 4; ++c) a[4 * g + c] += st[4 * u + c];
      }
    }
    for (i64 f = 0; f < M; ++f) {
      const double* af = a.data() + 4 * f;
      if (af[3] >= m1 && tot[3] - af[3] >= m1)
        split[f] = sse(af[0], af[1], af[2]) + sse(tot[0] - af[0], tot[1] - af[1], tot[2] - af[2])
                   + 2.0 * lamn;
      else
        split[f] = INF;
    }
    return sse(tot[0], tot[1], tot[2]) + lamn;
  }
  std::vector<double> Pp(M * M * 4);
  pairs(ones.data(), nones.data(), st, U, M, a.data(), Pp.data(), tot);
  const double leaf = sse(tot[0], tot[1], tot[2]) + lamn;
  if (levels == 2) {
    std::vector<double> c1T(M), c1F(M);
    depth1_children(M, a.data(), Pp.data(), tot, lamn, m1, c1T.data(), c1F.data());
    for (i64 f = 0; f < M; ++f) {
      if (a[4 * f + 3] >= m1 && tot[3] - a[4 * f + 3] >= m1) split[f] = c1T[f] + c1F[f];
      else split[f] = INF;
    }
    return leaf;
  }
  depth3_splits(ones.data(), nones.data(), st, U, M, a.data(), Pp.data(), tot, lamn, m1, split);
  return leaf;
}

i64 support_splits(const u8* mask, const u8* X, i64 U, i64 M, i64* keep) {
  std::vector<i64> idx;
  for (i64 u = 0; u < U; ++u)
    if (mask[u]) idx.push_back(u);
  const i64 n = i64(idx.size());
  if (n == 0) return 0;
  const i64 nwd = (n + 63) / 64;
  std::vector<u64> cw(M * nwd, 0);
  const u8* r0 = X + idx[0] * M;
  for (i64 t = 1; t < n; ++t) {
    const u8* xu = X + idx[t] * M;
    const i64 wd = t >> 6;
    const u64 bit = u64(1) << (t & 63);
    for (i64 j = 0; j < M; ++j)
      if (xu[j] != r0[j]) cw[j * nwd + wd] |= bit;
  }
  i64 T = 1;
  while (T < 2 * M) T *= 2;
  std::vector<i64> table(T, -1);
  const u64 msk = u64(T - 1);
  i64 k = 0;
  for (i64 j = 0; j < M; ++j) {
    const u64* cj = cw.data() + j * nwd;
    bool nz = false;
    for (i64 q = 0; q < nwd; ++q)
      if (cj[q] != 0) { nz = true; break; }
    if (!nz) continue;
    i64 s = i64(hash_words(cj, nwd) & msk);
    bool fresh = true;
    while (table[s] >= 0) {
      const u64* cc = cw.data() + table[s] * nwd;
      bool same = true;
      for (i64 q = 0; q < nwd; ++q)
        if (cc[q] != cj[q]) { same = false; break; }
      if (same) { fresh = false; break; }
      s = (s + 1) & i64(msk);
    }
    if (fresh) {
      table[s] = j;
      keep[k++] = j;
    }
  }
  return k;
}

std::pair<double, i64> support_subtree(const Problem& P, const u8* mask, i64 levels,
                                       double lamn) {
  const i64 U = P.U, M = P.M;
  std::vector<i64> keep(M);
  const i64 k = support_splits(mask, P.X.data(), U, M, keep.data());
  std::vector<i64> idx;
  for (i64 u = 0; u < U; ++u)
    if (mask[u]) idx.push_back(u);
  const i64 n = i64(idx.size());
  double Wt = 0.0, St = 0.0;
  for (i64 t = 0; t < n; ++t) {
    Wt += P.W[idx[t]];
    St += P.W[idx[t]] * P.mean[idx[t]];
  }
  const double mu = centre(Wt, St);
  // a column and its complement make the same splits (the children swap sides), so each
  // is taken the way round with fewer ones on the support: the pair and triple sums cost
  // C(ones of a class, 2 or 3) a class (x <= t columns: half the ones, an eighth the
  // triples)
  std::vector<u8> flip(k, 0);
  {
    std::vector<i64> ones(k, 0);
    for (i64 t = 0; t < n; ++t) {
      const u8* xu = P.row(idx[t]);
      for (i64 q = 0; q < k; ++q) ones[q] += xu[keep[q]];
    }
    for (i64 q = 0; q < k; ++q) flip[q] = 2 * ones[q] > n ? 1 : 0;
  }
  std::vector<u8> Xs(n * k);
  std::vector<double> st(n * 4);
  for (i64 t = 0; t < n; ++t) {
    const i64 u = idx[t];
    const u8* xu = P.row(u);
    for (i64 q = 0; q < k; ++q) Xs[t * k + q] = xu[keep[q]] ^ flip[q];
    st[4 * t] = P.W[u];
    recentred(P.W[u], P.mean[u], P.E[u], mu, st[4 * t + 1], st[4 * t + 2]);
    st[4 * t + 3] = P.N[u];
  }
  std::vector<double> split(k);
  const double leaf = subtree_splits(Xs.data(), st.data(), n, k, levels, lamn, P.m1, split.data());
  if (k == 0) return {leaf, -1};
  double best = INF;
  for (i64 q = 0; q < k; ++q)
    if (split[q] < best) best = split[q];
  if (best < leaf * (1.0 - 1e-12)) {
    for (i64 q = 0; q < k; ++q)
      if (split[q] <= best + 1e-12 * std::abs(best)) return {split[q], keep[q]};
  }
  return {leaf, -1};
}

}  // namespace osrt
