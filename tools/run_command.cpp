// nvl72emu run SCENARIO [--seed N] [--out DIR] [--set key.path=value ...]: runs a scenario, prints the
// summary and writes DIR/report.json. Exit 1 when any request failed, 2 for bad input.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "emu/rt/errors.h"
#include "emu/scenario/runner.h"
#include "emu/scenario/scenario.h"
#include "tools/commands.h"

namespace nvl::tools {

namespace {

struct RunOptions {
  std::string scenario;
  std::optional<std::uint64_t> seed;
  std::string out_dir;
  std::vector<std::string> overrides;
};

int run(const RunOptions& opts) {
  std::vector<std::string> overrides = opts.overrides;
  if (opts.seed) overrides.push_back("seed=" + std::to_string(*opts.seed));
  const emu::Scenario scenario = emu::load_scenario(opts.scenario, overrides);
  const emu::RunReport report = emu::run_scenario(scenario);
  emu::print_summary(std::cout, report);
  if (!opts.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opts.out_dir, ec);
    const std::filesystem::path file = std::filesystem::path(opts.out_dir) / "report.json";
    std::ofstream f(file);
    if (!f) throw rt::InputError(file.string(), "", "cannot open for writing");
    f << emu::to_json(report).dump(2) << '\n';
    std::cout << "report: " << file.string() << '\n';
  }
  return report.requests_failed > 0 ? 1 : 0;
}

}  // namespace

void register_run_command(CommandRegistry& registry) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* app = registry.add("run", "Run a scenario file and report its figures", [opts] { return run(*opts); });
  app->add_option("SCENARIO", opts->scenario, "Scenario file (JSON; see scenarios/README.md)")->required();
  app->add_option("--seed", opts->seed, "Override the scenario's seed");
  app->add_option("--out", opts->out_dir, "Write report.json into this folder (created if missing)");
  app->add_option("--set", opts->overrides, "Override a scenario key: key.path=value (JSON value, else a string)");
}

}  // namespace nvl::tools
