// The Python interface of the engine (nanobind): the problem record, the search as init /
// step / terminate, the memo's entries, a frame's children for the device, and the
// terminal solver, k-means DP and losses as functions (the extraction, the greedy
// incumbent and the tests call them). Shapes and dtypes are checked in Python first
// (jaxsr/trees/engine/__init__.py); the checks here keep a wrong call from reading out of
// bounds.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>

#include <string>

#include "kmeans.hpp"
#include "search.hpp"
#include "stumps.hpp"
#include "tasks/absolute.hpp"
#include "tasks/squared.hpp"
#include "terminal.hpp"

namespace nb = nanobind;
using namespace osrt;

template <class T>
using In1 = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T>
using In2 = nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

namespace {

template <class T>
nb::ndarray<nb::numpy, T> out(std::vector<T>&& v, std::initializer_list<std::size_t> shape) {
  auto* p = new std::vector<T>(std::move(v));
  nb::capsule owner(p, [](void* q) noexcept { delete static_cast<std::vector<T>*>(q); });
  return nb::ndarray<nb::numpy, T>(p->data(), shape, owner);
}

template <class A>
auto vec(const A& a) {
  using T = std::remove_const_t<typename A::Scalar>;
  return std::vector<T>(a.data(), a.data() + a.size());
}

void require(bool ok, const std::string& what) {
  if (!ok) throw nb::value_error(("jaxsr.trees engine: " + what).c_str());
}

void check_mask(const Problem& P, const In1<u8>& mask) {
  require(i64(mask.shape(0)) == P.U, "a support mask needs one entry per class");
}

Problem make_problem(In2<u8> X, In2<u64> colw, In1<double> W, In1<double> mean,
                     In1<double> E, In1<double> N, In1<i64> korder, In1<double> ys,
                     In1<double> ws, In1<i64> cls_s, double lam, double norm, double m1,
                     double look, double kmedians_max, i64 kl, bool equiv, bool kmeans,
                     bool hier, bool l1) {
  Problem P;
  P.U = i64(X.shape(0));
  P.M = i64(X.shape(1));
  P.nw = std::max<i64>(1, (P.U + 63) / 64);
  require(i64(colw.shape(0)) == P.M && i64(colw.shape(1)) == P.nw, "colw must be (M, nw)");
  for (auto n : {W.shape(0), mean.shape(0), E.shape(0), N.shape(0), korder.shape(0)})
    require(i64(n) == P.U, "class statistics must have one entry per class");
  require(ys.shape(0) == ws.shape(0) && ys.shape(0) == cls_s.shape(0),
          "ys, ws and cls_s must have one length");
  require(norm > 0 && m1 >= 1 && lam >= 0 && kl >= 0 && kl <= 3, "bad parameters");
  P.X = vec(X);
  P.colw = vec(colw);
  P.W = vec(W);
  P.mean = vec(mean);
  P.E = vec(E);
  P.N = vec(N);
  P.korder = vec(korder);
  P.ys = vec(ys);
  P.ws = vec(ws);
  P.cls_s = vec(cls_s);
  for (i64 u : P.korder) require(0 <= u && u < P.U, "korder holds class indices");
  for (i64 u : P.cls_s) require(0 <= u && u < P.U, "cls_s holds class indices");
  for (u8 x : P.X) require(x <= 1, "X must be 0/1");
  P.ones.assign(std::size_t(P.U * P.M), 0);
  P.nones.assign(std::size_t(P.U), 0);
  feature_lists(P.X.data(), P.U, P.M, P.ones.data(), P.nones.data());
  P.lam = lam; P.norm = norm; P.m1 = m1; P.look = look; P.kmedians_max = kmedians_max;
  P.kl = kl; P.equiv = equiv; P.kmeans = kmeans; P.hier = hier; P.l1 = l1;
  return P;
}

nb::dict frame(Search& s, i64 L) {
  Frames& fr = s.frames();
  require(0 <= L && L < fr.D, "no such frame");
  const i64 nk = fr.nk[L], M = fr.M, U = fr.U;
  const std::size_t k = std::size_t(nk);
  auto part = [&](const auto& v) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    return out(std::vector<T>(v.begin() + L * M, v.begin() + L * M + nk), {k});
  };
  auto stats = [&](int side) {
    const double* p = fr.stats(L, side);
    return out(std::vector<double>(p, p + nk * 6), {k, 6});
  };
  nb::dict d;
  d["nk"] = nk;
  d["levels"] = s.memo().lev[fr.eid[L]];
  d["feat"] = part(fr.feat);
  d["dT"] = part(fr.dT);
  d["dF"] = part(fr.dF);
  d["leafT"] = part(fr.leafT);
  d["leafF"] = part(fr.leafF);
  d["stT"] = stats(0);
  d["stF"] = stats(1);
  d["mask"] = out(std::vector<u8>(fr.mask.begin() + L * U, fr.mask.begin() + (L + 1) * U),
                  {std::size_t(U)});
  return d;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "The optimal sparse regression tree engine (OSRT), compiled ahead of time.";

  nb::class_<Problem>(m, "Problem")
      .def_ro("U", &Problem::U)
      .def_ro("M", &Problem::M)
      .def_ro("nw", &Problem::nw)
      .def_ro("l1", &Problem::l1);
  m.def("make_problem", &make_problem);

  nb::class_<Search>(m, "Search")
      .def(nb::init<Problem, i64, double, double, double, i64, double, double, double, bool>(),
           nb::arg("problem"), nb::arg("levels"), nb::arg("incumbent"), nb::arg("time_left"),
           nb::arg("elapsed"), nb::arg("max_steps"), nb::arg("kernel_rate"),
           nb::arg("best_first_after"), nb::arg("best_first_tries"), nb::arg("device"))
      .def("step", &Search::step, nb::arg("max_visits"), nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("status", [](Search& s) { return s.counters().status; })
      .def_prop_ro("steps", [](Search& s) { return s.counters().steps; })
      .def_prop_ro("kernel_calls", [](Search& s) { return s.counters().kernel; })
      .def_prop_ro("kmeans", [](Search& s) { return s.counters().kmeans; })
      .def_prop_ro("n_entries", [](Search& s) { return s.memo().size(); })
      .def_prop_ro("n_words", [](Search& s) { return s.memo().nw(); })
      .def_prop_ro("root", &Search::root)
      .def_prop_ro("root_lb", [](Search& s) { return s.clock().rootlb; })
      .def_prop_ro("top", [](Search& s) { return s.counters().top; })
      .def_prop_ro("device_call", [](Search& s) { return s.counters().device_call != 0; })
      .def("live_lower_bound", &Search::live_lower_bound)
      .def("lookup", [](Search& s, In1<u64> w, i64 lev) {
        require(i64(w.shape(0)) == s.memo().nw(), "a support has nw words");
        return s.memo().lookup(w.data(), lev);
      })
      .def("entry", [](Search& s, i64 e) {
        Memo& mm = s.memo();
        require(0 <= e && e < mm.size(), "no such entry");
        return nb::make_tuple(mm.lb[e], mm.ub[e], mm.feat[e], mm.solved[e] != 0, mm.klev[e],
                              mm.deep[e]);
      })
      .def("insert", [](Search& s, In1<u64> w, i64 lev, double lb, double ub, i64 feat,
                        bool solved, i64 klev, double deep) {
        require(i64(w.shape(0)) == s.memo().nw(), "a support has nw words");
        return s.memo().insert(w.data(), lev, lb, ub, feat, solved, klev, deep);
      })
      .def("frame", &frame)
      .def("resume", [](Search& s, i64 L, bool root_bounds) {
        require(s.counters().device_call != 0 && L == s.counters().top, "no device call");
        s.counters().device_call = 0;
        s.finish_expansion(L, root_bounds);
      });

  m.def("subtree", [](const Problem& P, In1<u8> mask, i64 levels, double lamn) {
    check_mask(P, mask);
    require(1 <= levels && levels <= 3, "levels must be 1, 2 or 3");
    return support_subtree(P, mask.data(), levels, lamn);
  }, "Exact best tree with at most `levels` split levels of a support (squared loss): "
     "(cost in loss units, root feature or -1).");
  m.def("splits", [](const Problem& P, In1<u8> mask) {
    check_mask(P, mask);
    std::vector<i64> keep(std::size_t(P.M));
    const i64 k = support_splits(mask.data(), P.X.data(), P.U, P.M, keep.data());
    keep.resize(std::size_t(k));
    return out(std::move(keep), {std::size_t(k)});
  }, "The lowest feature of each distinct split of a support.");
  m.def("leaf_loss", [](const Problem& P, In1<u8> mask) {
    check_mask(P, mask);
    return P.l1 ? AbsoluteTask().leaf_loss(P, mask.data()) : SquaredTask().leaf_loss(P, mask.data());
  }, "The loss of one leaf on a support (internal units).");
  m.def("support_bounds", [](const Problem& P, In1<u8> mask, i64 d) {
    check_mask(P, mask);
    require(d >= 1, "levels must be >= 1");
    const SupportBounds b = P.l1 ? AbsoluteTask().bounds(P, mask.data(), d)
                                 : SquaredTask().bounds(P, mask.data(), d);
    return nb::make_tuple(b.leaf, b.b, b.deep, b.n_kmeans);
  }, "A new subproblem's leaf loss (internal units), the bound of the trees that split and "
     "the deep bound (objective units), and the k-means bounds computed (0 or 1).");
  m.def("absolute_split_losses", [](const Problem& P, In1<u8> mask, In1<i64> F) {
    check_mask(P, mask);
    require(P.l1, "absolute loss only");
    const std::size_t k = F.shape(0);
    for (std::size_t q = 0; q < k; ++q) require(0 <= F(q) && F(q) < P.M, "bad feature");
    std::vector<double> lt(k), lf(k);
    AbsoluteTask().split_losses(P, mask.data(), F.data(), i64(k), nullptr, nullptr, lt.data(),
                                lf.data());
    return std::make_pair(out(std::move(lt), {k}), out(std::move(lf), {k}));
  }, "The absolute losses of the two children of the splits F of a support.");
  m.def("subtree_splits", [](In2<u8> X, In2<double> st, i64 levels, double lamn, double m1) {
    const i64 U = i64(X.shape(0)), M = i64(X.shape(1));
    require(i64(st.shape(0)) == U && st.shape(1) == 4, "st must be (U, 4)");
    require(1 <= levels && levels <= 3, "levels must be 1, 2 or 3");
    for (std::size_t q = 0; q < X.size(); ++q) require(X.data()[q] <= 1, "X must be 0/1");
    std::vector<double> split(static_cast<std::size_t>(M));
    const double leaf = subtree_splits(X.data(), st.data(), U, M, levels, lamn, m1, split.data());
    return std::make_pair(leaf, out(std::move(split), {std::size_t(M)}));
  }, "The terminal solver: (leaf cost, cost of the best tree per root feature).");
  m.def("kmeans_losses", [](In1<double> W, In1<double> S, In1<double> Q, i64 max_clusters,
                            double stop_gain, bool use_stop) {
    const i64 n = i64(W.shape(0));
    require(i64(S.shape(0)) == n && i64(Q.shape(0)) == n, "W, S, Q must have one length");
    require(max_clusters >= 1, "max_clusters must be >= 1");
    std::vector<double> o(std::size_t(std::max<i64>(1, std::min(max_clusters, n))));
    const i64 k = kmeans_losses(W.data(), S.data(), Q.data(), n, max_clusters, stop_gain,
                                use_stop, o.data());
    o.resize(std::size_t(k));
    return out(std::move(o), {std::size_t(k)});
  }, "Constrained 1-D k-means losses of 1, 2, ... clusters (OSRT Algorithm 1).");
  m.def("best_stump", [](In2<i64> order, In2<u8> cand, In1<double> g, In1<double> w, double S,
                         double Wt) {
    const i64 p = i64(order.shape(0)), n = i64(order.shape(1));
    require(n >= 2 && i64(cand.shape(0)) == p && i64(cand.shape(1)) == n - 1,
            "order must be (p, n) and cand (p, n - 1), n >= 2");
    require(i64(g.shape(0)) == n && i64(w.shape(0)) == n, "g, w need one entry per sample");
    bool inside = true;
    for (std::size_t q = 0; q < order.size(); ++q)
      inside &= 0 <= order.data()[q] && order.data()[q] < n;
    require(inside, "order holds sample indices");
    const Stump s = best_stump(order.data(), cand.data(), g.data(), w.data(), n, p, S, Wt);
    return std::make_tuple(s.score, s.feature, s.pos, s.sl, s.wl);
  }, "The best least-squares stump over presorted columns: (score, feature, pos, S_L, W_L).");
  m.def("kmedians_losses", [](In1<double> v, In1<double> w, i64 max_clusters, double stop_gain,
                              bool use_stop) {
    const i64 n = i64(v.shape(0));
    require(i64(w.shape(0)) == n, "v, w must have one length");
    require(max_clusters >= 1, "max_clusters must be >= 1");
    std::vector<double> o(std::size_t(std::max<i64>(1, std::min(max_clusters, n))));
    const i64 k = kmedians_losses(v.data(), w.data(), n, max_clusters, stop_gain, use_stop, o.data());
    o.resize(std::size_t(k));
    return out(std::move(o), {std::size_t(k)});
  }, "Weighted 1-D k-medians losses of 1, 2, ... clusters.");
}
