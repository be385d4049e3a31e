// libFuzzer target: the mooncake parser (run with tools/fuzz.sh).
#include <cstddef>
#include <cstdint>

#include "fuzz/parser_inputs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  nvl::fuzz::mooncake_input({data, size});
  return 0;
}
