#pragma once
#include <cstddef>
#include <limits>

namespace nvl::emu {

// What a loader reads of a trace.
struct LoadOptions {
  std::size_t max_sessions = std::numeric_limits<std::size_t>::max();  // stop after this many conversations
};

}  // namespace nvl::emu
