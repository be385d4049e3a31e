// nvl72emu trace stats SOURCE: statistics of a trace or generator through an unbounded prefix cache; for a
// generator, each published figure next to the generated one (exit 1 if any is outside the tolerance).
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>

#include <nlohmann/json.hpp>

#include "emu/rt/errors.h"
#include "emu/workload/figure_check.h"
#include "emu/workload/trace_stats.h"
#include "emu/workload/workload_source.h"
#include "tools/commands.h"

namespace nvl::tools {

namespace {

struct Options {
  std::string source;
  std::size_t limit = std::numeric_limits<std::size_t>::max();
  std::string json_path;
};

int run_stats(const Options& opts) {
  emu::LoadOptions load;
  load.max_sessions = opts.limit;
  const emu::WorkloadSource src = emu::open_workload_source(opts.source, load);
  const emu::TraceStats st = emu::TraceStats::compute(src.workload);
  st.print(std::cout);
  nlohmann::json out = st.to_json();
  bool ok = true;
  if (src.profile) {
    const auto checks = emu::FigureCheck::run(st, src.profile->targets, src.profile->tolerance);
    emu::print_checks(std::cout, checks, src.profile->tolerance);
    for (const auto& c : checks) ok = ok && c.within;
    out["published"] = emu::to_json(checks);
  }
  if (!opts.json_path.empty()) {
    std::ofstream f(opts.json_path);
    if (!f) throw rt::InputError(opts.json_path, "", "cannot open for writing");
    f << out.dump(2) << '\n';
  }
  return ok ? 0 : 1;
}

}  // namespace

void register_trace_command(CommandRegistry& registry) {
  auto opts = std::make_shared<Options>();
  auto stats_app = std::make_shared<CLI::App*>(nullptr);
  // The registry runs the action of `trace`; it dispatches to the sub-subcommand that was chosen.
  CLI::App* trace = registry.add("trace", "Trace tools: stats", [opts, stats_app]() {
    if (!(*stats_app)->parsed()) {
      std::cerr << "nvl72emu trace: expected a subcommand (stats); see nvl72emu trace --help\n";
      return 2;
    }
    return run_stats(*opts);
  });
  trace->require_subcommand(0, 1);
  CLI::App* stats = trace->add_subcommand(
      "stats", "Statistics of a trace file/folder or gen:codex[:trials=N,seed=S] through an unbounded prefix cache");
  *stats_app = stats;
  stats->add_option("SOURCE", opts->source, "Trace file or folder, or gen:codex[:trials=N,seed=S,profile=PATH]")->required();
  stats->add_option("--limit", opts->limit, "Read at most N sessions (conversations; trials for a generator)");
  stats->add_option("--json", opts->json_path, "Also write the figures as JSON to this file");
}

}  // namespace nvl::tools
