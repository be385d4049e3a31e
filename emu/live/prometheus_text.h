#pragma once
// Prometheus text exposition (format 0.0.4), written as vLLM's prometheus_client writes it, so that
// scrapers and recording rules written for vLLM read it unchanged: labels in the order given, `le`
// last and as Python prints a float ("1.0", "2.5"); counts and counters as exact integers.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nvl::emu::live {

using PromLabels = std::vector<std::pair<std::string, std::string>>;

// A value as Python's repr prints a float: the shortest text that reads back to it, with ".0" when
// it is integral ("1.0", "0.25", "1e-05").
std::string python_float(double v);

// Histogram buckets as vLLM's build_1_2_5_buckets(max): 1, 2, 5, 10, 20, 50, ... up to `max`.
std::vector<double> one_two_five_buckets(std::int64_t max);

class PrometheusText {
 public:
  // Starts a metric family: its HELP and TYPE lines. Every sample of the family follows it.
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, const PromLabels& labels, std::uint64_t value);
  void sample(std::string_view name, const PromLabels& labels, std::int64_t value);
  void sample(std::string_view name, const PromLabels& labels, double value);
  // A histogram's samples: cumulative buckets (one count per bound, not cumulative, then the total
  // for +Inf), its sum and its count.
  void histogram(std::string_view name, const PromLabels& labels, const std::vector<double>& bounds,
                 const std::vector<std::uint64_t>& counts, std::uint64_t total, double sum);
  const std::string& text() const { return out_; }

 private:
  void line(std::string_view name, const PromLabels& labels, const std::string& value);
  std::string out_;
};

}  // namespace nvl::emu::live
