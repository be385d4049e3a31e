#pragma once
// A measured table's dtype field (bf16, fp8, fp4, ...), or an error naming the table's line.
#include <stdexcept>
#include <string>
#include <string_view>

#include "emu/rt/measured_csv_reader.h"
#include "engine/hal/types.h"

namespace nvl::fakegpu {

inline hal::DType measured_dtype(const rt::MeasuredCsvReader& in, std::string_view field) {
  try {
    return hal::dtype_from_string(field);
  } catch (const std::invalid_argument&) {
    throw in.error("'" + std::string(field) + "' is not a dtype (bf16, fp8, fp4, ...)");
  }
}

}  // namespace nvl::fakegpu
