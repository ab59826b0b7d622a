// The search: one branch and bound over subproblems (OSRT section 4), depth first in the
// style of GOSDT / MurTree, shaped as init / step / terminate with a status.
//
// A subproblem is a support over the equivalence classes and the levels a subtree on it
// may use; its entry lives in the memo (cache.hpp). The frontier is a stack of frames, one
// per level: per frame the children of every admissible split, their leaf costs, levels
// and lower bounds, the order in which the splits are tried and the split being worked
// on. A child's support is its parent's words and'ed with its split's column.
#pragma once

#include <memory>

#include "cache.hpp"
#include "tasks/task.hpp"

namespace osrt {

enum Phase : i64 { NEXT = 0, TRUE_CHILD = 1, FALSE_CHILD = 2 };
enum Status : i64 { RUNNING = 0, OPTIMAL = 1, TIME_LIMIT = 2, NODE_LIMIT = 3 };

// The frontier stack: per level (D of them) a frame; per split (M per frame) its fields.
struct Frames {
  i64 D = 0, U = 0, M = 0, nw = 1;
  std::vector<u64> words;                       // (D, nw) the support
  std::vector<u8> mask;                         // (D, U)
  std::vector<i64> eid, nk, pos, phase, cur, completed;  // (D,)
  std::vector<double> cap, bound, tub;          // (D,)
  std::vector<i64> feat, dT, dF, order;         // (D, M)
  std::vector<double> leafT, leafF, lbT, lbF, lbsum;  // (D, M)
  std::vector<double> st;                       // (D, 2, M, 6) children's statistics
  std::vector<i64> tries, scratch;              // (M,)
  std::vector<u8> cmask;                        // (U,) the child being visited
  std::vector<u64> cwords;                      // (nw,)

  void resize(i64 levels);
  i64 at(i64 t, i64 i) const { return t * M + i; }
  double* stats(i64 t, i64 side) { return st.data() + ((t * 2 + side) * M) * 6; }
};

struct Counters {
  i64 steps = 0, kernel = 0, kmeans = 0, status = RUNNING, stopped = 0, top = -1;
  i64 started = 0, maxsteps = -1, root = -1, device_call = 0;
};

struct Clock {
  double rootlb = 0, rate = 3e-8, deadline = INF, t0 = 0, bf = 0.5, bftries = 2, now = 0;
};

double now_seconds();  // a monotonic clock (seconds)

class Search {
 public:
  // init: the root (all classes, `levels` levels) and its entry, its best tree the
  // incumbent's objective when that is better than its leaf (feat GREEDY); `time_left`
  // seconds (inf: none) from `elapsed` seconds after the fit started.
  // device: an expansion with at least 3 levels returns to Python (device_call) for the
  // device to evaluate its children.
  Search(Problem problem, i64 levels, double incumbent, double time_left, double elapsed,
         i64 max_steps, double kernel_rate, double best_first_after, double best_first_tries,
         bool device);

  // step: up to max_visits subproblem visits; returns the status (RUNNING: call again;
  // device_call() set: the children of level top() await the device)
  i64 step(i64 max_visits);
  // after a device call: the end of the expansion of level L
  void finish_expansion(i64 L, bool root_bounds);
  // the root's proven lower bound now, bottom up through the frontier
  double live_lower_bound() const;

  const Problem& problem() const { return P_; }
  Memo& memo() { return memo_; }
  Frames& frames() { return fr_; }
  Counters& counters() { return ctr_; }
  Clock& clock() { return fst_; }
  i64 root() const { return ctr_.root; }
  double leaf_loss(const u8* mask) const;

 private:
  void child(i64 t, i64 i, int side);
  i64 entry(i64 slot, i64 d);
  i64 root_entry(i64 d, double incumbent);
  void split_sums(i64 L, double* tot);
  bool expansion(i64 L, i64 e, double cap);
  i64 admissible_splits(i64 L, const double* tot, i64 k);
  void memo_bounds(i64 L, i64 nk);
  void order_splits(i64 L, i64 nk, double ub);
  void split_leaves(i64 L, i64 nk, i64 d);
  std::pair<i64, bool> visit(i64 L, i64 d, double leaf, double E, double cap, bool stopped);
  bool solve_child(i64 t, i64 i, int side, double cap, bool stopped, double& lb, double& ub,
                   bool& solved);
  void offer(i64 e, double total, i64 feat);
  i64 finish(i64 t);
  i64 limit();
  std::pair<i64, double> best_first_split(double ub);
  std::pair<double, i64> kernel(const u8* mask, i64 levels) const;
  bool affordable(const u8* mask, i64 levels) const;

  Problem P_;
  std::unique_ptr<Task> task_;
  Memo memo_;
  Frames fr_;
  Counters ctr_;
  Clock fst_;
};

}  // namespace osrt
