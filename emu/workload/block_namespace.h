#pragma once
// Trace block ids are local to a file (or sub-agent); a namespace makes them global so that equal
// 64-bit ids mean the same content across every source loaded together.
#include <cstdint>
#include <string_view>

#include "emu/rt/hash.h"

namespace nvl::emu {

class BlockNamespace {
 public:
  explicit BlockNamespace(std::string_view name) : seed_(rt::splitmix64(rt::fnv1a64(name))) {}
  std::uint64_t hash(std::uint64_t local_id) const { return rt::splitmix64(seed_ ^ rt::splitmix64(local_id)); }

 private:
  std::uint64_t seed_;
};

}  // namespace nvl::emu
