#pragma once
// Reads a measured table the project keeps beside its profiles: '#' lines (source and licence) and blank
// lines are skipped, then one exact header line, then rows of comma-separated fields. Every problem is an
// rt::InputError naming the file and line.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "emu/rt/errors.h"

namespace nvl::rt {

class MeasuredCsvReader {
 public:
  // `what` names the table in the error for a file that cannot be opened ("the measured GEMM table").
  MeasuredCsvReader(const std::filesystem::path& file, const std::string& what, std::string header);
  // The next row's fields (views into the line, valid until the next call), checked to be as many as the
  // header has; false at the end of the file. The header must come first.
  bool next(std::vector<std::string_view>& fields);
  // An error at the line read last.
  InputError error(const std::string& problem) const;
  // Whole-field numbers; false if the field is anything more or less.
  static bool parse(std::string_view text, std::int64_t& out);
  static bool parse(std::string_view text, double& out);

 private:
  std::filesystem::path file_;
  std::string header_;
  std::size_t columns_ = 0;
  std::ifstream in_;
  std::string line_;
  std::size_t number_ = 0;
  bool header_seen_ = false;
};

}  // namespace nvl::rt
