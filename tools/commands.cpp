#include "tools/commands.h"

namespace nvl::tools {

void register_all_commands(CommandRegistry& registry) {
  register_validate_command(registry);
  register_trace_command(registry);
  register_run_command(registry);
  // Still to come with their issues: sweep [6/8]; serve [8/8].
}

}  // namespace nvl::tools
