#include "fuzz/parser_inputs.h"
#include "fuzz/scratch_input.h"
#include "emu/scenario/scenario.h"

namespace nvl::fuzz {

bool scenario_input(std::span<const std::uint8_t> bytes) {
  return load_from_scratch_file("scenario", ".json", bytes, [](const std::filesystem::path& file) { (void)emu::load_scenario(file); });
}

}  // namespace nvl::fuzz
