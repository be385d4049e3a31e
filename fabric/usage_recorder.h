#pragma once
// Link utilisation over time for reports: bytes carried per channel per fixed interval. The flow model
// reports each channel's load (bytes/s) whenever it changes; the recorder spreads it over the intervals.
#include <vector>

#include "emu/rt/time.h"

namespace nvl::fabric {

class UsageRecorder {
 public:
  // An interval of zero turns recording off.
  UsageRecorder(std::size_t channels, rt::Duration interval);

  // The channel carried `bytes_per_s` from `from` to `to`.
  void add(int channel, rt::Time from, rt::Time to, double bytes_per_s);

  bool enabled() const { return interval_ > rt::Duration(); }
  rt::Duration interval() const { return interval_; }
  // Bytes per interval, interval k covering [k * interval, (k + 1) * interval); may be shorter than others.
  const std::vector<double>& bytes(int channel) const { return bytes_[static_cast<std::size_t>(channel)]; }
  double total_bytes(int channel) const;

 private:
  rt::Duration interval_;
  std::vector<std::vector<double>> bytes_;
};

}  // namespace nvl::fabric
