#pragma once
// Where the read-only data a run reads (device, fabric and model profiles) is found: beside an installed
// binary, as `cmake --install` lays it out (<prefix>/bin/nvl72emu, <prefix>/share/nvl72emu/<relative>),
// else in the source tree the binary was built from.
#include <filesystem>
#include <string>

namespace nvl::rt {

// `relative` is the folder's path in the source tree ("fakegpu/profiles"); `source_dir` is where the build
// found it (a compile-time path).
std::filesystem::path data_dir(const std::string& relative, const std::filesystem::path& source_dir);

}  // namespace nvl::rt
