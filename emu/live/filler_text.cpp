#include "emu/live/filler_text.h"

#include <array>

#include "emu/rt/hash.h"

namespace nvl::emu::live {

namespace {

constexpr std::array<std::string_view, 32> kWords = {
    "the",    "rack",   "serves", "tokens", "with",   "expert", "cache",  "prefill", "decode", "links",  "switch",
    "memory", "router", "ranks",  "batch",  "kernel", "layer",  "fabric", "grace",   "blocks", "stream", "model",
    "steps",  "queue",  "load",   "peer",   "graph",  "flows",  "hits",   "moves",   "runs",   "ready"};

}  // namespace

FillerText::FillerText(std::uint64_t seed, std::string_view prompt)
    : key_(rt::splitmix64(rt::fnv1a64(prompt, rt::splitmix64(seed)))) {}

std::string FillerText::tokens(std::int64_t first, std::int64_t count) const {
  std::string out;
  for (std::int64_t i = first; i < first + count; ++i) {
    const std::uint64_t draw = rt::splitmix64(key_ + static_cast<std::uint64_t>(i));
    out += kWords[draw % kWords.size()];
    out += ' ';
  }
  return out;
}

}  // namespace nvl::emu::live
