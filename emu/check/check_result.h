#pragma once
// The verdict of one check: report.json's checks.<name> = {pass, detail}.
#include <string>

namespace nvl::emu {

struct CheckResult {
  bool pass = true;
  std::string detail;  // what was checked, or the first violation and how many there were
};

}  // namespace nvl::emu
