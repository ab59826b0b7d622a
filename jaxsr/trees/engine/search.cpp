#include "search.hpp"

#include <algorithm>
#include <ctime>
#include <numeric>

#include "bounds.hpp"
#include "tasks/absolute.hpp"
#include "tasks/squared.hpp"
#include "terminal.hpp"

namespace osrt {

namespace {
constexpr double SLOW_KERNEL = 0.01;  // kernel calls predicted to take this share of the
                                      // time left are timed (and skipped when they won't fit)
}

double now_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

void Frames::resize(i64 levels) {
  D = levels;
  const std::size_t d = std::size_t(levels), m = std::size_t(M);
  words.resize(d * std::size_t(nw));
  mask.resize(d * std::size_t(U));
  for (auto* v : {&eid, &nk, &pos, &phase, &cur, &completed}) v->resize(d);
  for (auto* v : {&cap, &bound, &tub}) v->resize(d);
  for (auto* v : {&feat, &dT, &dF, &order}) v->resize(d * m);
  for (auto* v : {&leafT, &leafF, &lbT, &lbF, &lbsum}) v->resize(d * m);
  st.resize(d * 2 * m * 6);
}

Search::Search(Problem problem, i64 levels, double incumbent, double time_left, double elapsed,
               i64 max_steps, double kernel_rate, double best_first_after,
               double best_first_tries, bool device)
    : P_(std::move(problem)), memo_(P_.nw, std::max<i64>(1024, 4 * P_.M + 8)) {
  P_.device = device;
  if (P_.l1) task_ = std::make_unique<AbsoluteTask>();
  else task_ = std::make_unique<SquaredTask>();
  const double now = now_seconds();
  fst_.t0 = now - elapsed;
  fst_.now = now;
  fst_.deadline = time_left < INF ? now + time_left : INF;
  fst_.rate = kernel_rate;
  fst_.bf = best_first_after;
  fst_.bftries = best_first_tries;
  ctr_.maxsteps = max_steps;
  fr_.U = P_.U;
  fr_.M = P_.M;
  fr_.nw = P_.nw;
  fr_.tries.assign(std::size_t(P_.M), 0);
  fr_.scratch.assign(std::size_t(P_.M), 0);
  fr_.cmask.assign(std::size_t(P_.U), 1);
  fr_.cwords.assign(std::size_t(P_.nw), 0);
  for (i64 u = 0; u < P_.U; ++u) fr_.cwords[u >> 6] |= u64(1) << (u & 63);
  fr_.resize(std::min<i64>(std::max<i64>(levels, 2), 64) + 1);
  ctr_.root = root_entry(levels, incumbent);
  fst_.rootlb = memo_.lb[ctr_.root];
  if (memo_.solved[ctr_.root]) ctr_.status = OPTIMAL;
  else if (time_left <= 0 || (fst_.deadline < INF && now_seconds() > fst_.deadline))
    ctr_.status = TIME_LIMIT;
}

double Search::leaf_loss(const u8* mask) const { return task_->leaf_loss(P_, mask); }

// the child's support of split i of level t (side 1: true, 0: false) into cmask / cwords
void Search::child(i64 t, i64 i, int side) {
  const i64 f = fr_.feat[fr_.at(t, i)];
  const i64 nw = P_.nw;
  const u64* w = fr_.words.data() + t * nw;
  const u64* col = P_.colw.data() + f * nw;
  const u8* m = fr_.mask.data() + t * P_.U;
  if (side == 1) {
    for (i64 j = 0; j < nw; ++j) fr_.cwords[j] = w[j] & col[j];
    for (i64 u = 0; u < P_.U; ++u) fr_.cmask[u] = m[u] && P_.X[u * P_.M + f] != 0;
  } else {
    for (i64 j = 0; j < nw; ++j) fr_.cwords[j] = w[j] & ~col[j];
    for (i64 u = 0; u < P_.U; ++u) fr_.cmask[u] = m[u] && P_.X[u * P_.M + f] == 0;
  }
}

// A new subproblem's memo entry (its support in cmask / cwords, `slot` its table slot):
// its leaf and bounds, solved when a bound reaches the leaf. The same support with more
// levels has an optimum no larger, so its lower bound holds here.
i64 Search::entry(i64 slot, i64 d) {
  const double lam = P_.lam, norm = P_.norm;
  const i64 kl = P_.kl;
  const SupportBounds sb = task_->bounds(P_, fr_.cmask.data(), d);
  ctr_.kmeans += sb.n_kmeans;
  const double leaf = objective(sb.leaf, norm, lam);
  const u64* w = fr_.cwords.data();
  if (d <= 1 || reaches(sb.b, leaf))
    return memo_.insert_at(slot, w, d, leaf, leaf, -1, true, -1, INF);
  const i64 klev = (kl > 0 && d > kl + 1) ? UNTRIED : -1;
  double lb = std::min(leaf, sb.b);
  for (i64 e2 = memo_.head(slot); e2 >= 0; e2 = memo_.next(e2))
    if (memo_.lev[e2] > d && memo_.lb[e2] > lb) lb = std::min(memo_.lb[e2], leaf);
  if (reaches(lb, leaf))
    return memo_.insert_at(slot, w, d, leaf, leaf, -1, true, klev, std::max(sb.deep, sb.b));
  return memo_.insert_at(slot, w, d, lb, leaf, -1, false, klev, std::max(sb.deep, sb.b));
}

// the root's entry, its best tree the incumbent (feat GREEDY) when better than the leaf
i64 Search::root_entry(i64 d, double incumbent) {
  const i64 e = entry(memo_.find_slot(fr_.cwords.data()), d);
  if (!memo_.solved[e] && improves(incumbent, memo_.ub[e])) {
    memo_.ub[e] = incumbent;
    memo_.feat[e] = GREEDY;
    memo_.lb[e] = std::min(memo_.lb[e], incumbent);
    if (reaches(memo_.lb[e], incumbent)) {
      memo_.lb[e] = incumbent;
      memo_.solved[e] = 1;
    }
  }
  return e;
}

// the six statistics of the support of level L, tot (6), and of its part with feature g
// set, st[L, 0][g] (M, 6): weight, S and Q re-centred on the support's own mean,
// equivalence loss, samples, classes
void Search::split_sums(i64 L, double* tot) {
  const i64 U = P_.U, M = P_.M;
  const u8* mask = fr_.mask.data() + L * U;
  double* a = fr_.stats(L, 0);
  double Wt = 0.0, St = 0.0;
  for (i64 u = 0; u < U; ++u)
    if (mask[u]) {
      Wt += P_.W[u];
      St += P_.W[u] * P_.mean[u];
    }
  const double mu = centre(Wt, St);
  std::fill(a, a + M * 6, 0.0);
  std::fill(tot, tot + 6, 0.0);
  for (i64 u = 0; u < U; ++u) {
    if (!mask[u]) continue;
    const double w = P_.W[u];
    double s, q;
    recentred(w, P_.mean[u], P_.E[u], mu, s, q);
    const double eu = P_.E[u], nu = P_.N[u];
    tot[0] += w; tot[1] += s; tot[2] += q; tot[3] += eu; tot[4] += nu; tot[5] += 1.0;
    const i64* on = P_.ones.data() + u * M;
    for (i64 x = 0; x < P_.nones[u]; ++x) {
      double* ag = a + 6 * on[x];
      ag[0] += w; ag[1] += s; ag[2] += q; ag[3] += eu; ag[4] += nu; ag[5] += 1.0;
    }
  }
}

// keep the splits scratch[:k] of level L whose children both hold at least m1 samples:
// their features into feat[L], their children's statistics into the first rows of
// st[L, 0] and st[L, 1]. Returns their number.
i64 Search::admissible_splits(i64 L, const double* tot, i64 k) {
  double* a = fr_.stats(L, 0);
  double* comp = fr_.stats(L, 1);
  i64 nk = 0;
  for (i64 q = 0; q < k; ++q) {
    const i64 f = fr_.scratch[q];
    if (a[6 * f + 4] >= P_.m1 && tot[4] - a[6 * f + 4] >= P_.m1) {
      fr_.feat[fr_.at(L, nk)] = f;
      for (int c = 0; c < 6; ++c) {
        const double v = a[6 * f + c];
        a[6 * nk + c] = v;
        comp[6 * nk + c] = tot[c] - v;
      }
      ++nk;
    }
  }
  return nk;
}

// the children's leaf costs, the levels that can matter to them and their cheap bounds
void Search::split_leaves(i64 L, i64 nk, i64 d) {
  const double lam = P_.lam, norm = P_.norm;
  const double* a = fr_.stats(L, 0);
  const double* comp = fr_.stats(L, 1);
  const i64 o = fr_.at(L, 0);
  task_->split_losses(P_, fr_.mask.data() + L * P_.U, fr_.feat.data() + o, nk, a, comp,
                      fr_.leafT.data() + o, fr_.leafF.data() + o);
  for (i64 i = 0; i < nk; ++i) {
    const double* x = a + 6 * i;
    const double* y = comp + 6 * i;
    const double lt = objective(fr_.leafT[o + i], norm, lam);
    const double lf = objective(fr_.leafF[o + i], norm, lam);
    fr_.leafT[o + i] = lt;
    fr_.leafF[o + i] = lf;
    const i64 dt = useful_levels(P_, double(d - 1), x[5], x[4], x[3], lt);
    const i64 df = useful_levels(P_, double(d - 1), y[5], y[4], y[3], lf);
    fr_.dT[o + i] = dt;
    fr_.dF[o + i] = df;
    fr_.lbT[o + i] = dt > 1 ? std::min(lt, cheap_bound(P_, x[3])) : lt;
    fr_.lbF[o + i] = df > 1 ? std::min(lf, cheap_bound(P_, y[3])) : lf;
  }
}

// raise the children's lower bounds of the nk splits of level L to their memo entries'
void Search::memo_bounds(i64 L, i64 nk) {
  const i64 nw = P_.nw;
  const u64* w = fr_.words.data() + L * nw;
  for (i64 i = 0; i < nk; ++i)
    for (int side = 1; side >= 0; --side) {
      const i64 dd = side == 1 ? fr_.dT[fr_.at(L, i)] : fr_.dF[fr_.at(L, i)];
      if (dd <= 1) continue;
      const u64* col = P_.colw.data() + fr_.feat[fr_.at(L, i)] * nw;
      for (i64 j = 0; j < nw; ++j) fr_.cwords[j] = side == 1 ? w[j] & col[j] : w[j] & ~col[j];
      const i64 ce = memo_.lookup(fr_.cwords.data(), dd);
      if (ce >= 0) {
        double& b = side == 1 ? fr_.lbT[fr_.at(L, i)] : fr_.lbF[fr_.at(L, i)];
        b = std::max(b, memo_.lb[ce]);
      }
    }
}

// the bound sums of the splits of level L and the order in which they are tried: by bound
// sum, sums equal up to rounding (1e-10 of the leaf ub) in feature order
void Search::order_splits(i64 L, i64 nk, double ub) {
  std::vector<double> key(nk);
  const double qq = std::max(1e-10 * ub, 1e-300);
  const i64 o = fr_.at(L, 0);
  for (i64 i = 0; i < nk; ++i) {
    fr_.lbsum[o + i] = fr_.lbT[o + i] + fr_.lbF[o + i];
    key[i] = std::floor(fr_.lbsum[o + i] / qq);
  }
  i64* order = fr_.order.data() + o;
  std::iota(order, order + nk, i64(0));
  std::stable_sort(order, order + nk, [&](i64 x, i64 y) { return key[x] < key[y]; });
}

// Expand the subproblem of entry e (its support in cmask / cwords) into level L: the
// children of every admissible distinct split, their leaf costs, levels and bounds, and
// the order of the splits. False when it has no admissible split (its leaf is optimal).
bool Search::expansion(i64 L, i64 e, double cap) {
  if (L + 1 >= fr_.D) fr_.resize(2 * (L + 1));
  const i64 U = P_.U;
  std::copy(fr_.cwords.begin(), fr_.cwords.end(), fr_.words.begin() + L * P_.nw);
  std::copy(fr_.cmask.begin(), fr_.cmask.end(), fr_.mask.begin() + L * U);
  double tot[6];
  split_sums(L, tot);
  const i64 k = support_splits(fr_.mask.data() + L * U, P_.X.data(), U, P_.M,
                               fr_.scratch.data());
  const i64 nk = admissible_splits(L, tot, k);
  if (nk == 0) {
    memo_.lb[e] = memo_.ub[e];
    memo_.feat[e] = -1;
    memo_.solved[e] = 1;
    memo_.klev[e] = -1;
    memo_.deep[e] = INF;
    return false;
  }
  split_leaves(L, nk, memo_.lev[e]);
  fr_.nk[L] = nk;
  fr_.eid[L] = e;
  fr_.cap[L] = cap;
  fr_.pos[L] = 0;
  fr_.phase[L] = NEXT;
  fr_.bound[L] = INF;
  fr_.tub[L] = INF;
  fr_.completed[L] = 1;
  fr_.cur[L] = -1;
  if (L == 0) std::fill(fr_.tries.begin(), fr_.tries.begin() + nk, 0);
  if (P_.device && memo_.lev[e] >= 3) {
    // the children's bounds or exact subtrees on the device: the loop returns to Python,
    // which calls finish_expansion once they are in the memo
    ctr_.device_call = 1;
    return true;
  }
  finish_expansion(L, true);
  return true;
}

// The end of an expansion of level L: at the root (root_bounds) the memo entries of every
// child at once (anytime: the root's lower bound is the least bound sum over all its
// splits from the start); then the children's bounds from the memo, the order of splits.
void Search::finish_expansion(i64 L, bool root_bounds) {
  const i64 nk = fr_.nk[L];
  const i64 e = fr_.eid[L];
  if (L == 0 && root_bounds) {
    for (i64 i = 0; i < nk; ++i) {
      if (fst_.deadline < INF && now_seconds() > fst_.deadline) break;
      for (int side = 1; side >= 0; --side) {
        const i64 dd = side == 1 ? fr_.dT[fr_.at(L, i)] : fr_.dF[fr_.at(L, i)];
        if (dd <= 1) continue;
        child(L, i, side);
        const i64 s = memo_.find_slot(fr_.cwords.data());
        if (memo_.lookup_at(s, dd) < 0) entry(s, dd);
      }
    }
  }
  memo_bounds(L, nk);
  order_splits(L, nk, memo_.ub[e]);
}

std::pair<double, i64> Search::kernel(const u8* mask, i64 levels) const {
  const auto r = support_subtree(P_, mask, levels, P_.lam * P_.norm);
  return {r.first / P_.norm, r.second};
}

// a kernel call on mask is predicted to end before the deadline (as of the last clock read)
bool Search::affordable(const u8* mask, i64 levels) const {
  if (!(fst_.deadline < INF)) return true;
  i64 n = 0;
  for (i64 u = 0; u < P_.U; ++u) n += mask[u] ? 1 : 0;
  return fst_.rate * kernel_work(P_.M, n, levels) < fst_.deadline - fst_.now;
}

// Visit the child in cmask / cwords with d levels: (entry id, pushed), pushed when level
// L now holds its expansion.
std::pair<i64, bool> Search::visit(i64 L, i64 d, double leaf, double E, double cap,
                                   bool stopped) {
  const i64 kl = P_.kl;
  const i64 slot = memo_.find_slot(fr_.cwords.data());
  i64 e = memo_.lookup_at(slot, d);
  if (e < 0 && stopped) {
    // unwinding after a limit: the leaf and the cheap bound, no k-means
    e = memo_.insert_at(slot, fr_.cwords.data(), d, std::min(leaf, cheap_bound(P_, E)), leaf,
                        -1, false, -1, INF);
    return {e, false};
  }
  if (e < 0) e = entry(slot, d);
  if (memo_.solved[e] || reaches(memo_.lb[e], cap) || stopped) return {e, false};
  const u8* cm = fr_.cmask.data();
  if (kl > 0 && cap < INF && P_.lam > 0) {
    // only trees with at most lmax leaves, so at most lmax - 1 split levels, can beat the
    // cap: when that is fewer levels than the subproblem has and the kernel covers them,
    // the kernel decides at once
    const i64 lmax = leaf_budget(P_, E, cap);
    const i64 lev = lmax - 1;
    if (lev < d - 1 && lev <= kl && (lev < 1 || affordable(cm, lev))) {
      double c;
      i64 f;
      if (lev >= 1) {
        std::tie(c, f) = kernel(cm, lev);
        ++ctr_.kernel;
      } else {
        c = objective(task_->leaf_loss(P_, cm), P_.norm, P_.lam);
        f = -1;
      }
      if (!reaches(c, cap)) {  // the optimum: every deeper tree reaches the cap
        memo_.lb[e] = c;
        memo_.ub[e] = c;
        memo_.deep[e] = INF;
        memo_.feat[e] = f;
        memo_.solved[e] = 1;
        memo_.klev[e] = lev >= 1 ? lev : -1;  // rebuilt with lev levels
        return {e, false};
      }
      const double lbk = std::min(c, eq_loss(P_, E) + P_.lam * double(lmax + 1));
      memo_.lb[e] = std::max(memo_.lb[e], std::min(lbk, memo_.ub[e]));
      return {e, false};
    }
  }
  if (kl > 0 && d <= kl + 1) {
    const auto [c, f] = kernel(cm, d - 1);
    ++ctr_.kernel;
    memo_.lb[e] = c;
    memo_.ub[e] = c;
    memo_.deep[e] = INF;
    memo_.feat[e] = f;
    memo_.solved[e] = 1;
    memo_.klev[e] = -1;
    return {e, false};
  }
  if (memo_.klev[e] == UNTRIED && d > kl + 1 && !reaches(memo_.lb[e], memo_.deep[e])) {
    i64 n = 0;
    for (i64 u = 0; u < P_.U; ++u) n += cm[u] ? 1 : 0;
    const double work = kernel_work(P_.M, n, kl);
    double t_k = 0.0;
    // a call predicted to take more than 1% of the time left (as of the last clock read)
    // is timed, and skipped when it would not fit
    const bool timed = fst_.deadline < INF &&
                       fst_.rate * work > SLOW_KERNEL * (fst_.deadline - fst_.now);
    if (timed) {
      t_k = now_seconds();
      if (fst_.rate * work >= fst_.deadline - t_k) {
        memo_.klev[e] = -1;
        return {e, expansion(L, e, cap)};
      }
    }
    const auto [c, f] = kernel(cm, kl);
    if (timed) fst_.rate = std::max(fst_.rate, (now_seconds() - t_k) / work);
    ++ctr_.kernel;
    memo_.klev[e] = -1;
    if (c < memo_.ub[e]) {
      memo_.ub[e] = c;
      memo_.feat[e] = f;
      memo_.klev[e] = kl;
    }
    memo_.lb[e] = std::max(memo_.lb[e], std::min(c, memo_.deep[e]));
    if (reaches(memo_.lb[e], memo_.ub[e])) {
      memo_.lb[e] = memo_.ub[e];
      memo_.solved[e] = 1;
    }
    if (memo_.solved[e] || reaches(memo_.lb[e], cap)) return {e, false};
  }
  return {e, expansion(L, e, cap)};
}

// Solve the child on `side` of split i of level t against cap: a leaf when it has one
// level, else a visit. Returns pushed (level t + 1 holds its expansion; its result comes
// when that frame finishes); else its bounds in lb, ub, solved.
bool Search::solve_child(i64 t, i64 i, int side, double cap, bool stopped, double& lb,
                         double& ub, bool& solved) {
  const i64 o = fr_.at(t, i);
  const i64 d = side == 1 ? fr_.dT[o] : fr_.dF[o];
  const double leaf = side == 1 ? fr_.leafT[o] : fr_.leafF[o];
  if (d <= 1) {
    lb = ub = leaf;
    solved = true;
    return false;
  }
  if (!stopped) ++ctr_.steps;
  child(t, i, side);
  const double E = fr_.stats(t, 1 - side)[6 * i + 3];
  const auto [ce, pushed] = visit(t + 1, d, leaf, E, cap, stopped);
  if (pushed) return true;
  lb = memo_.lb[ce];
  ub = memo_.ub[ce];
  solved = memo_.solved[ce] != 0;
  return false;
}

void Search::offer(i64 e, double total, i64 feat) {
  if (improves(total, memo_.ub[e])) {
    memo_.ub[e] = total;
    memo_.feat[e] = feat;
    memo_.klev[e] = -1;
  }
}

i64 Search::finish(i64 t) {
  const i64 e = fr_.eid[t];
  double m = INF;
  for (i64 i = 0; i < fr_.nk[t]; ++i) m = std::min(m, fr_.lbsum[fr_.at(t, i)]);
  const double lb = std::max(memo_.lb[e], std::min(memo_.ub[e], m));
  const double ub = memo_.ub[e];
  if ((fr_.completed[t] != 0 && ub <= fr_.cap[t]) || lb >= ub) {
    memo_.lb[e] = memo_.ub[e];
    memo_.solved[e] = 1;
  } else {
    memo_.lb[e] = lb;
  }
  return e;
}

i64 Search::limit() {
  if (fst_.deadline < INF) {
    fst_.now = now_seconds();
    if (fst_.now > fst_.deadline) return TIME_LIMIT;
  }
  if (ctr_.maxsteps >= 0 && ctr_.steps >= ctr_.maxsteps) return NODE_LIMIT;
  return 0;
}

// The root split of least bound sum and the cap it is solved against: min(ub, max(next
// least bound sum, its sum + half the gap)); after bftries capped attempts a split is
// solved against the incumbent. Every cap only decides what is proven, never what is
// pruned. Returns (-1, ub) when every split reaches the incumbent.
std::pair<i64, double> Search::best_first_split(double ub) {
  const i64 nk = fr_.nk[0];
  i64 i = -1;
  double best = INF;
  for (i64 j = 0; j < nk; ++j) {
    const double v = fr_.lbsum[j];
    const bool live = ub > 0 ? v < ub * (1.0 - RTOL) : v < ub;
    if (live && (i < 0 || v < best)) {
      i = j;
      best = v;
    }
  }
  if (i < 0) return {-1, ub};
  double second = INF;
  for (i64 j = 0; j < nk; ++j)
    if (j != i) second = std::min(second, fr_.lbsum[j]);
  const double bound = double(fr_.tries[i]) >= fst_.bftries
                           ? ub
                           : std::min(ub, std::max(second, best + 0.5 * (ub - best)));
  ++fr_.tries[i];
  return {i, bound};
}

i64 Search::step(i64 max_visits) {
  if (ctr_.status != RUNNING) return ctr_.status;
  const bool hier = P_.hier;
  if (ctr_.started == 0) {
    ctr_.started = 1;
    const i64 r = ctr_.root;
    std::copy(memo_.words(r), memo_.words(r) + P_.nw, fr_.cwords.begin());
    std::fill(fr_.cmask.begin(), fr_.cmask.end(), u8(1));
    const auto [e, pushed] = visit(0, memo_.lev[r], memo_.ub[r], 0.0, INF, ctr_.stopped != 0);
    if (!pushed) {
      ctr_.status = OPTIMAL;
      fst_.rootlb = memo_.lb[e];
      ctr_.top = -1;
      return ctr_.status;
    }
    ctr_.top = 0;
    if (ctr_.device_call) return RUNNING;
  }
  i64 t = ctr_.top;
  const i64 start = ctr_.steps;
  double c_lb = 0.0, c_ub = 0.0;
  bool c_solved = false;
  while (true) {
    const i64 ph = fr_.phase[t];
    const bool stopped = ctr_.stopped != 0;
    i64 i;
    int side;
    double capc;
    if (ph == NEXT) {
      if (stopped || fr_.pos[t] >= fr_.nk[t]) {
        if (stopped) fr_.completed[t] = 0;
        const i64 e = finish(t);
        c_lb = memo_.lb[e];
        c_ub = memo_.ub[e];
        c_solved = memo_.solved[e] != 0;
        --t;
        if (t < 0) {
          const i64 r = ctr_.root;
          if (memo_.solved[r]) ctr_.status = OPTIMAL;
          else ctr_.status = ctr_.stopped ? ctr_.stopped : TIME_LIMIT;
          fst_.rootlb = memo_.lb[r];
          ctr_.top = -1;
          return ctr_.status;
        }
        continue;
      }
      if (ctr_.steps - start >= max_visits) {
        ctr_.top = t;
        return RUNNING;
      }
      const i64 lim = limit();
      if (lim) {
        ctr_.stopped = lim;
        continue;
      }
      const i64 e = fr_.eid[t];
      double bound;
      if (t == 0 && hier && fst_.deadline < INF &&
          now_seconds() >= fst_.t0 + fst_.bf * (fst_.deadline - fst_.t0)) {
        std::tie(i, bound) = best_first_split(memo_.ub[e]);
        if (i < 0) {
          fr_.pos[t] = fr_.nk[t];
          continue;
        }
        fr_.pos[t] = -1;
      } else {
        i = fr_.order[fr_.at(t, fr_.pos[t])];
        bound = std::min(memo_.ub[e], fr_.cap[t]);
        const i64 o = fr_.at(t, i);
        if (hier && reaches(fr_.lbsum[o], bound)) {
          fr_.pos[t] = fr_.nk[t];
          continue;
        }
        if (hier && fr_.dF[o] > 1) {
          // the false child's bounds first (its memo entry, k-Means included): the split
          // may fail on them, else the true child gets a tighter cap
          const i64 dd = fr_.dF[o];
          child(t, i, 0);
          const i64 s = memo_.find_slot(fr_.cwords.data());
          i64 ce = memo_.lookup_at(s, dd);
          if (ce < 0) ce = entry(s, dd);
          if (memo_.lb[ce] > fr_.lbF[o]) {
            fr_.lbF[o] = memo_.lb[ce];
            fr_.lbsum[o] = fr_.lbT[o] + fr_.lbF[o];
            if (reaches(fr_.lbsum[o], bound)) {
              ++fr_.pos[t];  // this split only: the order is stale
              continue;
            }
          }
        }
      }
      const i64 o = fr_.at(t, i);
      fr_.bound[t] = bound;
      fr_.phase[t] = TRUE_CHILD;
      fr_.cur[t] = i;
      side = 1;  // the true child first, against the cap its sibling's bound leaves
      capc = hier ? bound - fr_.lbF[o] : INF;
    } else {
      i = fr_.cur[t];
      const i64 e = fr_.eid[t];
      const i64 o = fr_.at(t, i);
      if (ph == TRUE_CHILD) {
        fr_.lbT[o] = std::max(fr_.lbT[o], c_lb);
        fr_.lbsum[o] = fr_.lbT[o] + fr_.lbF[o];
        if (!c_solved) {
          if (stopped) {
            offer(e, c_ub + fr_.leafF[o], fr_.feat[o]);
            fr_.completed[t] = 0;
            fr_.pos[t] = fr_.nk[t];
          } else {
            ++fr_.pos[t];
          }
          fr_.phase[t] = NEXT;
          continue;
        }
        fr_.tub[t] = c_ub;
        fr_.phase[t] = FALSE_CHILD;
        side = 0;  // then the false child, against what the true child's tree leaves
        capc = hier ? fr_.bound[t] - c_ub : INF;
      } else {
        // the false child's result is in
        fr_.lbF[o] = std::max(fr_.lbF[o], c_lb);
        fr_.lbsum[o] = fr_.lbT[o] + fr_.lbF[o];
        if (c_solved || stopped) offer(e, fr_.tub[t] + c_ub, fr_.feat[o]);
        if (t == 0) {
          double m = INF;
          for (i64 j = 0; j < fr_.nk[0]; ++j) m = std::min(m, fr_.lbsum[j]);
          fst_.rootlb = std::max(memo_.lb[e], std::min(memo_.ub[e], m));
        }
        if (!c_solved && stopped) {
          fr_.completed[t] = 0;
          fr_.pos[t] = fr_.nk[t];
        } else {
          ++fr_.pos[t];
        }
        fr_.phase[t] = NEXT;
        continue;
      }
    }
    const bool pushed = solve_child(t, i, side, capc, stopped, c_lb, c_ub, c_solved);
    if (pushed) {
      ++t;
      if (ctr_.device_call) {
        ctr_.top = t;
        return RUNNING;
      }
    }
  }
}

double Search::live_lower_bound() const {
  double below = 0.0;
  bool have = false;
  for (i64 t = ctr_.top; t >= 0; --t) {
    const i64 e = fr_.eid[t];
    const i64 nk = fr_.nk[t];
    const i64 i = fr_.cur[t], ph = fr_.phase[t];
    double m = INF;
    for (i64 j = 0; j < nk; ++j) {
      const i64 o = fr_.at(t, j);
      double v = fr_.lbsum[o];
      if (have && j == i && (ph == TRUE_CHILD || ph == FALSE_CHILD))
        v = ph == TRUE_CHILD ? std::max(fr_.lbT[o], below) + fr_.lbF[o]
                             : fr_.lbT[o] + std::max(fr_.lbF[o], below);
      m = std::min(m, v);
    }
    const double lb = memo_.lb[e], ub = memo_.ub[e];
    below = nk ? std::max(lb, std::min(ub, m)) : lb;
    have = true;
  }
  return have ? std::max(fst_.rootlb, below) : fst_.rootlb;
}

}  // namespace osrt
