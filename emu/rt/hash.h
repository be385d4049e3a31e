#pragma once
// Small, stable hashes used for seeds and the event-log digest.
#include <cstdint>
#include <string_view>

namespace nvl::rt {

inline constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;

constexpr std::uint64_t fnv1a64(std::string_view s, std::uint64_t h = kFnvOffset) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace nvl::rt
