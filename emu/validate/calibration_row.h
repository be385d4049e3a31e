#pragma once
// One row of `nvl72emu validate`: a published figure, what the emulator gives for the same
// configuration, and the tolerance the comparison is held to.
#include <optional>
#include <string>

namespace nvl::emu {

// What a row can show. calibrated: a constant of the emulator was set from this very figure, so the row
// checks data entry, not accuracy. independent: no constant was set from it; the row tests the model.
enum class RowBasis { calibrated, independent };

const char* to_string(RowBasis basis);

struct CalibrationRow {
  std::string id;      // stable, e.g. "gemm_fp8_h800"
  std::string name;    // what is compared, in words
  std::string unit;    // e.g. "TFLOPS", "us", "GB"
  std::string source;  // where the published figure comes from (REFERENCE.md section and origin)
  RowBasis basis = RowBasis::calibrated;
  double published = 0;
  double emulated = 0;
  double tolerance_pct = 0;
  // When set, the row passes on |emulated - published| <= tolerance_abs instead (e.g. "within 1 request").
  std::optional<double> tolerance_abs;
  // For a row known to miss: which effect the emulator lacks (printed under the row). Such a row is not
  // expected to pass; `validate` fails on it only with --strict.
  std::string note;

  double error_pct() const;
  bool pass() const;
  bool expected_to_pass() const { return note.empty(); }
  // Outside its tolerance, as its note says it is.
  bool known_miss() const { return !pass() && !expected_to_pass(); }
};

// A row held to a relative tolerance.
CalibrationRow row(std::string id, RowBasis basis, std::string name, std::string unit, std::string source,
                   double published, double emulated, double tolerance_pct);

}  // namespace nvl::emu
