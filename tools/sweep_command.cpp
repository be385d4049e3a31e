// nvl72emu sweep SCENARIO --vary key=v1,v2,... [--seeds A..B] [--jobs N] [--set key=value] [--out DIR] [--slurm]:
// runs every combination as a child `nvl72emu run` (this same binary), at most --jobs at once here or as a
// Slurm job array, and writes DIR/sweep.csv and DIR/sweep.json, one row per run. Exit 1 when any run failed, 2 for bad input.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "emu/rt/errors.h"
#include "emu/scenario/scenario.h"
#include "emu/sweep/sweep_plan.h"
#include "emu/sweep/sweep_table.h"
#include "tools/child_runs.h"
#include "tools/commands.h"
#include "tools/output_folder.h"
#include "tools/slurm_array.h"

namespace nvl::tools {

namespace {

namespace fs = std::filesystem;

struct SweepOptions {
  std::string scenario;
  std::vector<std::string> vary;
  std::string seeds;
  std::vector<std::string> overrides;
  unsigned jobs = 0;
  std::string out_dir = "out/sweep";
  SlurmOptions slurm;
};

// `run` arguments of one point: its fixed overrides first, then its varied values and seed.
std::vector<std::string> run_args(const SweepOptions& opts, const emu::SweepPoint& p) {
  std::vector<std::string> args{"run", opts.scenario, "--seed", std::to_string(p.seed)};
  for (const auto& o : opts.overrides) args.insert(args.end(), {"--set", o});
  for (const auto& [key, value] : p.settings) args.insert(args.end(), {"--set", key + "=" + value});
  return args;
}

int sweep(const SweepOptions& opts) {
  std::vector<emu::SweepAxis> axes;
  for (const auto& v : opts.vary) axes.push_back(emu::parse_vary(v));
  const auto seeds = opts.seeds.empty() ? std::vector<std::uint64_t>{} : emu::parse_seeds(opts.seeds);
  // Without --seeds every run takes the scenario's own seed.
  const std::uint64_t scenario_seed = emu::load_scenario(opts.scenario, opts.overrides).seed;
  const auto points = emu::plan_sweep(axes, seeds.empty() ? std::vector<std::uint64_t>{scenario_seed} : seeds);
  // Bad values fail here, in one line, before any run starts (the seed changes nothing of that).
  for (const auto& p : points) {
    if (p.seed != points.front().seed) continue;
    auto all = opts.overrides;
    const auto mine = p.overrides();
    all.insert(all.end(), mine.begin(), mine.end());
    (void)emu::load_scenario(opts.scenario, all);
  }

  const fs::path out_dir(opts.out_dir);
  prepare_output_folder(out_dir, "--out");
  const fs::path exe = self_executable();

  for (const auto& p : points) prepare_run_folder(out_dir / p.folder_name());

  std::vector<ChildRun> runs;
  for (const auto& p : points) {
    const fs::path dir = out_dir / p.folder_name();
    auto args = run_args(opts, p);
    args.insert(args.end(), {"--out", dir.string()});
    runs.push_back({std::move(args), dir / "log.txt"});
  }
  std::size_t finished = 0;
  const std::vector<int> exit_codes = run_children_here_or_on_slurm(runs, opts.jobs, opts.slurm, out_dir, [&](std::size_t i, int exit_code) {
    std::cout << "[" << ++finished << "/" << points.size() << "] " << points[i].folder_name() << ": exit " << exit_code
              << '\n'
              << std::flush;
  });

  std::vector<std::string> keys;
  for (const auto& a : axes) keys.push_back(a.key);
  emu::SweepTable table(keys);
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::string replay = shell_quoted(exe.string());
    for (const auto& a : run_args(opts, points[i])) replay += " " + shell_quoted(a);
    table.add(points[i], exit_codes[i], read_report(out_dir / points[i].folder_name() / "report.json"),
              std::move(replay));
  }
  table.write_csv(out_dir / "sweep.csv");
  nlohmann::json j = table.to_json();
  j["scenario"] = opts.scenario;
  j["overrides"] = opts.overrides;
  std::ofstream(out_dir / "sweep.json") << j.dump(2) << '\n';
  table.print(std::cout);
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (exit_codes[i] != 0) std::cout << points[i].folder_name() << ": " << last_line(out_dir / points[i].folder_name() / "log.txt") << '\n';
  }
  std::cout << "sweep: " << (out_dir / "sweep.csv").string() << ", " << (out_dir / "sweep.json").string()
            << " (run logs in " << out_dir.string() << "/<run>/log.txt)\n";
  return table.any_failed() ? 1 : 0;
}

}  // namespace

void register_sweep_command(CommandRegistry& registry) {
  auto opts = std::make_shared<SweepOptions>();
  CLI::App* app = registry.add("sweep", "Run a scenario over every combination of values and seeds, in parallel",
                               [opts] { return sweep(*opts); });
  app->add_option("SCENARIO", opts->scenario, "Scenario file (JSON; see scenarios/README.md)")->required();
  // One value per --vary/--set, so that SCENARIO may follow them.
  app->add_option("--vary", opts->vary, "key.path=v1,v2,...: run once per value (repeatable: every combination)")
      ->allow_extra_args(false);
  app->add_option("--seeds", opts->seeds, "A..B or S: run each combination with each seed (default: the scenario's)");
  app->add_option("--jobs", opts->jobs, "Runs at once (default: the number of cores; with --slurm: no limit)")
      ->check(CLI::PositiveNumber);
  add_slurm_options(*app, opts->slurm);
  app->add_option("--set", opts->overrides, "Override a scenario key in every run: key.path=value")
      ->allow_extra_args(false);
  app->add_option("--out", opts->out_dir, "Folder for sweep.csv, sweep.json and one folder per run")
      ->capture_default_str();
}

}  // namespace nvl::tools
