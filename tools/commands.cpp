#include "tools/commands.h"

namespace nvl::tools {

void register_all_commands(CommandRegistry& registry) {
  // Subcommands arrive with their issues: validate [2/8], run/sweep/trace [6/8], serve [8/8].
  (void)registry;
}

}  // namespace nvl::tools
