#pragma once
// Reads a whole trace file; a missing, unreadable or empty file is an InputError naming it.
#include <filesystem>
#include <string>

namespace nvl::emu {

std::string read_trace_file(const std::filesystem::path& path);

}  // namespace nvl::emu
