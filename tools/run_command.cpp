// nvl72emu run SCENARIO [--seed N] [--out DIR] [--set key.path=value ...] [--check-determinism]
// [--event-log FILE] [--compare OTHER/report.json]: runs a scenario, prints the summary and writes
// DIR/report.json, DIR/trace.json and DIR/report.html (beside the other run's figures and lines when
// compared), and FILE the event log as JSON lines (to diff two runs). Exit 1 when a check fails (the
// summary names it), 2 for bad input.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "emu/report/html_report.h"
#include "emu/rt/errors.h"
#include "emu/scenario/runner.h"
#include "emu/scenario/scenario.h"
#include "tools/commands.h"
#include "tools/output_folder.h"

namespace nvl::tools {

namespace {

struct RunOptions {
  std::string scenario;
  std::optional<std::uint64_t> seed;
  std::string out_dir;
  std::vector<std::string> overrides;
  bool check_determinism = false;
  std::string event_log;
  std::string compare;
};

template <typename Write>
void write_file(const std::filesystem::path& file, Write&& write) {
  std::ofstream f(file);
  if (!f) throw rt::InputError(file.string(), "", "cannot open for writing");
  write(f);
  std::cout << file.filename().string() << ": " << file.string() << '\n';
}

int run(const RunOptions& opts) {
  std::vector<std::string> overrides = opts.overrides;
  if (opts.seed) overrides.push_back("seed=" + std::to_string(*opts.seed));
  const emu::Scenario scenario = emu::load_scenario(opts.scenario, overrides);
  emu::RunControls controls;
  controls.check_determinism = opts.check_determinism;
  // Opened (and read) before the run, so a bad path fails at once rather than after a long run.
  if (!opts.out_dir.empty()) prepare_output_folder(opts.out_dir, "--out");
  std::optional<emu::OtherRun> other;
  if (!opts.compare.empty()) {
    if (opts.out_dir.empty() || !scenario.outputs.html) {
      throw rt::InputError(opts.compare, "--compare", "sets the runs side by side in report.html: give --out (with outputs.html)");
    }
    other = emu::read_other_run(opts.compare);
  }
  std::ofstream event_log;
  if (!opts.event_log.empty()) {
    event_log.open(opts.event_log);
    if (!event_log) throw rt::InputError(opts.event_log, "--event-log", "cannot open for writing");
    controls.event_log = &event_log;
  }
  if (isatty(fileno(stderr)) != 0) controls.progress = &std::cerr;
  const emu::RunReport report = emu::run_scenario(scenario, controls);
  emu::print_summary(std::cout, report);
  if (!opts.out_dir.empty()) {
    const std::filesystem::path dir(opts.out_dir);
    write_file(dir / "report.json", [&](std::ostream& f) { f << emu::to_json(report).dump(2) << '\n'; });
    if (report.trace) write_file(dir / "trace.json", [&](std::ostream& f) { report.trace->write(f); });
    if (scenario.outputs.html) {
      const emu::HtmlOptions html{.smoothing_s = scenario.outputs.html_smoothing_s, .compare = other ? &*other : nullptr};
      write_file(dir / "report.html", [&](std::ostream& f) { emu::write_html_report(f, report, html); });
    }
  }
  return report.checks_pass() ? 0 : 1;
}

}  // namespace

void register_run_command(CommandRegistry& registry) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* app = registry.add("run", "Run a scenario file and report its figures", [opts] { return run(*opts); });
  app->add_option("SCENARIO", opts->scenario, "Scenario file (JSON; see scenarios/README.md)")->required();
  app->add_option("--seed", opts->seed, "Override the scenario's seed");
  app->add_option("--out", opts->out_dir,
                  "Write report.json, trace.json and report.html into this folder (created if missing)");
  app->add_option("--set", opts->overrides, "Override a scenario key: key.path=value (JSON value, else a string)");
  app->add_flag("--check-determinism", opts->check_determinism,
                "Run the scenario twice and fail unless both give the same event-log hash");
  app->add_option("--event-log", opts->event_log,
                  "Write the event log to this file as JSON lines (token deliveries and request ends included), "
                  "so two runs can be diffed");
  app->add_option("--compare", opts->compare,
                  "Another run's report.json: report.html sets its headline figures beside this run's (with the "
                  "change of each) and draws its line on every plot over time");
}

}  // namespace nvl::tools
