#include "fuzz/parser_inputs.h"
#include "fuzz/scratch_input.h"
#include "engine/model/model_profile.h"

namespace nvl::fuzz {

bool model_profile_input(std::span<const std::uint8_t> bytes) {
  return load_from_scratch_file("model_profile", ".json", bytes, [](const std::filesystem::path& file) { (void)engine::load_model_profile(file); });
}

}  // namespace nvl::fuzz
