#pragma once
// Subcommands of nvl72emu. Each part that owns a command provides a register function that adds a
// CLI11 subcommand and its action; main() runs the action of the subcommand that was chosen.
#include <functional>
#include <map>

#include <CLI/CLI.hpp>

namespace nvl::tools {

// Returns the process exit code. Throwing rt::InputError (or CLI::ValidationError) exits 2 with one line.
using CommandAction = std::function<int()>;

class CommandRegistry {
 public:
  explicit CommandRegistry(CLI::App& app) : app_(app) {}
  // Adds a subcommand; configure its options on the returned App, keeping their storage alive.
  CLI::App* add(const std::string& name, const std::string& description, CommandAction action);
  // Runs the chosen subcommand's action; prints help and returns 2 when none was chosen.
  int run_chosen() const;

 private:
  CLI::App& app_;
  std::map<CLI::App*, CommandAction> actions_;
};

}  // namespace nvl::tools
