// nvl72emu: the command-line front of the emulator. Subcommands are registered by the parts that own them.
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "emu/rt/errors.h"
#include "tools/command_registry.h"
#include "tools/commands.h"
#include "tools/heap_tunables.h"
#include "tools/version.h"

int main(int argc, char** argv) {
  nvl::tools::restart_with_heap_tunables(argv);
  CLI::App app{"nvl72emu: hardware-in-the-loop emulator for a GB300 NVL72 rack", "nvl72emu"};
  app.set_version_flag("--version", std::string("nvl72emu ") + nvl::tools::kVersion);
  app.require_subcommand(0, 1);
  nvl::tools::CommandRegistry registry(app);
  nvl::tools::register_all_commands(registry);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "nvl72emu: " << e.what() << " (see nvl72emu --help)\n";
    return 2;
  }
  try {
    return registry.run_chosen();
  } catch (const nvl::rt::InputError& e) {
    std::cerr << "nvl72emu: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "nvl72emu: internal error: " << e.what() << "\n";
    return 3;
  }
}
