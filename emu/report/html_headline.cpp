#include "emu/report/html_headline.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "emu/report/html_escape.h"
#include "emu/report/si_figure.h"

namespace nvl::emu {

namespace {

constexpr double kPercent = 100.0;

std::string percent(double share) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", kPercent * share);
  return text;
}

std::string latency_row(const char* name, const LatencySummaryMs& l) {
  std::ostringstream os;
  os << "<tr><td>" << name << "</td>";
  for (double v : {l.p50, l.p90, l.p99, l.mean}) os << "<td>" << si_figure(v) << "</td>";
  os << "</tr>\n";
  return os.str();
}

std::string checks_line(const RunReport& r) {
  int passed = 0, skipped = 0, failed = 0;
  for (const auto& c : r.checks) (c.result.skipped ? skipped : c.result.pass ? passed : failed)++;
  std::ostringstream os;
  os << "<span class=\"" << (failed > 0 ? "fail" : "pass") << "\">" << passed << " pass";
  if (failed > 0) os << ", " << failed << " FAIL";
  os << "</span>";
  if (skipped > 0) os << ", <span class=\"skipped\">" << skipped << " skipped</span>";
  return os.str();
}

}  // namespace

std::string headline_html(const RunReport& r) {
  const BenchmarkMetrics& b = r.benchmark;
  std::ostringstream os;
  os << "<h2>Headline</h2>\n<table class=\"headline\"><tr><th>latency (ms)</th><th>p50</th><th>p90</th><th>p99</th>"
        "<th>mean</th></tr>\n"
     << latency_row("TTFT", r.ttft) << latency_row("TPOT", r.tpot) << latency_row("E2E", r.e2e) << "</table>\n";
  os << "<table class=\"headline\">\n"
     << "<tr><td>requests</td><td>" << r.requests_completed << " completed, " << r.requests_failed << " failed, "
     << r.requests_in_flight << " in flight at the end (" << html_escape(r.stop_reason) << ")</td></tr>\n"
     << "<tr><td>throughput</td><td>" << si_figure(r.input_tokens_per_s()) << " input tok/s, "
     << si_figure(r.output_tokens_per_s()) << " output tok/s</td></tr>\n"
     << "<tr><td>per GPU, per user</td><td>" << si_figure(b.output_tokens_per_s_per_gpu) << " output tok/s per GPU ("
     << r.gpus << " GPUs), " << si_figure(b.output_tokens_per_s_per_user) << " output tok/s per user</td></tr>\n"
     << "<tr><td>KV hit rate</td><td>GPU " << percent(r.kv_hits.rate(r.kv_hits.gpu_tokens)) << ", Grace "
     << percent(r.kv_hits.rate(r.kv_hits.grace_tokens)) << ", remote " << percent(r.kv_hits.rate(r.kv_hits.remote_tokens))
     << " of " << si_figure(static_cast<double>(r.kv_hits.lookup_tokens)) << " prompt tokens</td></tr>\n"
     << "<tr><td>link utilisation (mean / peak)</td><td>";
  bool first = true;
  for (const auto& [cls, u] : r.links) {
    os << (first ? "" : "; ") << html_escape(cls) << ' ' << percent(u.mean) << " / " << percent(u.peak);
    first = false;
  }
  os << "</td></tr>\n<tr><td>checks</td><td>" << checks_line(r) << "</td></tr>\n"
     << "<tr><td>kernels</td><td>" << html_escape(r.kernel_library) << ", " << percent(r.measured_kernel_share())
     << " of GPU time priced from measured tables</td></tr>\n</table>\n";
  return os.str();
}

}  // namespace nvl::emu
