#include "emu/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <ostream>

#include <nlohmann/json.hpp>

#include "emu/report/html_escape.h"
#include "emu/report/html_fault_section.h"
#include "emu/report/html_headline.h"
#include "emu/report/svg_chart.h"

namespace nvl::emu {

namespace {

constexpr double kPercent = 100.0;

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

}  // namespace

void write_html_report(std::ostream& out, const RunReport& r, const HtmlOptions& options) {
  const Timeline& t = r.timeline;
  const OverTime over_time(t, options);
  const std::string smoothing = over_time.title_note();
  const std::vector<ChartMarker> faults = fault_markers(r.faults);
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
  out << SvgChart::lines({over_time("input", t.input_tokens_per_s)},
                         {"Throughput: input" + smoothing, "simulated s", "prompt tokens/s", std::nullopt, false, faults, "fault hit"});
  out << SvgChart::lines({over_time("output", t.output_tokens_per_s)},
                         {"Throughput: output" + smoothing, "simulated s", "output tokens/s", std::nullopt, false, faults, "fault hit"});
  out << SvgChart::lines({over_time("waiting", t.waiting), over_time("running", t.running)},
                         {"Requests queued and running" + smoothing, "simulated s", "requests", std::nullopt, false, faults, "fault hit"});
  out << "<h2>GPU utilisation</h2>\n";
  out << SvgChart::heatmap(t.gpu_names, t.gpu_busy, t.t_s.empty() ? 0 : t.t_s.back(),
                           {"Compute busy share per GPU", "simulated s", "GPU (pool, DP rank or instance)", std::nullopt, false});
  out << "<h2>Links</h2>\n";
  std::vector<ChartSeries> mean, peak;
  for (const auto& [cls, v] : t.link_mean) mean.push_back(over_time(cls, v, kPercent));
  for (const auto& [cls, v] : t.link_peak) peak.push_back(over_time(cls, v, kPercent));
  out << SvgChart::lines(mean, {"Link utilisation by class (mean over the class's channels)" + smoothing, "simulated s", "%",
                                std::nullopt, false, faults, "fault hit"});
  out << SvgChart::lines(peak, {"Busiest channel of each class" + smoothing, "simulated s", "%", std::nullopt, false, faults, "fault hit"});
  out << "<h2>KV cache</h2>\n";
  std::vector<ChartSeries> hits;
  // Smoothed as tokens hit over tokens looked up in the window, not as a mean of the intervals' rates.
  const std::vector<double> lookups = over_time.smooth(t.kv_lookup_tokens);
  for (const auto& [tier, v] : t.kv_hit_tokens) hits.push_back({tier, t.t_s, hit_rate(over_time.smooth(v), lookups)});
  out << SvgChart::lines(hits, {"KV hit rate by tier (share of prompt tokens admitted)" + smoothing, "simulated s", "%",
                                std::nullopt, false, faults, "fault hit"});
  // Every figure, for reading beside the plots; report.json holds the same.
  out << "<details><summary>All figures (report.json)</summary><pre>" << html_escape(to_json(r).dump(2))
      << "</pre></details>\n</body></html>\n";
}

}  // namespace nvl::emu
