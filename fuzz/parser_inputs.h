#pragma once
// The fuzzing entry points, one per parser: feed raw bytes to the parser as its file. Each libFuzzer
// target (fuzz/<parser>_fuzzer.cpp) and the corpus replay test (tests/fuzz/, a plain GCC build) call these.
// Each returns true when the input loaded, false when it was rejected with an rt::InputError; any other
// exception propagates (see scratch_input.h).
#include <cstdint>
#include <span>

namespace nvl::fuzz {

bool scenario_input(std::span<const std::uint8_t> bytes);
bool mooncake_input(std::span<const std::uint8_t> bytes);
bool azure_input(std::span<const std::uint8_t> bytes);
bool claude_code_input(std::span<const std::uint8_t> bytes);
bool model_profile_input(std::span<const std::uint8_t> bytes);

}  // namespace nvl::fuzz
