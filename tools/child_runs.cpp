#include "tools/child_runs.h"

#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>

#include <boost/process.hpp>

#include "tools/output_folder.h"

namespace nvl::tools {

namespace {

namespace bp = boost::process;

int exit_code_of(const bp::child& c) {
  const int status = c.native_exit_code();
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace

std::filesystem::path self_executable() { return std::filesystem::read_symlink("/proc/self/exe"); }

std::vector<int> run_children(const std::vector<ChildRun>& runs, unsigned jobs,
                              const std::function<void(std::size_t, int)>& on_done) {
  const std::string exe = self_executable().string();
  std::vector<int> exit_codes(runs.size(), 0);
  std::atomic<std::size_t> next{0};
  std::mutex done_mutex;
  auto worker = [&] {
    for (std::size_t i = next++; i < runs.size(); i = next++) {
      try {
        bp::child c(exe, bp::args(runs[i].args), (bp::std_out & bp::std_err) > runs[i].log.string(), bp::std_in < bp::null);
        c.wait();
        exit_codes[i] = exit_code_of(c);
      } catch (const bp::process_error& e) {
        std::ofstream(runs[i].log) << "nvl72emu: could not start the run: " << e.what() << '\n';
        exit_codes[i] = 127;  // as a shell reports a command it cannot run
      }
      const std::lock_guard lock(done_mutex);
      on_done(i, exit_codes[i]);
    }
  };
  std::vector<std::jthread> pool;
  for (std::size_t j = 0; j < std::min<std::size_t>(std::max(jobs, 1U), runs.size()); ++j) pool.emplace_back(worker);
  pool.clear();  // joins
  return exit_codes;
}

std::string last_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::string last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

void prepare_run_folder(const std::filesystem::path& dir) {
  prepare_output_folder(dir, "--out");
  std::error_code ec;
  std::filesystem::remove(dir / "report.json", ec);
}

nlohmann::json read_report(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return nullptr;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? nlohmann::json() : j;
}

std::string shell_quoted(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:,+-") ==
                        std::string::npos) {
    return s;
  }
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace nvl::tools
