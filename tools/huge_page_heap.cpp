#include "tools/huge_page_heap.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace nvl::tools {

void restart_with_huge_page_heap(char** argv) {
  constexpr const char* kTunable = "glibc.malloc.hugetlb";
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, kTunable) != nullptr) return;
  std::string value = tunables != nullptr && *tunables != '\0' ? std::string(tunables) + ":" : std::string();
  value += std::string(kTunable) + "=1";
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  // The running binary itself, whatever argv[0] says (a name found on PATH, a relative path).
  execv("/proc/self/exe", argv);
}

}  // namespace nvl::tools
