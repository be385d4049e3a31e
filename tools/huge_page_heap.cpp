#include "tools/huge_page_heap.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace nvl::tools {

void restart_with_huge_page_heap(char** argv) {
  constexpr const char* kTunable = "glibc.malloc.hugetlb";
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, kTunable) != nullptr) return;
  std::string value = tunables != nullptr && *tunables != '\0' ? std::string(tunables) + ":" : std::string();
  value += std::string(kTunable) + "=1";
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  // The running binary itself, whatever argv[0] says (a name found on PATH, a relative path), by its
  // real path: exec'ing /proc/self/exe would rename the process "exe" (pgrep nvl72emu would miss it).
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  execv(ec || !std::filesystem::exists(self) ? "/proc/self/exe" : self.c_str(), argv);
}

}  // namespace nvl::tools
