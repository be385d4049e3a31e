#pragma once
// A set of sessions from one trace, folder of traces or generator.
#include <cstddef>
#include <string>
#include <vector>

#include "emu/workload/session.h"

namespace nvl::emu {

struct Workload {
  std::string source;  // what it was loaded from, for reports
  std::vector<Session> sessions;

  std::size_t request_count() const {
    std::size_t n = 0;
    for (const auto& s : sessions) n += s.requests.size();
    return n;
  }
};

}  // namespace nvl::emu
