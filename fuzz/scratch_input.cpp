#include "fuzz/scratch_input.h"

#include <unistd.h>

#include <fstream>
#include <string>

#include "emu/rt/errors.h"

namespace nvl::fuzz {

bool load_from_scratch_file(std::string_view name, std::string_view extension, std::span<const std::uint8_t> bytes,
                            void (*load)(const std::filesystem::path& file)) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                     ("nvl_fuzz_" + std::to_string(::getpid()) + "_" + std::string(name) +
                                      std::string(extension));
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  try {
    load(file);
  } catch (const rt::InputError&) {
    return false;
  }
  return true;
}

}  // namespace nvl::fuzz
