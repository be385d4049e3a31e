#include "emu/check/resource_baseline_checker.h"

#include "emu/check/violations.h"

namespace nvl::emu {

namespace {

template <typename Map>
void compare(const Map& before, const Map& after, const std::set<std::string>& lost, const std::string& unit,
             Violations& v) {
  for (const auto& [name, base] : before) {
    const auto it = after.find(name);
    if (it == after.end()) {
      if (!lost.contains(name)) v.add(name + ": missing from the final snapshot");
    } else if (it->second != base) {
      v.add(name + ": " + std::to_string(it->second) + " " + unit + " after drain, " + std::to_string(base) +
            " after start-up");
    }
  }
  for (const auto& [name, value] : after) {
    if (!before.contains(name)) v.add(name + ": not in the start-up snapshot");
  }
}

}  // namespace

CheckResult ResourceBaselineChecker::finish(const RunEnd& end) {
  if (!end.quiescent) return CheckResult::skip("the run stopped at its time limit with work in flight");
  Violations v;
  compare(end.baseline.kv_used_blocks, end.final.kv_used_blocks, end.final.lost, "KV blocks in use", v);
  compare(end.baseline.memory_used_bytes, end.final.memory_used_bytes, end.final.lost, "bytes allocated", v);
  return v.result(std::to_string(end.final.kv_used_blocks.size()) + " KV pools and " +
                  std::to_string(end.final.memory_used_bytes.size()) + " memories back at their start-up use");
}

}  // namespace nvl::emu
