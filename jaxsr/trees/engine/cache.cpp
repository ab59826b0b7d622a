#include "cache.hpp"

#include <cstring>

namespace osrt {

Memo::Memo(i64 nw, i64 cap) : nw_(nw) {
  i64 t = 1;
  while (t < 4 * cap) t *= 2;
  table_.assign(t, -1);
  const std::size_t c = std::size_t(cap);
  lev.reserve(c); feat.reserve(c); klev.reserve(c); solved.reserve(c);
  lb.reserve(c); ub.reserve(c); deep.reserve(c); nxt_.reserve(c);
  words_.reserve(c * std::size_t(nw));
}

i64 Memo::find_slot(const u64* w) const {
  const u64 msk = u64(table_.size() - 1);
  i64 s = i64(hash_words(w, nw_) & msk);
  while (true) {
    const i64 e = table_[s];
    if (e < 0) return s;
    if (std::memcmp(words_.data() + e * nw_, w, sizeof(u64) * std::size_t(nw_)) == 0) return s;
    s = (s + 1) & i64(msk);
  }
}

i64 Memo::lookup_at(i64 slot, i64 level) const {
  i64 e = table_[slot];
  while (e >= 0) {
    if (lev[e] == level) return e;
    e = nxt_[e];
  }
  return -1;
}

void Memo::rebuild(i64 table_size) {
  table_.assign(table_size, -1);
  for (i64 i = 0; i < n_; ++i) {
    const i64 s = find_slot(words_.data() + i * nw_);
    nxt_[i] = table_[s];
    table_[s] = i;
  }
}

i64 Memo::insert_at(i64 slot, const u64* w, i64 level, double l, double u, i64 f, bool sv,
                    i64 kl, double dp) {
  const i64 i = n_;
  words_.insert(words_.end(), w, w + nw_);
  lev.push_back(level); lb.push_back(l); ub.push_back(u); feat.push_back(f);
  solved.push_back(sv ? 1 : 0); klev.push_back(kl); deep.push_back(dp);
  ++n_;
  if (4 * n_ > i64(table_.size())) {  // keep the table at most a quarter full
    nxt_.push_back(-1);
    rebuild(2 * i64(table_.size()));  // chains in the order of creation, this one included
    return i;
  }
  nxt_.push_back(table_[slot]);
  table_[slot] = i;
  return i;
}

i64 Memo::insert(const u64* w, i64 level, double l, double u, i64 f, bool sv, i64 kl,
                 double dp) {
  const i64 s = find_slot(w);
  const i64 e = lookup_at(s, level);
  if (e >= 0) {
    lb[e] = l; ub[e] = u; deep[e] = dp; feat[e] = f; solved[e] = sv ? 1 : 0; klev[e] = kl;
    return e;
  }
  return insert_at(s, w, level, l, u, f, sv, kl, dp);
}

}  // namespace osrt
