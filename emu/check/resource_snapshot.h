#pragma once
// The resources a drained run must give back: every KV block pool's referenced blocks and every
// memory's allocated bytes, by name ("rank3 gpu", "prefill grace", "gpu7 hbm").
#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace nvl::emu {

struct ResourceSnapshot {
  std::map<std::string, std::int64_t> kv_used_blocks;   // pool -> blocks held by requests (not merely cached)
  std::map<std::string, std::uint64_t> memory_used_bytes;
  std::set<std::string> lost;  // memories of GPUs lost to a fault: gone with them, not compared
};

}  // namespace nvl::emu
