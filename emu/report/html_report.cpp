#include "emu/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>
#include <sstream>
#include <ostream>

#include <nlohmann/json.hpp>

#include "emu/report/html_escape.h"
#include "emu/report/html_fault_section.h"
#include "emu/report/html_headline.h"
#include "emu/report/run_comparison.h"
#include "emu/report/svg_chart.h"

namespace nvl::emu {

namespace {

constexpr double kPercent = 100.0;
constexpr double kMsPerS = 1e3;

ChartSeries cdf(const std::string& name, const LatencySummaryMs& l) {
  ChartSeries s{name, {}, {}};
  for (std::size_t i = 0; i < l.quantiles.size(); ++i) {
    s.x.push_back(l.quantiles[i]);
    s.y.push_back(static_cast<double>(i) / static_cast<double>(l.quantiles.size() - 1));
  }
  return s;
}

// A trailing moving average over `window` samples; NaNs (gaps) are left out of the means, and a sample
// whose window holds only NaNs stays a gap.
std::vector<double> smoothed(const std::vector<double>& y, std::size_t window) {
  if (window <= 1) return y;
  std::vector<double> out(y.size(), std::numeric_limits<double>::quiet_NaN());
  double sum = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!std::isnan(y[i])) sum += y[i], ++n;
    if (i >= window && !std::isnan(y[i - window])) sum -= y[i - window], --n;
    if (n > 0) out[i] = sum / static_cast<double>(n);
  }
  return out;
}

// The series over time the charts draw: scaled, and smoothed over the options' window of samples.
class OverTime {
 public:
  OverTime(const Timeline& t, const HtmlOptions& options)
      : t_(t),
        window_(options.smoothing_s > 0 && t.interval_s > 0
                    ? std::max<std::size_t>(1, static_cast<std::size_t>(std::lround(options.smoothing_s / t.interval_s)))
                    : 1) {}

  std::vector<double> smooth(const std::vector<double>& y) const { return smoothed(y, window_); }
  ChartSeries operator()(const std::string& name, const std::vector<double>& y, double scale = 1) const {
    ChartSeries s{name, t_.t_s, smooth(y)};
    for (double& v : s.y) v *= scale;
    return s;
  }
  // " (10 s moving average)" when smoothing, to append to the charts' titles.
  std::string title_note() const {
    if (window_ <= 1) return "";
    std::ostringstream os;
    os << " (" << static_cast<double>(window_) * t_.interval_s << " s moving average)";
    return os.str();
  }

 private:
  const Timeline& t_;
  std::size_t window_;
};

// Per-interval hit rate of a tier: hit tokens over lookup tokens; NaN (a gap in the chart, not 0%) in
// intervals without lookups.
std::vector<double> hit_rate(const std::vector<double>& hits, const std::vector<double>& lookups) {
  std::vector<double> out(hits.size(), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t i = 0; i < hits.size() && i < lookups.size(); ++i) {
    if (lookups[i] > 0) out[i] = kPercent * hits[i] / lookups[i];
  }
  return out;
}

// Each plot's series for this run and, when compared, the other run's beside them ("name (label)").
class BothRuns {
 public:
  BothRuns(const Timeline& mine, const HtmlOptions& options)
      : mine_(mine), mine_over_(mine, options), other_(options.compare) {
    if (other_ != nullptr) other_over_.emplace(other_->timeline, options);
  }

  // make(over_time, timeline) -> the series of one run.
  template <typename Make>
  std::vector<ChartSeries> operator()(Make&& make) const {
    std::vector<ChartSeries> out = make(mine_over_, mine_);
    if (other_ == nullptr) return out;
    for (ChartSeries s : make(*other_over_, other_->timeline)) {
      s.name += " (" + other_->label + ")";
      out.push_back(std::move(s));
    }
    return out;
  }
  const OverTime& mine() const { return mine_over_; }

 private:
  const Timeline& mine_;
  OverTime mine_over_;
  const OtherRun* other_;
  std::optional<OverTime> other_over_;
};

std::vector<ChartSeries> kv_hit_rates(const OverTime& over_time, const Timeline& t) {
  std::vector<ChartSeries> hits;
  // Smoothed as tokens hit over tokens looked up in the window, not as a mean of the intervals' rates.
  const std::vector<double> lookups = over_time.smooth(t.kv_lookup_tokens);
  for (const auto& [tier, v] : t.kv_hit_tokens) hits.push_back({tier, t.t_s, hit_rate(over_time.smooth(v), lookups)});
  return hits;
}

void write_pool_plots(std::ostream& out, const BothRuns& both, const std::string& smoothing,
                      const std::vector<ChartMarker>& faults) {
  using Series = std::vector<ChartSeries>;
  const auto per_pool = [&both](auto pick, double scale) {
    return both([&](const OverTime& o, const Timeline& t) {
      Series lines;
      for (const auto& [name, p] : t.pools) lines.push_back(o(name, pick(p), scale));
      return lines;
    });
  };
  out << SvgChart::lines(per_pool([](const Timeline::PoolSeries& p) { return p.waiting; }, 1),
                         {"Requests queued per pool" + smoothing, "simulated s", "requests", std::nullopt, false, faults, "fault hit"});
  out << SvgChart::lines(per_pool([](const Timeline::PoolSeries& p) { return p.running; }, 1),
                         {"Batch size per pool (requests running)" + smoothing, "simulated s", "requests", std::nullopt, false,
                          faults, "fault hit"});
  out << SvgChart::lines(per_pool([](const Timeline::PoolSeries& p) { return p.kv_used; }, kPercent),
                         {"GPU KV cache held by requests per pool" + smoothing, "simulated s", "% of blocks", std::nullopt,
                          false, faults, "fault hit"});
  const Series split = both([](const OverTime& o, const Timeline& t) {
    Series parts;
    for (const char* part : {"queue", "prefill", "kv_transfer", "first_decode"}) {
      const auto it = t.ttft_split_s.find(part);
      if (it != t.ttft_split_s.end()) parts.push_back(o(part, it->second, kMsPerS));
    }
    return parts;
  });
  out << SvgChart::lines(split, {"TTFT split, mean of the requests by their first token's interval" + smoothing, "simulated s",
                                 "ms", std::nullopt, false, faults, "fault hit"});
}

}  // namespace

void write_html_report(std::ostream& out, const RunReport& r, const HtmlOptions& options) {
  using Series = std::vector<ChartSeries>;
  const Timeline& t = r.timeline;
  const BothRuns both(t, options);
  const std::string smoothing = both.mine().title_note();
  const std::vector<ChartMarker> faults = fault_markers(r.faults);
  const nlohmann::json figures = to_json(r);
  out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>nvl72emu: " << html_escape(r.scenario)
      << "</title>\n<style>body{font-family:sans-serif;margin:20px;max-width:1500px}"
         "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
         ".fail{color:#b00;font-weight:bold}.pass{color:#070}.skipped{color:#a60}svg{margin:6px;border:1px solid #eee}"
         "table.headline td:first-child{font-weight:bold}table.headline{margin-bottom:10px}</style>"
         "</head><body>\n";
  out << "<h1>" << html_escape(r.scenario) << "</h1>\n<p>seed " << r.seed << ", event-log hash <code>" << r.event_log_hash
      << "</code>, " << r.sim_time_s << " s simulated (" << r.stop_reason << ") in " << r.wall_time_s
      << " s wall: " << r.speedup() << "x, " << r.gpu_seconds_per_wall_second() << " GPU-s per wall-s</p>\n";
  out << headline_html(r);
  if (options.compare != nullptr) out << comparison_html(figures, *options.compare);
  out << "<h2>Checks</h2><table><tr><th>check</th><th>result</th><th>detail</th></tr>\n";
  for (const auto& c : r.checks) {
    out << "<tr><td>" << html_escape(c.name) << "</td><td class=\"" << (c.result.skipped ? "skipped" : c.result.pass ? "pass" : "fail") << "\">" << c.result.status()
        << "</td><td>" << html_escape(c.result.detail) << "</td></tr>\n";
  }
  out << "</table>\n<h2>Faults</h2>\n" << fault_section_html(r.faults) << fault_impact_html(r.faults, t);
  out << "<h2>Latency</h2>\n";
  out << SvgChart::lines({cdf("TTFT", r.ttft)}, {"TTFT CDF", "ms (log scale)", "share of requests", 1.0, true});
  out << SvgChart::lines({cdf("TPOT", r.tpot)}, {"TPOT CDF", "ms (log scale)", "share of requests", 1.0, true});
  out << "<h2>Load over time</h2>\n";
  // Input and output differ by 100x and more: each gets its own axis.
  out << SvgChart::lines(both([](const OverTime& o, const Timeline& x) { return Series{o("input", x.input_tokens_per_s)}; }),
                         {"Throughput: input" + smoothing, "simulated s", "prompt tokens/s", std::nullopt, false, faults, "fault hit"});
  out << SvgChart::lines(both([](const OverTime& o, const Timeline& x) { return Series{o("output", x.output_tokens_per_s)}; }),
                         {"Throughput: output" + smoothing, "simulated s", "output tokens/s", std::nullopt, false, faults, "fault hit"});
  out << SvgChart::lines(
      both([](const OverTime& o, const Timeline& x) { return Series{o("waiting", x.waiting), o("running", x.running)}; }),
      {"Requests queued and running" + smoothing, "simulated s", "requests", std::nullopt, false, faults, "fault hit"});
  out << "<h2>Pools</h2>\n";
  write_pool_plots(out, both, smoothing, faults);
  out << "<h2>GPU utilisation</h2>\n";
  out << SvgChart::heatmap(t.gpu_names, t.gpu_busy, t.t_s.empty() ? 0 : t.t_s.back(),
                           {"Compute busy share per GPU", "simulated s", "GPU (pool, DP rank or instance)", std::nullopt, false});
  out << "<h2>Links</h2>\n";
  const auto by_class = [&both](const std::map<std::string, std::vector<double>> Timeline::*member) {
    return both([member](const OverTime& o, const Timeline& x) {
      Series lines;
      for (const auto& [cls, v] : x.*member) lines.push_back(o(cls, v, kPercent));
      return lines;
    });
  };
  out << SvgChart::lines(by_class(&Timeline::link_mean),
                         {"Link utilisation by class (mean over the class's channels)" + smoothing, "simulated s", "%",
                          std::nullopt, false, faults, "fault hit"});
  out << SvgChart::lines(by_class(&Timeline::link_peak),
                         {"Busiest channel of each class" + smoothing, "simulated s", "%", std::nullopt, false, faults, "fault hit"});
  out << "<h2>KV cache</h2>\n";
  out << SvgChart::lines(both(kv_hit_rates), {"KV hit rate by tier (share of prompt tokens admitted)" + smoothing, "simulated s",
                                              "%", std::nullopt, false, faults, "fault hit"});
  // Every figure, for reading beside the plots; report.json holds the same.
  out << "<details><summary>All figures (report.json)</summary><pre>" << html_escape(figures.dump(2))
      << "</pre></details>\n</body></html>\n";
}

}  // namespace nvl::emu
