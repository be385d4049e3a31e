#include "emu/sweep/sweep_table.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>

#include "emu/rt/errors.h"

namespace nvl::emu {

namespace {

struct Figure {
  const char* column;
  const char* pointer;  // into report.json
};

// The headline figures of a run (report.json schema, scenarios/README.md).
constexpr std::array<Figure, 10> kFigures = {{
    {"ttft_p50_ms", "/latency_ms/ttft/p50"},
    {"ttft_p90_ms", "/latency_ms/ttft/p90"},
    {"tpot_p50_ms", "/latency_ms/tpot/p50"},
    {"tpot_p90_ms", "/latency_ms/tpot/p90"},
    {"input_tokens_per_s", "/throughput/input_tokens_per_s"},
    {"output_tokens_per_s", "/throughput/output_tokens_per_s"},
    {"completed", "/requests/completed"},
    {"failed", "/requests/failed"},
    {"in_flight", "/requests/in_flight"},
    {"speedup", "/speedup"},
}};

std::optional<double> number_at(const nlohmann::json& report, const char* pointer) {
  if (!report.is_object()) return std::nullopt;
  const nlohmann::json::json_pointer p(pointer);
  if (!report.contains(p) || !report.at(p).is_number()) return std::nullopt;
  return report.at(p).get<double>();
}

// checks: {name: {"status": "pass" | "FAIL" | "skipped", "pass": bool, "detail": ...}}; without a status
// (reports before it), or as a bare bool, the pass flag says pass or FAIL.
std::map<std::string, std::string> checks_of(const nlohmann::json& report) {
  std::map<std::string, std::string> out;
  if (!report.is_object() || !report.contains("checks") || !report["checks"].is_object()) return out;
  for (const auto& [name, c] : report["checks"].items()) {
    if (c.is_boolean()) out[name] = c.get<bool>() ? "pass" : "FAIL";
    if (!c.is_object()) continue;
    if (c.contains("status") && c["status"].is_string()) {
      out[name] = c["status"].get<std::string>();
    } else if (c.contains("pass") && c["pass"].is_boolean()) {
      out[name] = c["pass"].get<bool>() ? "pass" : "FAIL";
    }
  }
  return out;
}

std::string format_figure(const std::optional<double>& v) {
  if (!v) return "";
  std::ostringstream s;
  if (*v == static_cast<double>(static_cast<std::int64_t>(*v))) {
    s << static_cast<std::int64_t>(*v);
  } else {
    s << std::fixed << std::setprecision(3) << *v;
  }
  return s.str();
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string check_cell(const std::map<std::string, std::string>& checks, const std::string& name) {
  const auto it = checks.find(name);
  return it == checks.end() ? "" : it->second;
}

}  // namespace

SweepTable::SweepTable(std::vector<std::string> varied_keys) : varied_keys_(std::move(varied_keys)) {}

void SweepTable::add(const SweepPoint& point, int exit_code, const nlohmann::json& report, std::string replay) {
  Row r;
  r.point = point;
  r.exit_code = exit_code;
  r.checks = checks_of(report);
  for (const auto& f : kFigures) r.figures.push_back(number_at(report, f.pointer));
  if (report.is_object() && report.contains("event_log_hash") && report["event_log_hash"].is_string()) {
    r.event_log_hash = report["event_log_hash"].get<std::string>();
  }
  r.replay = std::move(replay);
  rows_.push_back(std::move(r));
}

bool SweepTable::any_failed() const {
  return std::any_of(rows_.begin(), rows_.end(), [](const Row& r) { return r.exit_code != 0; });
}

std::vector<std::string> SweepTable::check_names() const {
  std::set<std::string> names;
  for (const auto& r : rows_) {
    for (const auto& [name, status] : r.checks) names.insert(name);
  }
  return {names.begin(), names.end()};
}

void SweepTable::write_csv(const std::filesystem::path& file) const {
  std::ofstream out(file);
  if (!out) throw rt::InputError(file.string(), "", "cannot open for writing");
  const auto checks = check_names();
  std::vector<std::string> header = varied_keys_;
  header.insert(header.end(), {"seed", "exit_code"});
  for (const auto& c : checks) header.push_back("check." + c);
  for (const auto& f : kFigures) header.emplace_back(f.column);
  header.emplace_back("event_log_hash");
  for (std::size_t i = 0; i < header.size(); ++i) out << (i ? "," : "") << csv_cell(header[i]);
  out << '\n';
  for (const auto& r : rows_) {
    std::vector<std::string> cells;
    for (const auto& [key, value] : r.point.settings) cells.push_back(value);
    cells.push_back(std::to_string(r.point.seed));
    cells.push_back(std::to_string(r.exit_code));
    for (const auto& c : checks) cells.push_back(check_cell(r.checks, c));
    for (const auto& v : r.figures) cells.push_back(format_figure(v));
    cells.push_back(r.event_log_hash);
    for (std::size_t i = 0; i < cells.size(); ++i) out << (i ? "," : "") << csv_cell(cells[i]);
    out << '\n';
  }
}

nlohmann::json SweepTable::to_json() const {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : rows_) {
    nlohmann::json row;
    row["settings"] = nlohmann::json::object();
    for (const auto& [key, value] : r.point.settings) row["settings"][key] = value;
    row["seed"] = r.point.seed;
    row["exit_code"] = r.exit_code;
    row["checks"] = nlohmann::json::object();  // name -> passed (a skipped check did not fail)
    for (const auto& [name, status] : r.checks) row["checks"][name] = status != "FAIL";
    row["figures"] = nlohmann::json::object();
    for (std::size_t i = 0; i < kFigures.size(); ++i) {
      row["figures"][kFigures[i].column] = r.figures[i] ? nlohmann::json(*r.figures[i]) : nlohmann::json();
    }
    row["event_log_hash"] = r.event_log_hash;
    row["replay"] = r.replay;
    runs.push_back(std::move(row));
  }
  return nlohmann::json{{"varied", varied_keys_}, {"runs", std::move(runs)}};
}

void SweepTable::print(std::ostream& out) const {
  std::vector<std::string> header = varied_keys_;
  header.insert(header.end(), {"seed", "exit", "checks", "ttft p50", "ttft p90", "tpot p50", "tpot p90", "out tok/s",
                               "done", "failed", "hash"});
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows_) {
    std::vector<std::string> c;
    for (const auto& [key, value] : r.point.settings) c.push_back(value);
    c.push_back(std::to_string(r.point.seed));
    c.push_back(std::to_string(r.exit_code));
    std::string failed_checks;
    std::size_t skipped = 0;
    for (const auto& [name, status] : r.checks) {
      if (status == "FAIL") failed_checks += (failed_checks.empty() ? "FAIL " : ",") + name;
      if (status == "skipped") ++skipped;
    }
    const std::string passed = std::to_string(r.checks.size() - skipped) + " pass" +
                               (skipped > 0 ? ", " + std::to_string(skipped) + " skipped" : "");
    c.push_back(r.checks.empty() ? "-" : failed_checks.empty() ? passed : failed_checks);
    for (std::size_t i : {0, 1, 2, 3, 5, 6, 7}) c.push_back(format_figure(r.figures[i]));
    c.push_back(r.event_log_hash);
    cells.push_back(std::move(c));
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t i = 0; i < header.size(); ++i) {
    width[i] = header[i].size();
    for (const auto& c : cells) width[i] = std::max(width[i], c[i].size());
  }
  auto line = [&](const std::vector<std::string>& c) {
    for (std::size_t i = 0; i < c.size(); ++i) out << (i ? "  " : "") << std::setw(static_cast<int>(width[i])) << c[i];
    out << '\n';
  };
  line(header);
  for (const auto& c : cells) line(c);
  for (const auto& r : rows_) {
    if (r.exit_code != 0) out << "failed (exit " << r.exit_code << "), replay: " << r.replay << '\n';
  }
}

}  // namespace nvl::emu
