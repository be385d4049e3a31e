#include "fuzz/parser_inputs.h"
#include "fuzz/scratch_input.h"
#include "emu/workload/claude_code_trace.h"

namespace nvl::fuzz {

bool claude_code_input(std::span<const std::uint8_t> bytes) {
  return load_from_scratch_file("claude_code", ".json", bytes, [](const std::filesystem::path& file) { (void)emu::load_claude_code_trace(file); });
}

}  // namespace nvl::fuzz
