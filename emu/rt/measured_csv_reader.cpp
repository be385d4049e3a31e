#include "emu/rt/measured_csv_reader.h"

#include <algorithm>
#include <charconv>

namespace nvl::rt {

namespace {

template <typename T>
bool parse_whole(std::string_view text, T& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

MeasuredCsvReader::MeasuredCsvReader(const std::filesystem::path& file, const std::string& what, std::string header)
    : file_(file), header_(std::move(header)), in_(file) {
  columns_ = static_cast<std::size_t>(std::count(header_.begin(), header_.end(), ',')) + 1;
  if (!in_) throw InputError(file_.string(), "", "cannot open " + what);
}

bool MeasuredCsvReader::next(std::vector<std::string_view>& fields) {
  while (std::getline(in_, line_)) {
    ++number_;
    if (line_.empty() || line_.front() == '#') continue;
    if (!header_seen_) {
      if (line_ != header_) throw error("expected the header " + header_ + ", got '" + line_ + "'");
      header_seen_ = true;
      continue;
    }
    fields.clear();
    for (std::size_t from = 0;;) {
      const std::size_t comma = line_.find(',', from);
      fields.emplace_back(std::string_view(line_).substr(from, comma - from));
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    if (fields.size() != columns_) {
      throw error("expected " + std::to_string(columns_) + " fields (" + header_ + "), got " +
                  std::to_string(fields.size()));
    }
    return true;
  }
  if (!header_seen_) throw InputError(file_.string(), "", "no header line " + header_);
  return false;
}

InputError MeasuredCsvReader::error(const std::string& problem) const {
  return InputError(file_.string(), "line " + std::to_string(number_), problem);
}

bool MeasuredCsvReader::parse(std::string_view text, std::int64_t& out) { return parse_whole(text, out); }
bool MeasuredCsvReader::parse(std::string_view text, double& out) { return parse_whole(text, out); }

}  // namespace nvl::rt
