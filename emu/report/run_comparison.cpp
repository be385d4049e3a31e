#include "emu/report/run_comparison.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "emu/report/html_escape.h"
#include "emu/report/si_figure.h"
#include "emu/report/timeline_json.h"
#include "emu/rt/errors.h"
#include "emu/rt/json_path.h"
#include "emu/rt/json_reader.h"

namespace nvl::emu {

namespace {

constexpr int kFirstSchemaWithSeries = 3;
constexpr double kPercent = 100.0;

// A figure of report.json by its key path: NaN where the report lacks it.
double figure(const nlohmann::json& report, const std::string& path) {
  return rt::number_at(report, path).value_or(std::nan(""));
}

struct Row {
  const char* name;
  const char* path;
  bool share;  // a 0-1 share, shown as a percentage
};

constexpr Row kRows[] = {
    {"TTFT p50 (ms)", "latency_ms.ttft.p50", false},
    {"TTFT p90 (ms)", "latency_ms.ttft.p90", false},
    {"TTFT p99 (ms)", "latency_ms.ttft.p99", false},
    {"TPOT p50 (ms)", "latency_ms.tpot.p50", false},
    {"TPOT p90 (ms)", "latency_ms.tpot.p90", false},
    {"TPOT p99 (ms)", "latency_ms.tpot.p99", false},
    {"E2E p50 (ms)", "latency_ms.e2e.p50", false},
    {"E2E p99 (ms)", "latency_ms.e2e.p99", false},
    {"input tok/s", "throughput.input_tokens_per_s", false},
    {"output tok/s", "throughput.output_tokens_per_s", false},
    {"output tok/s per GPU", "throughput.per_gpu.output_tokens_per_s", false},
    {"output tok/s per user", "benchmark.output_tokens_per_s_per_user", false},
    {"requests completed", "requests.completed", false},
    {"requests failed", "requests.failed", false},
    {"KV hit rate GPU", "kv.hit_rate_gpu", true},
    {"KV hit rate Grace", "kv.hit_rate_grace", true},
    {"KV hit rate remote", "kv.hit_rate_remote", true},
    {"NVLink mean utilisation", "links.nvlink.mean_utilisation", true},
    {"NIC mean utilisation", "links.nic.mean_utilisation", true},
    {"simulated s", "sim_time_s", false},
};

std::string shown(double v, bool share) {
  if (std::isnan(v)) return "&mdash;";
  if (!share) return si_figure(v);
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", kPercent * v);
  return text;
}

// The change from the other run to this one: relative for figures, in points for shares.
std::string change(double mine, double other, bool share) {
  if (std::isnan(mine) || std::isnan(other)) return "&mdash;";
  char text[32];
  if (share) {
    std::snprintf(text, sizeof text, "%+.1f pt", kPercent * (mine - other));
  } else if (other == 0) {
    return mine == 0 ? "0" : "&mdash;";
  } else {
    std::snprintf(text, sizeof text, "%+.1f%%", kPercent * (mine - other) / std::abs(other));
  }
  return text;
}

}  // namespace

OtherRun read_other_run(const std::string& file) {
  OtherRun run;
  run.report = rt::JsonReader::parse_file(file);
  const std::filesystem::path path(file);
  run.label = path.parent_path().filename().string();
  if (run.label.empty() || run.label == ".") run.label = "other";
  if (!run.report.is_object() || !run.report.contains("schema_version") || !run.report["schema_version"].is_number()) {
    throw rt::InputError(file, "schema_version", "missing: not a report.json of nvl72emu run");
  }
  if (run.report["schema_version"].get<double>() < kFirstSchemaWithSeries) {
    throw rt::InputError(file, "schema_version",
                         "is " + run.report["schema_version"].dump() + ", expected 3 or later (reports with timeline.series)");
  }
  if (!run.report.contains("timeline")) throw rt::InputError(file, "timeline", "missing");
  try {
    run.timeline = timeline_from_json(run.report["timeline"]);
  } catch (const std::exception& e) {
    throw rt::InputError(file, "timeline", e.what());
  }
  return run;
}

std::string comparison_html(const nlohmann::json& mine, const OtherRun& other) {
  std::ostringstream os;
  const std::string label = html_escape(other.label);
  os << "<h2>Compared with " << label << "</h2>\n<p>" << label << ": scenario "
     << html_escape(other.report.value("scenario", std::string("?"))) << ", seed " << other.report.value("seed", 0)
     << ", event-log hash <code>" << html_escape(other.report.value("event_log_hash", std::string("?")))
     << "</code>. Each plot over time draws its line as &ldquo;(" << label << ")&rdquo;.</p>\n"
     << "<table class=\"headline\"><tr><th>figure</th><th>this run</th><th>" << label << "</th><th>change</th></tr>\n";
  for (const Row& row : kRows) {
    const double a = figure(mine, row.path), b = figure(other.report, row.path);
    if (std::isnan(a) && std::isnan(b)) continue;
    os << "<tr><td>" << row.name << "</td><td>" << shown(a, row.share) << "</td><td>" << shown(b, row.share) << "</td><td>"
       << change(a, b, row.share) << "</td></tr>\n";
  }
  os << "</table>\n";
  return os.str();
}

}  // namespace nvl::emu
