#pragma once
// The one list of subcommands; each line names the register function of the part that owns it.
#include "tools/command_registry.h"

namespace nvl::tools {

void register_all_commands(CommandRegistry& registry);

void register_validate_command(CommandRegistry& registry);
void register_trace_command(CommandRegistry& registry);
void register_run_command(CommandRegistry& registry);
void register_sweep_command(CommandRegistry& registry);
void register_study_command(CommandRegistry& registry);
void register_serve_command(CommandRegistry& registry);
void register_collective_test_command(CommandRegistry& registry);

}  // namespace nvl::tools
