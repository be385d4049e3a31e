#pragma once
// A one-line progress bar for long runs on a terminal: simulated time against the limit, requests
// done, speed. Redrawn at most every few hundred milliseconds of wall time; it reads the wall clock
// only, never the runtime's state beyond what it is handed, so it cannot change a run.
#include <chrono>
#include <cstdint>
#include <ostream>

namespace nvl::emu {

class ProgressBar {
 public:
  ProgressBar(std::ostream& out, double limit_s);
  void update(double sim_s, std::uint64_t done, std::uint64_t submitted);
  // Clears the line.
  void finish();

 private:
  std::ostream& out_;
  double limit_s_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  bool drawn_ = false;
};

}  // namespace nvl::emu
