#pragma once
// Runs of this same binary as child processes, at most `jobs` at once (`sweep` and `validate --measured`):
// each run's stdout and stderr go to its log file; a run that cannot start counts as exit 127.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nvl::tools {

struct ChildRun {
  std::vector<std::string> args;  // after the program name
  std::filesystem::path log;
};

// This program's own executable, which every child runs.
std::filesystem::path self_executable();

// Runs every child and returns their exit codes (a signal as 128 + its number, as shells report it).
// `on_done(index, exit_code)` is called as each finishes, one call at a time.
std::vector<int> run_children(const std::vector<ChildRun>& runs, unsigned jobs,
                              const std::function<void(std::size_t, int)>& on_done);

// The last non-empty line of a run's log: its error message when it stopped on bad input or a crash.
std::string last_line(const std::filesystem::path& file);

// Readies a run's output folder as prepare_output_folder does (naming --out) and removes an earlier
// run's report.json from it, so that a run that writes none shows none.
void prepare_run_folder(const std::filesystem::path& dir);

// A run's report.json; null when it wrote none or an unreadable one.
nlohmann::json read_report(const std::filesystem::path& file);

// A word a POSIX shell reads back as `s`.
std::string shell_quoted(const std::string& s);

}  // namespace nvl::tools
