// nvl72emu study STUDY.json [--out DIR] [--jobs N] [--seeds A..B] [--slurm] [--plan]: runs every variant of a
// study at each value of its swept axis and each seed, as child `nvl72emu run`s (at most --jobs at once, here
// or as a Slurm job array), and writes DIR/study.md, DIR/study.html and DIR/study.json: the question, the
// answer with its numbers, a table and plots of each figure over the seeds, and what the numbers rest on.
// Exit 1 when a run failed, 2 for bad input.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "emu/rt/errors.h"
#include "emu/scenario/scenario.h"
#include "emu/study/study_report.h"
#include "emu/study/study_results.h"
#include "emu/study/study_spec.h"
#include "emu/sweep/sweep_plan.h"
#include "tools/child_runs.h"
#include "tools/commands.h"
#include "tools/output_folder.h"
#include "tools/slurm_array.h"

namespace nvl::tools {

namespace {

namespace fs = std::filesystem;

struct StudyOptions {
  std::string study;
  std::string out_dir;
  std::string seeds;
  unsigned jobs = 0;
  bool plan = false;
  SlurmOptions slurm;
};

struct StudyRun {
  std::size_t variant, x, seed;
  fs::path dir;
  std::vector<std::string> args;
};

std::vector<std::string> overrides_of(const emu::StudySpec& s, std::size_t variant, std::size_t x) {
  std::vector<std::string> all = s.set;
  all.insert(all.end(), s.variants[variant].set.begin(), s.variants[variant].set.end());
  all.push_back(s.x_override(x));
  return all;
}

int study(const StudyOptions& opts) {
  emu::StudySpec spec = emu::load_study(opts.study);
  if (!opts.seeds.empty()) spec.seeds = emu::parse_seeds(opts.seeds);
  // Every variant at every value loads before any run starts: a bad one fails here, named.
  for (std::size_t v = 0; v < spec.variants.size(); ++v) {
    for (std::size_t x = 0; x < spec.x_values.size(); ++x) {
      try {
        (void)emu::load_scenario(spec.scenario_of(v), overrides_of(spec, v, x));
      } catch (const rt::InputError& e) {
        throw rt::InputError(spec.file, "variants[" + std::to_string(v) + "] '" + spec.variants[v].name + "' at " +
                                            spec.x_override(x),
                             e.what());
      }
    }
  }
  if (opts.plan) {
    std::cout << spec.file << ": " << spec.variants.size() * spec.x_values.size() * spec.seeds.size() << " runs ("
              << spec.variants.size() << " variants x " << spec.x_values.size() << " values of " << spec.x_key << " x "
              << spec.seeds.size() << " seeds), every one loads\n";
    return 0;
  }
  const fs::path out_dir(opts.out_dir.empty() ? "out/study-" + spec.name : opts.out_dir);
  prepare_output_folder(out_dir, "--out");

  std::vector<StudyRun> runs;
  for (std::size_t v = 0; v < spec.variants.size(); ++v) {
    for (std::size_t x = 0; x < spec.x_values.size(); ++x) {
      for (std::size_t k = 0; k < spec.seeds.size(); ++k) {
        const emu::SweepPoint point{{{"variant", spec.variants[v].name}, {spec.x_key, emu::axis_value_text(spec.x_values[x])}}, spec.seeds[k]};
        StudyRun r{v, x, k, out_dir / point.folder_name(), {"run", spec.scenario_of(v), "--seed", std::to_string(spec.seeds[k])}};
        for (const std::string& o : overrides_of(spec, v, x)) r.args.insert(r.args.end(), {"--set", o});
        r.args.insert(r.args.end(), {"--set", "outputs.trace=false", "--set", "outputs.html=false", "--out", r.dir.string()});
        prepare_run_folder(r.dir);
        runs.push_back(std::move(r));
      }
    }
  }
  std::vector<ChildRun> children;
  for (const StudyRun& r : runs) children.push_back({r.args, r.dir / "log.txt"});
  std::size_t finished = 0;
  const std::vector<int> exit_codes = run_children_here_or_on_slurm(children, opts.jobs, opts.slurm, out_dir, [&](std::size_t i, int exit_code) {
    std::cout << "[" << ++finished << "/" << runs.size() << "] " << runs[i].dir.filename().string() << ": exit " << exit_code
              << '\n'
              << std::flush;
  });

  emu::StudyResults results(spec);
  bool any_failed = false;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    results.add(runs[i].variant, runs[i].x, runs[i].seed, exit_codes[i], read_report(runs[i].dir / "report.json"));
    if (exit_codes[i] != 0) {
      any_failed = true;
      std::cout << runs[i].dir.filename().string() << ": " << last_line(runs[i].dir / "log.txt") << '\n';
    }
  }
  std::string command = "nvl72emu study " + shell_quoted(opts.study) + " --seeds " + std::to_string(spec.seeds.front()) +
                        ".." + std::to_string(spec.seeds.back()) + " --out " + shell_quoted(out_dir.string());
  std::ofstream markdown(out_dir / "study.md");
  emu::write_study_markdown(markdown, results, command);
  std::ofstream html(out_dir / "study.html");
  emu::write_study_html(html, results, command);
  std::ofstream(out_dir / "study.json") << results.to_json().dump(2) << '\n';
  std::cout << "answer: " << results.answer() << "study: " << (out_dir / "study.md").string() << ", "
            << (out_dir / "study.html").string() << ", " << (out_dir / "study.json").string() << '\n';
  return any_failed ? 1 : 0;
}

}  // namespace

void register_study_command(CommandRegistry& registry) {
  auto opts = std::make_shared<StudyOptions>();
  CLI::App* app = registry.add("study", "Answer a sizing question: run a study file's variants over its axis and seeds",
                               [opts] { return study(*opts); });
  app->add_option("STUDY", opts->study, "Study file (JSON; see scenarios/studies/README.md)")->required();
  app->add_option("--out", opts->out_dir, "Folder for study.md, study.html, study.json and one folder per run "
                                          "(default: out/study-NAME)");
  app->add_option("--seeds", opts->seeds, "A..B or S: the seeds of every point (default: the study file's)");
  app->add_option("--jobs", opts->jobs, "Runs at once (default: the number of cores; with --slurm: no limit)")
      ->check(CLI::PositiveNumber);
  app->add_flag("--plan", opts->plan, "Check that every run loads, say how many there are, and run none");
  add_slurm_options(*app, opts->slurm);
}

}  // namespace nvl::tools
