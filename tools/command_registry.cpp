#include "tools/command_registry.h"

#include <iostream>

namespace nvl::tools {

CLI::App* CommandRegistry::add(const std::string& name, const std::string& description, CommandAction action) {
  CLI::App* sub = app_.add_subcommand(name, description);
  actions_.emplace(sub, std::move(action));
  return sub;
}

int CommandRegistry::run_chosen() const {
  for (const auto& [sub, action] : actions_) {
    if (sub->parsed()) return action();
  }
  std::cerr << app_.help();
  return 2;
}

}  // namespace nvl::tools
