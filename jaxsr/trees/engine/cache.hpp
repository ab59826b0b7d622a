// The memo: every subproblem (support, levels) met by the search and its entry (lower
// bound, best objective found, root split of that tree, solved, kernel levels, deep
// bound). An open-addressing hash table over the bit-packed supports; each slot heads a
// chain of the entries of one support with different levels, so the bounds of the same
// support with more levels are found at once.
#pragma once

#include "common.hpp"

namespace osrt {

struct Entry {
  double lb, ub;
  i64 feat;
  bool solved;
  i64 klev;
  double deep;
};

class Memo {
 public:
  explicit Memo(i64 nw, i64 cap = 1024);

  i64 size() const { return n_; }
  i64 nw() const { return nw_; }
  // the table slot of support w: its chain, or the empty slot where it goes
  i64 find_slot(const u64* w) const;
  // the entry of (chain at slot, levels), or -1
  i64 lookup_at(i64 slot, i64 lev) const;
  i64 lookup(const u64* w, i64 lev) const { return lookup_at(find_slot(w), lev); }
  // the first entry of the chain at slot (-1: none) and the next of entry e
  i64 head(i64 slot) const { return table_[slot]; }
  i64 next(i64 e) const { return nxt_[e]; }
  // a new entry of support w (whose slot is `slot`, found before); returns its id
  i64 insert_at(i64 slot, const u64* w, i64 lev, double lb, double ub, i64 feat, bool solved,
                i64 klev, double deep);
  // add or overwrite the entry of (w, lev)
  i64 insert(const u64* w, i64 lev, double lb, double ub, i64 feat, bool solved, i64 klev,
             double deep);
  const u64* words(i64 e) const { return words_.data() + e * nw_; }

  // the fields, by entry id
  std::vector<i64> lev, feat, klev;
  std::vector<char> solved;
  std::vector<double> lb, ub, deep;

 private:
  void rebuild(i64 table_size);
  i64 nw_, n_ = 0;
  std::vector<u64> words_;
  std::vector<i64> nxt_, table_;
};

}  // namespace osrt
