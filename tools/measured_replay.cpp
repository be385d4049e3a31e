#include "tools/measured_replay.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <algorithm>
#include <cstdio>
#include <regex>
#include <set>
#include <thread>

#include "emu/measured/bench_keys.h"
#include "emu/measured/measured_table.h"
#include "emu/measured/replay_summary.h"
#include "emu/measured/row_scenario.h"
#include "emu/rt/errors.h"
#include "tools/child_runs.h"

namespace nvl::tools {

namespace {

namespace fs = std::filesystem;

constexpr int kBadInputExit = 2;  // a run's exit status for a scenario it refuses

std::vector<emu::MeasuredRow> selected_rows(const MeasuredReplayOptions& opts) {
  std::vector<emu::MeasuredRow> rows = emu::read_measured_table(fs::path(opts.table));
  if (opts.only.empty()) return rows;
  std::regex only;
  try {
    only = std::regex(opts.only);
  } catch (const std::regex_error& e) {
    throw rt::InputError("--only", opts.only, std::string("not a regular expression: ") + e.what());
  }
  std::erase_if(rows, [&](const emu::MeasuredRow& r) { return !std::regex_search(r.id, only); });
  if (rows.empty()) throw rt::InputError("--only", opts.only, "no row id of " + opts.table + " matches");
  return rows;
}

// A folder name for each row: its id with anything but [A-Za-z0-9._-] as '_', the line added on a clash.
std::vector<std::string> folder_names(const std::vector<emu::MeasuredRow>& rows) {
  std::vector<std::string> names;
  std::set<std::string> taken;
  for (const auto& r : rows) {
    std::string name = r.id;
    for (char& c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
    }
    if (name.starts_with('.') || !taken.insert(name).second) name = "line" + std::to_string(r.line) + "-" + name;
    taken.insert(name);
    names.push_back(name);
  }
  return names;
}

// A refused scenario's error line without the program's and the scenario file's names: the reason itself.
std::string refusal_reason(std::string line, const fs::path& scenario) {
  for (const std::string& prefix : {std::string("nvl72emu: "), scenario.string() + ": "}) {
    if (line.starts_with(prefix)) line.erase(0, prefix.size());
  }
  return line;
}

std::optional<double> figure(const nlohmann::json& report, const char* pointer) {
  const nlohmann::json::json_pointer p(pointer);
  if (report.is_null() || !report.contains(p) || !report[p].is_number()) return std::nullopt;
  return report[p].get<double>();
}

// "ttft 201.2 ms (measured 195.5, +2.9%)"; "-" for a figure the run did not give.
std::string compared_text(const char* name, double measured, const std::optional<double>& emulated,
                          const std::optional<double>& error) {
  char buf[160];
  if (emulated && error) {
    std::snprintf(buf, sizeof buf, "%s %.2f ms (measured %.2f, %+.1f%%)", name, *emulated, measured, *error);
  } else {
    std::snprintf(buf, sizeof buf, "%s - (measured %.2f ms)", name, measured);
  }
  return buf;
}

void print_progress(std::size_t done, std::size_t total, const emu::ReplayRow& r) {
  std::cout << "[" << done << "/" << total << "] " << r.id << ": ";
  if (!r.expressible) {
    std::cout << "not expressible: " << r.reason << '\n' << std::flush;
    return;
  }
  if (r.failed) std::cout << "run failed: " << r.reason << "; ";
  std::cout << compared_text("ttft", r.measured_ttft_ms, r.emulated_ttft_ms, r.ttft_error_pct()) << ", "
            << compared_text("tpot", r.measured_tpot_ms, r.emulated_tpot_ms, r.tpot_error_pct()) << '\n'
            << std::flush;
}

}  // namespace

int replay_measured_table(const MeasuredReplayOptions& opts) {
  const std::vector<emu::MeasuredRow> rows = selected_rows(opts);
  const fs::path out_dir(opts.out_dir);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw rt::InputError(opts.out_dir, "--out", "cannot create the folder: " + ec.message());
  const std::vector<std::string> folders = folder_names(rows);

  std::vector<emu::ReplayRow> results(rows.size());
  std::vector<std::size_t> run_row;  // run index -> row index
  std::size_t done = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const emu::MeasuredRow& m = rows[i];
    const emu::RowScenario mapped = emu::map_row(m);
    emu::ReplayRow& r = results[i];
    r = {.id = m.id, .system = m.system, .backend = m.backend, .precision = m.precision, .config = mapped.config,
         .measured_ttft_ms = m.ttft_ms, .measured_tpot_ms = m.tpot_ms};
    if (!mapped.scenario) {
      r.reason = mapped.reason;
      print_progress(++done, rows.size(), r);
      continue;
    }
    const fs::path dir = out_dir / folders[i];
    prepare_run_folder(dir);
    std::ofstream(dir / "scenario.json") << mapped.scenario->dump(2) << '\n';
    run_row.push_back(i);
  }

  // Longest first (by the decode tokens of all its requests), so that the runs that finish last are short ones.
  const auto cost = [&](std::size_t i) { return emu::bench_size(rows[i].concurrency).requests * rows[i].osl; };
  std::stable_sort(run_row.begin(), run_row.end(), [&](std::size_t a, std::size_t b) { return cost(a) > cost(b); });
  std::vector<ChildRun> runs;
  for (std::size_t i : run_row) {
    const fs::path dir = out_dir / folders[i];
    runs.push_back({{"run", (dir / "scenario.json").string(), "--out", dir.string()}, dir / "log.txt"});
  }

  const unsigned jobs = opts.jobs > 0 ? opts.jobs : std::max(1U, std::thread::hardware_concurrency());
  run_children(runs, jobs, [&](std::size_t k, int exit_code) {
    emu::ReplayRow& r = results[run_row[k]];
    const fs::path dir = runs[k].log.parent_path();
    if (exit_code == kBadInputExit) {
      r.reason = refusal_reason(last_line(runs[k].log), dir / "scenario.json");
    } else {
      r.expressible = true;
      const nlohmann::json report = read_report(dir / "report.json");
      r.emulated_ttft_ms = figure(report, emu::bench_keys::kMeanTtftMs);
      r.emulated_tpot_ms = figure(report, emu::bench_keys::kMeanTpotMs);
      if (exit_code != 0 || !r.emulated_ttft_ms || !r.emulated_tpot_ms) {
        r.failed = true;
        r.reason = "exit " + std::to_string(exit_code) + ": " +
                   (exit_code != 0 ? last_line(runs[k].log) : std::string("report.json lacks the benchmark means")) +
                   " (" + runs[k].log.string() + ")";
      }
    }
    print_progress(++done, rows.size(), r);
  });

  std::cout << '\n';
  emu::print_rows(std::cout, results);
  const std::vector<emu::ReplayGroup> groups = emu::summarise(results);
  std::cout << '\n';
  emu::print_groups(std::cout, groups);
  if (!opts.json_path.empty()) {
    std::ofstream out(opts.json_path);
    if (!out) throw rt::InputError(opts.json_path, "--json", "cannot open for writing");
    out << emu::replay_json(results, groups).dump(2) << '\n';
  }
  for (const auto& r : results) {
    if (r.failed) return 1;
  }
  return 0;
}

}  // namespace nvl::tools
