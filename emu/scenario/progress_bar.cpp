#include "emu/scenario/progress_bar.h"

#include <algorithm>
#include <iomanip>
#include <string>

namespace nvl::emu {

namespace {
constexpr auto kRedraw = std::chrono::milliseconds(250);
constexpr int kBarWidth = 30;
}  // namespace

ProgressBar::ProgressBar(std::ostream& out, double limit_s)
    : out_(out), limit_s_(limit_s), start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

void ProgressBar::update(double sim_s, std::uint64_t done, std::uint64_t submitted) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < kRedraw) return;
  last_draw_ = now;
  const double wall_s = std::chrono::duration<double>(now - start_).count();
  const double share = limit_s_ > 0 ? std::clamp(sim_s / limit_s_, 0.0, 1.0) : 0.0;
  const int filled = static_cast<int>(share * kBarWidth);
  out_ << "\r[" << std::string(static_cast<std::size_t>(filled), '#')
       << std::string(static_cast<std::size_t>(kBarWidth - filled), ' ') << "] " << std::fixed << std::setprecision(1)
       << sim_s << "/" << limit_s_ << " s sim  " << done << "/" << submitted << " requests done  "
       << (wall_s > 0 ? sim_s / wall_s : 0.0) << "x  " << std::flush;
  drawn_ = true;
}

void ProgressBar::finish() {
  if (drawn_) out_ << "\r\033[K" << std::flush;
  drawn_ = false;
}

}  // namespace nvl::emu
