#pragma once
// Counts a checker's violations and keeps the first one's description: enough to say what broke
// without storing a long history.
#include <cstdint>
#include <string>

#include "emu/check/check_result.h"

namespace nvl::emu {

class Violations {
 public:
  void add(std::string what) {
    if (count_++ == 0) first_ = std::move(what);
  }
  std::uint64_t count() const { return count_; }
  // Fails with the first violation (and the count), else passes with `ok_detail`.
  CheckResult result(std::string ok_detail) const {
    if (count_ == 0) return {true, std::move(ok_detail)};
    return {false, first_ + (count_ > 1 ? " (and " + std::to_string(count_ - 1) + " more)" : "")};
  }

 private:
  std::uint64_t count_ = 0;
  std::string first_;
};

}  // namespace nvl::emu
