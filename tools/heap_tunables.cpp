#include "tools/heap_tunables.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace nvl::tools {

void restart_with_heap_tunables(char** argv) {
  constexpr const char* kTunables[][2] = {{"glibc.malloc.hugetlb", "1"}, {"glibc.malloc.tcache_count", "1024"}};
  // The first tunable marks a process that needs no restart: this one after it, or one the user set it for.
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, kTunables[0][0]) != nullptr) return;
  std::string value = tunables != nullptr ? tunables : "";
  for (const auto& [name, setting] : kTunables) {
    if (value.find(name) != std::string::npos) continue;  // the user's own setting stands
    value += (value.empty() ? "" : ":") + std::string(name) + "=" + setting;
  }
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  // The running binary itself, whatever argv[0] says (a name found on PATH, a relative path), by its
  // real path: exec'ing /proc/self/exe would rename the process "exe" (pgrep nvl72emu would miss it).
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  execv(ec || !std::filesystem::exists(self) ? "/proc/self/exe" : self.c_str(), argv);
}

}  // namespace nvl::tools
