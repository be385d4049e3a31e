#include "emu/measured/replay_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

namespace nvl::emu {

namespace {

std::optional<double> error_of(double measured, const std::optional<double>& emulated) {
  if (!emulated) return std::nullopt;
  return error_pct(measured, *emulated);
}

std::string fixed(const std::optional<double>& v, const char* format) {
  if (!v) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, *v);
  return buf;
}

nlohmann::json or_null(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

// Median and p90 of |error| over the rows that have the figure.
void abs_error_stats(const std::vector<double>& errors, std::optional<double>& median, std::optional<double>& p90) {
  if (errors.empty()) return;
  std::vector<double> abs;
  for (double e : errors) abs.push_back(std::abs(e));
  median = quantile(abs, 0.5);
  p90 = quantile(abs, 0.9);
}

}  // namespace

std::optional<double> ReplayRow::ttft_error_pct() const { return error_of(measured_ttft_ms, emulated_ttft_ms); }
std::optional<double> ReplayRow::tpot_error_pct() const { return error_of(measured_tpot_ms, emulated_tpot_ms); }

double error_pct(double measured, double emulated) { return (emulated - measured) / measured * 100.0; }

double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(pos));
  const std::size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (values[above] - values[below]) * (pos - static_cast<double>(below));
}

std::vector<ReplayGroup> summarise(const std::vector<ReplayRow>& rows) {
  std::vector<ReplayGroup> groups;
  std::vector<std::vector<double>> ttft_errors, tpot_errors;
  for (const ReplayRow& r : rows) {
    auto g = std::find_if(groups.begin(), groups.end(), [&](const ReplayGroup& x) {
      return std::tie(x.system, x.backend, x.precision) == std::tie(r.system, r.backend, r.precision);
    });
    if (g == groups.end()) {
      groups.push_back({.system = r.system, .backend = r.backend, .precision = r.precision});
      ttft_errors.emplace_back();
      tpot_errors.emplace_back();
      g = groups.end() - 1;
    }
    const auto i = static_cast<std::size_t>(g - groups.begin());
    ++g->rows;
    if (!r.expressible) {
      ++g->not_expressible;
      ++g->reasons[r.reason];
      continue;
    }
    if (r.failed) ++g->failed;
    const auto ttft = r.ttft_error_pct();
    const auto tpot = r.tpot_error_pct();
    if (ttft && tpot) ++g->compared;
    if (ttft) ttft_errors[i].push_back(*ttft);
    if (tpot) tpot_errors[i].push_back(*tpot);
  }
  for (std::size_t i = 0; i < groups.size(); ++i) {
    abs_error_stats(ttft_errors[i], groups[i].ttft_median_abs_error_pct, groups[i].ttft_p90_abs_error_pct);
    abs_error_stats(tpot_errors[i], groups[i].tpot_median_abs_error_pct, groups[i].tpot_p90_abs_error_pct);
  }
  return groups;
}

void print_rows(std::ostream& out, const std::vector<ReplayRow>& rows) {
  std::size_t id_width = 2;
  for (const ReplayRow& r : rows) id_width = std::max(id_width, r.id.size());
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-*s  %12s %12s %8s  %12s %12s %8s\n", static_cast<int>(id_width), "id", "ttft ms",
                "emulated", "error", "tpot ms", "emulated", "error");
  out << buf;
  for (const ReplayRow& r : rows) {
    std::snprintf(buf, sizeof buf, "%-*s  %12.1f %12s %8s  %12.2f %12s %8s", static_cast<int>(id_width), r.id.c_str(),
                  r.measured_ttft_ms, fixed(r.emulated_ttft_ms, "%.1f").c_str(), fixed(r.ttft_error_pct(), "%+.1f%%").c_str(),
                  r.measured_tpot_ms, fixed(r.emulated_tpot_ms, "%.2f").c_str(), fixed(r.tpot_error_pct(), "%+.1f%%").c_str());
    out << buf;
    if (!r.expressible) out << "  not expressible: " << r.reason;
    if (r.failed) out << "  run failed: " << r.reason;
    out << '\n';
  }
}

void print_groups(std::ostream& out, const std::vector<ReplayGroup>& groups) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-10s %-8s %-6s %5s %9s %10s %7s  %11s %9s  %11s %9s\n", "system", "backend", "prec", "rows",
                "compared", "not expr.", "failed", "|ttft| p50", "p90", "|tpot| p50", "p90");
  out << buf;
  for (const ReplayGroup& g : groups) {
    std::snprintf(buf, sizeof buf, "%-10s %-8s %-6s %5zu %9zu %10zu %7zu  %11s %9s  %11s %9s\n", g.system.c_str(),
                  g.backend.c_str(), g.precision.c_str(), g.rows, g.compared, g.not_expressible, g.failed,
                  fixed(g.ttft_median_abs_error_pct, "%.1f%%").c_str(), fixed(g.ttft_p90_abs_error_pct, "%.1f%%").c_str(),
                  fixed(g.tpot_median_abs_error_pct, "%.1f%%").c_str(), fixed(g.tpot_p90_abs_error_pct, "%.1f%%").c_str());
    out << buf;
  }
  for (const ReplayGroup& g : groups) {
    for (const auto& [reason, count] : g.reasons) {
      out << "not expressible (" << g.system << " " << g.backend << " " << g.precision << ", " << count
          << (count == 1 ? " row" : " rows") << "): " << reason << '\n';
    }
  }
}

nlohmann::json replay_json(const std::vector<ReplayRow>& rows, const std::vector<ReplayGroup>& groups) {
  nlohmann::json j = {{"rows", nlohmann::json::array()}, {"groups", nlohmann::json::array()}};
  for (const ReplayRow& r : rows) {
    j["rows"].push_back({{"id", r.id},
                         {"expressible", r.expressible},
                         {"reason", r.reason},
                         {"measured_ttft_ms", r.measured_ttft_ms},
                         {"emulated_ttft_ms", or_null(r.emulated_ttft_ms)},
                         {"ttft_error_pct", or_null(r.ttft_error_pct())},
                         {"measured_tpot_ms", r.measured_tpot_ms},
                         {"emulated_tpot_ms", or_null(r.emulated_tpot_ms)},
                         {"tpot_error_pct", or_null(r.tpot_error_pct())},
                         {"config", r.config},
                         {"system", r.system},
                         {"backend", r.backend},
                         {"precision", r.precision},
                         {"failed", r.failed}});
  }
  for (const ReplayGroup& g : groups) {
    nlohmann::json reasons = nlohmann::json::array();
    for (const auto& [reason, count] : g.reasons) reasons.push_back({{"reason", reason}, {"rows", count}});
    j["groups"].push_back({{"system", g.system},
                           {"backend", g.backend},
                           {"precision", g.precision},
                           {"rows", g.rows},
                           {"compared", g.compared},
                           {"not_expressible", g.not_expressible},
                           {"failed", g.failed},
                           {"ttft_abs_error_pct", {{"median", or_null(g.ttft_median_abs_error_pct)}, {"p90", or_null(g.ttft_p90_abs_error_pct)}}},
                           {"tpot_abs_error_pct", {{"median", or_null(g.tpot_median_abs_error_pct)}, {"p90", or_null(g.tpot_p90_abs_error_pct)}}},
                           {"not_expressible_reasons", reasons}});
  }
  return j;
}

}  // namespace nvl::emu
