#pragma once
// The folder a command writes its results into, made ready before any work starts, so that a path that
// cannot be written fails at once (exit 2 naming it) instead of after a long run.
#include <filesystem>
#include <string>

namespace nvl::tools {

// Creates `folder` if missing and checks a file can be written in it (a probe file, removed at once: the
// permission bits do not tell for root or read-only mounts). Throws rt::InputError naming `option`.
void prepare_output_folder(const std::filesystem::path& folder, const std::string& option);

}  // namespace nvl::tools
