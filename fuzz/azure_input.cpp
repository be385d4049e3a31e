#include "fuzz/parser_inputs.h"
#include "fuzz/scratch_input.h"
#include "emu/workload/azure_trace.h"

namespace nvl::fuzz {

bool azure_input(std::span<const std::uint8_t> bytes) {
  return load_from_scratch_file("azure", ".csv", bytes, [](const std::filesystem::path& file) { (void)emu::load_azure_trace(file); });
}

}  // namespace nvl::fuzz
