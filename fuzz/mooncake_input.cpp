#include "fuzz/parser_inputs.h"
#include "fuzz/scratch_input.h"
#include "emu/workload/mooncake_trace.h"

namespace nvl::fuzz {

bool mooncake_input(std::span<const std::uint8_t> bytes) {
  return load_from_scratch_file("mooncake", ".jsonl", bytes, [](const std::filesystem::path& file) { (void)emu::load_mooncake_trace(file); });
}

}  // namespace nvl::fuzz
