// nvl72emu validate: every calibration row (published vs emulated), as a table or JSON; exit 1 on a failure.
#include <fstream>
#include <iostream>
#include <memory>

#include "emu/rt/errors.h"
#include "emu/validate/calibration_suite.h"
#include "tools/commands.h"

namespace nvl::tools {

void register_validate_command(CommandRegistry& registry) {
  struct Options {
    std::string json_path;
    std::string only;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* sub = registry.add("validate", "Compare the emulator with every published figure it is calibrated to",
                               [opts]() {
                                 const auto rows = emu::default_calibration_suite().run(opts->only);
                                 if (rows.empty() && !opts->only.empty()) {
                                   throw rt::InputError("--only", opts->only, "no calibration row matches this prefix");
                                 }
                                 emu::print_table(std::cout, rows);
                                 if (!opts->json_path.empty()) {
                                   std::ofstream out(opts->json_path);
                                   if (!out) throw rt::InputError(opts->json_path, "", "cannot open for writing");
                                   out << emu::to_json(rows).dump(2) << '\n';
                                 }
                                 for (const auto& r : rows) {
                                   if (!r.pass()) return 1;
                                 }
                                 return 0;
                               });
  sub->add_option("--json", opts->json_path, "Also write the rows as JSON to this file");
  sub->add_option("--only", opts->only, "Only rows whose group or id starts with this prefix");
}

}  // namespace nvl::tools
