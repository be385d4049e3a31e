#include "emu/live/stop_matcher.h"

#include <algorithm>

namespace nvl::emu::live {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const auto& s : stops_) hold_ = std::max(hold_, s.empty() ? 0 : s.size() - 1);
}

std::string StopMatcher::feed(std::string_view text) {
  if (stopped_) return "";
  pending_ += text;
  // Sent text holds no match, nor the start of one that ends in pending_ (it kept the last hold_ bytes).
  std::size_t cut = std::string::npos;
  for (const auto& s : stops_) cut = std::min(cut, pending_.find(s));
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, cut);
    pending_.clear();
    return out;
  }
  if (pending_.size() <= hold_) return "";
  std::string out = pending_.substr(0, pending_.size() - hold_);
  pending_.erase(0, pending_.size() - hold_);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(pending_);
  return stopped_ ? std::string() : out;
}

}  // namespace nvl::emu::live
