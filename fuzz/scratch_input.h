#pragma once
// The loaders read files by path (their errors name the file), so a fuzz input goes through a scratch
// file, one per process and parser, with the extension the parser expects.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

namespace nvl::fuzz {

// Writes `bytes` to the scratch file `<tmp>/nvl_fuzz_<pid>_<name><extension>` and calls `load` on it.
// Returns true when it loaded, false when it threw rt::InputError (the expected outcome for bad input).
// Any other exception propagates: under libFuzzer that is a crash to fix.
bool load_from_scratch_file(std::string_view name, std::string_view extension, std::span<const std::uint8_t> bytes,
                            void (*load)(const std::filesystem::path& file));

}  // namespace nvl::fuzz
