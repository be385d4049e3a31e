#include "emu/report/benchmark_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace nvl::emu {

namespace {

constexpr double kMsPerS = 1e3;
constexpr double kMedian = 50, kP90 = 90, kP99 = 99;

double ms(rt::Duration d) { return d.seconds() * kMsPerS; }

nlohmann::json to_json(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"median", d.median}, {"p90", d.p90}, {"p99", d.p99}};
}

}  // namespace

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (rank - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

Distribution distribution(const std::vector<double>& values) {
  Distribution d;
  if (values.empty()) return d;
  d.count = values.size();
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  d.median = percentile(values, kMedian);
  d.p90 = percentile(values, kP90);
  d.p99 = percentile(values, kP99);
  return d;
}

Distribution distribution(const ItlCounts& itl) {
  Distribution d;
  const std::vector<ItlCounts::Count>& counts = itl.sorted();
  double sum = 0;
  for (const auto& [value, n] : counts) {
    d.count += n;
    sum += value * static_cast<double>(n);
  }
  if (d.count == 0) return d;
  d.mean = sum / static_cast<double>(d.count);
  // The order statistic at rank k (0-based) of the values repeated.
  const auto at = [&](std::uint64_t k) {
    std::uint64_t seen = 0;
    for (const auto& [value, n] : counts) {
      seen += n;
      if (k < seen) return value;
    }
    return counts.back().first;
  };
  const auto percentile_of = [&](double p) {
    const double rank = p / 100.0 * static_cast<double>(d.count - 1);
    const auto lo = static_cast<std::uint64_t>(std::floor(rank));
    const double low = at(lo), high = at(std::min(lo + 1, d.count - 1));
    return low + (rank - static_cast<double>(lo)) * (high - low);
  };
  d.median = percentile_of(kMedian);
  d.p90 = percentile_of(kP90);
  d.p99 = percentile_of(kP99);
  return d;
}

BenchmarkMetrics benchmark_metrics(std::span<const BenchmarkSample> samples, const ItlCounts& itl_ms, std::uint64_t gpus) {
  BenchmarkMetrics m;
  if (samples.empty()) return m;
  rt::Time first_sent = samples.front().sent;
  rt::Time last_over = samples.front().over;
  std::vector<double> ttft, tpot, e2e;
  double per_user_sum = 0;
  std::uint64_t per_user_count = 0;
  for (const BenchmarkSample& s : samples) {
    first_sent = std::min(first_sent, s.sent);
    last_over = std::max(last_over, s.over);
    if (!s.finished || !s.first_token) {
      ++m.failed;
      continue;
    }
    ++m.completed;
    m.input_tokens += static_cast<std::uint64_t>(s.input_tokens);
    m.output_tokens += static_cast<std::uint64_t>(s.output_tokens);
    ttft.push_back(ms(*s.first_token - s.sent));
    e2e.push_back(ms(*s.finished - s.sent));
    const rt::Duration decode = *s.finished - *s.first_token;
    if (s.output_tokens > 1) {
      tpot.push_back(ms(decode) / static_cast<double>(s.output_tokens - 1));
      if (decode.ns() > 0) {
        per_user_sum += static_cast<double>(s.output_tokens - 1) / decode.seconds();
        ++per_user_count;
      }
    }
  }
  m.duration_s = (last_over - first_sent).seconds();
  m.ttft_ms = distribution(ttft);
  m.tpot_ms = distribution(tpot);
  m.itl_ms = distribution(itl_ms);
  m.e2e_ms = distribution(e2e);
  if (m.duration_s > 0) {
    m.request_throughput_per_s = static_cast<double>(m.completed) / m.duration_s;
    m.input_tokens_per_s = static_cast<double>(m.input_tokens) / m.duration_s;
    m.output_tokens_per_s = static_cast<double>(m.output_tokens) / m.duration_s;
    if (gpus > 0) m.output_tokens_per_s_per_gpu = m.output_tokens_per_s / static_cast<double>(gpus);
  }
  if (per_user_count > 0) m.output_tokens_per_s_per_user = per_user_sum / static_cast<double>(per_user_count);
  return m;
}

nlohmann::json to_json(const BenchmarkMetrics& m) {
  return {{"requests", m.completed},
          {"failed", m.failed},
          {"warmup_requests", m.warmup_requests},
          {"concurrency", m.concurrency},
          {"duration_s", m.duration_s},
          {"input_tokens", m.input_tokens},
          {"output_tokens", m.output_tokens},
          {"ttft_ms", to_json(m.ttft_ms)},
          {"tpot_ms", to_json(m.tpot_ms)},
          {"itl_ms", to_json(m.itl_ms)},
          {"e2e_ms", to_json(m.e2e_ms)},
          {"request_throughput_per_s", m.request_throughput_per_s},
          {"input_tokens_per_s", m.input_tokens_per_s},
          {"output_tokens_per_s", m.output_tokens_per_s},
          {"output_tokens_per_s_per_gpu", m.output_tokens_per_s_per_gpu},
          {"output_tokens_per_s_per_user", m.output_tokens_per_s_per_user}};
}

}  // namespace nvl::emu
