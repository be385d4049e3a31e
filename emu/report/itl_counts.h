#pragma once
// Inter-token latencies of the completed requests, each distinct value with how often it occurred: the
// requests of one lockstep step share their gap, so a run's millions of gaps hold far fewer values. Gaps
// are gathered as they come and folded into the sorted counts in batches, each batch at least a quarter as
// large as the counts (so a fold costs O(1) a gap), rather than counted one by one in a hash map, where
// each of ten million gaps cost a cache miss.
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace nvl::emu {

class ItlCounts {
 public:
  using Count = std::pair<double, std::uint64_t>;

  ItlCounts() = default;
  // Values with their counts, in any order; a value given twice counts both times.
  ItlCounts(std::initializer_list<Count> counts);

  // `n` gaps of `gap_ms` each.
  void add(double gap_ms, std::uint64_t n = 1);
  // Each distinct value with its count, ascending by value.
  const std::vector<Count>& sorted() const;

 private:
  void fold() const;

  // Folding is invisible to a reader, so sorted() may do it on a const object.
  mutable std::vector<double> pending_;  // gaps added since the last fold, unsorted
  mutable std::vector<Count> counts_;    // ascending by value, each value once
};

}  // namespace nvl::emu
