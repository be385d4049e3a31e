// nvl72emu validate: every calibration row (published vs emulated), as a table or JSON; exit 1 when a row
// expected to pass fails (with --strict, also when a row known to miss does).
// With --measured FILE.csv it replays a table of measured serving benchmarks instead (tools/measured_replay.h).
#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>

#include "emu/rt/errors.h"
#include "emu/validate/calibration_suite.h"
#include "tools/commands.h"
#include "tools/measured_replay.h"

namespace nvl::tools {

namespace {

int validate_calibration(const std::string& only, const std::string& json_path, bool strict) {
  const auto rows = emu::default_calibration_suite().run(only);
  if (rows.empty() && !only.empty()) {
    throw rt::InputError("--only", only, "no calibration row matches this prefix");
  }
  emu::print_table(std::cout, rows);
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    if (!out) throw rt::InputError(json_path, "", "cannot open for writing");
    out << emu::to_json(rows).dump(2) << '\n';
  }
  const bool failed = std::any_of(rows.begin(), rows.end(), [&](const emu::CalibrationRow& r) {
    return !r.pass() && (strict || r.expected_to_pass());
  });
  return failed ? 1 : 0;
}

}  // namespace

void register_validate_command(CommandRegistry& registry) {
  auto opts = std::make_shared<MeasuredReplayOptions>();
  auto strict = std::make_shared<bool>(false);
  opts->out_dir = "out/measured";
  CLI::App* sub = registry.add("validate", "Compare the emulator with every published figure it is calibrated to, or replay a measured table (--measured)",
                               [opts, strict]() {
                                 if (!opts->table.empty()) return replay_measured_table(*opts);
                                 return validate_calibration(opts->only, opts->json_path, *strict);
                               });
  sub->add_option("--json", opts->json_path, "Also write the rows as JSON to this file");
  sub->add_option("--only", opts->only,
                  "Only calibration rows whose group or id starts with this prefix; with --measured, only table rows "
                  "whose id matches this regular expression");
  auto* strict_flag =
      sub->add_flag("--strict", *strict, "Also fail on rows known to miss (those whose note names what the emulator lacks)");
  sub->add_option("--measured", opts->table,
                  "Replay this table of measured serving benchmarks (CSV, columns as scenarios/measured/README.md)");
  auto* jobs = sub->add_option("--jobs", opts->jobs, "With --measured: runs at once (default: the number of cores)")
                   ->check(CLI::PositiveNumber);
  auto* out = sub->add_option("--out", opts->out_dir, "With --measured: a folder per row (scenario, report, log)")
                  ->capture_default_str();
  strict_flag->excludes("--measured");
  jobs->needs("--measured");
  out->needs("--measured");
}

}  // namespace nvl::tools
