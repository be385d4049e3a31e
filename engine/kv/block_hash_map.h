#pragma once
// A hash map from block hashes to small values, for the KV pools' and the router's indexes: they hold
// up to millions of blocks and look one up for every block of every prompt, and std::unordered_map's
// node per entry made those lookups and their allocations a sizeable share of a run. Open addressing
// with linear probing in one array; erase shifts the following entries back (no tombstones), so
// lookups stay short however long entries come and go. Looked up, not iterated, but for erase_if.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/kv/block_hash.h"

namespace nvl::engine {

// How many blocks ahead a walk along a chain of hashes prefetches (see BlockHashMap::prefetch).
inline constexpr std::size_t kHashPrefetchAhead = 16;

template <class Value>
class BlockHashMap {
 public:
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool contains(BlockHash key) const { return find(key) != nullptr; }

  // The value under `key`, or null. Valid until the next insertion or erase.
  Value* find(BlockHash key) { return const_cast<Value*>(std::as_const(*this).find(key)); }
  const Value* find(BlockHash key) const {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.key == key) return &s.value;
    }
  }

  // Starts loading the memory where `key` would be: walks along a chain of hashes call it a few
  // blocks ahead, so that the lookups, each a likely cache miss in a large table, overlap.
  void prefetch(BlockHash key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[home(key)]);
  }

  // The value under `key`, value-initialised when new; `inserted` says which.
  Value& try_emplace(BlockHash key, bool& inserted) {
    if ((size_ + 1) * kMaxLoadDen > slots_.size() * kMaxLoadNum) grow();
    std::size_t i = home(key);
    for (; slots_[i].used; i = (i + 1) & mask_) {
      if (slots_[i].key == key) {
        inserted = false;
        return slots_[i].value;
      }
    }
    slots_[i] = Slot{key, Value{}, true};
    ++size_;
    inserted = true;
    return slots_[i].value;
  }
  Value& operator[](BlockHash key) {
    bool inserted = false;
    return try_emplace(key, inserted);
  }

  // Removes `key`; false when absent.
  bool erase(BlockHash key) {
    if (slots_.empty()) return false;
    std::size_t i = home(key);
    for (; slots_[i].key != key || !slots_[i].used; i = (i + 1) & mask_) {
      if (!slots_[i].used) return false;
    }
    erase_slot(i);
    return true;
  }
  // Removes every entry for which pred(key, value) is true, after calling it on every entry (which may
  // change the value). A walk over the whole table: for rare events, such as a cache reset.
  template <class Pred>
  void erase_if(Pred pred) {
    std::vector<BlockHash> doomed;
    for (Slot& s : slots_) {
      if (s.used && pred(s.key, s.value)) doomed.push_back(s.key);
    }
    for (const BlockHash key : doomed) erase(key);
  }
  void clear() {
    slots_.clear();
    mask_ = 0;
    size_ = 0;
  }

 private:
  struct Slot {
    BlockHash key = 0;
    Value value{};
    bool used = false;
  };
  // Grows at 1/2 full: linear probing stays at one or two probes a lookup.
  static constexpr std::size_t kMaxLoadNum = 1;
  static constexpr std::size_t kMaxLoadDen = 2;
  static constexpr std::size_t kMinSlots = 16;

  // Fibonacci hashing: the top bits of key * 2^64/phi, so keys that differ only in low bits spread too.
  std::size_t home(BlockHash key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  void erase_slot(std::size_t hole) {
    // Backward shift: pull later entries of the probe run into the hole when their home allows it.
    for (std::size_t j = (hole + 1) & mask_; slots_[j].used; j = (j + 1) & mask_) {
      const std::size_t h = home(slots_[j].key);
      // Entry j may move to `hole` unless its home lies cyclically in (hole, j].
      const bool home_after_hole = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (home_after_hole) continue;
      slots_[hole] = std::move(slots_[j]);
      hole = j;
    }
    slots_[hole] = Slot{};
    --size_;
  }

  void grow() {
    const std::size_t n = slots_.empty() ? kMinSlots : slots_.size() * 2;
    std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(n));
    mask_ = n - 1;
    shift_ = 64 - std::countr_zero(n);
    for (Slot& s : old) {
      if (!s.used) continue;
      std::size_t i = home(s.key);
      while (slots_[i].used) i = (i + 1) & mask_;
      slots_[i] = std::move(s);
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  int shift_ = 64;
  std::size_t size_ = 0;
};

}  // namespace nvl::engine
