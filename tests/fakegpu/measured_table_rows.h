#pragma once
// What the measured-table tests share: a table file's data rows, a file of chosen rows (the rows kept when
// others are held out), and the error a loader gives for a file's text.
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "emu/rt/errors.h"

namespace nvl::fakegpu::testing {

// The rows after the header line, comments and blank lines skipped.
inline std::vector<std::string> table_rows(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  std::string line;
  bool header = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) out.push_back(line);
    header = true;
  }
  return out;
}

// A row's fields, to read with >>.
inline std::istringstream fields_of(std::string row) {
  std::replace(row.begin(), row.end(), ',', ' ');
  return std::istringstream(row);
}

// Every row as a T, its `line` the row's text and the rest read by read(fields, t).
template <typename T, typename Read>
std::vector<T> points_of(const std::filesystem::path& file, Read read) {
  std::vector<T> out;
  for (const std::string& row : table_rows(file)) {
    T t;
    t.line = row;
    std::istringstream fields = fields_of(row);
    read(fields, t);
    out.push_back(std::move(t));
  }
  return out;
}

// `rows` under `header` in a temporary file named after `name`.
inline std::filesystem::path write_rows(const std::string& name, const std::string& header,
                                        const std::vector<std::string>& rows) {
  const auto file = std::filesystem::temp_directory_path() / ("nvl_" + name + ".csv");
  std::ofstream out(file);
  out << "# test table\n" << header << '\n';
  for (const std::string& r : rows) out << r << '\n';
  return file;
}

// What Table::load says of a file holding `text`: the rt::InputError's message, or "" if it loads.
template <typename Table>
std::string load_error(const std::string& text) {
  const auto file = std::filesystem::temp_directory_path() / "nvl_bad_table.csv";
  std::ofstream(file) << text;
  try {
    (void)Table::load(file);
  } catch (const rt::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace nvl::fakegpu::testing
