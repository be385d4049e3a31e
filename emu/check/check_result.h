#pragma once
// The verdict of one check: report.json's checks.<name> = {status, pass, detail}.
#include <string>
#include <utility>

namespace nvl::emu {

struct CheckResult {
  bool pass = true;
  std::string detail;  // what was checked, or the first violation and how many there were
  // Nothing was checked (say, the run stopped at its time limit with work in flight): the run does not
  // fail on it, and every report shows "skipped", not "pass".
  bool skipped = false;

  static CheckResult skip(std::string why) { return {.pass = true, .detail = std::move(why), .skipped = true}; }
  // "pass", "FAIL" or "skipped", as the summary, report.json and the HTML report print it.
  const char* status() const { return skipped ? "skipped" : pass ? "pass" : "FAIL"; }
};

}  // namespace nvl::emu
