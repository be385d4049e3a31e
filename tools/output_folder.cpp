#include "tools/output_folder.h"

#include <fstream>
#include <system_error>

#include "emu/rt/errors.h"

namespace nvl::tools {

void prepare_output_folder(const std::filesystem::path& folder, const std::string& option) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) throw rt::InputError(folder.string(), option, "cannot create the folder: " + ec.message());
  const std::filesystem::path probe = folder / ".nvl72emu-write-probe";
  if (!std::ofstream(probe)) throw rt::InputError(folder.string(), option, "cannot write in the folder");
  std::filesystem::remove(probe, ec);
}

}  // namespace nvl::tools
