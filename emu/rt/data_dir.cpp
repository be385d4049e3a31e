#include "emu/rt/data_dir.h"

#include <system_error>

namespace nvl::rt {

namespace {

// <prefix>/share/nvl72emu for the running binary <prefix>/bin/NAME; empty when the binary's path is unknown.
std::filesystem::path installed_data_root() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return self.parent_path().parent_path() / "share" / "nvl72emu";
}

}  // namespace

std::filesystem::path data_dir(const std::string& relative, const std::filesystem::path& source_dir) {
  static const std::filesystem::path root = installed_data_root();
  std::error_code ec;
  if (!root.empty() && std::filesystem::is_directory(root / relative, ec)) return root / relative;
  return source_dir;
}

}  // namespace nvl::rt
