#include "tools/commands.h"

namespace nvl::tools {

void register_all_commands(CommandRegistry& registry) {
  register_validate_command(registry);
  register_trace_command(registry);
  register_run_command(registry);
  register_sweep_command(registry);
  register_study_command(registry);
  register_serve_command(registry);
  register_collective_test_command(registry);
}

}  // namespace nvl::tools
