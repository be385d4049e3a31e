#include "emu/measured/measured_table.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <map>

#include <boost/tokenizer.hpp>

#include "emu/rt/errors.h"

namespace nvl::emu {

namespace {

constexpr std::string_view kConcurrencyKey = "silicon_concurrency=";

// Every column the reader takes (others are ignored); backend_version is optional.
const std::vector<std::string>& required_columns() {
  static const std::vector<std::string> columns = {
      "id", "system", "backend", "model_path", "precision", "mode", "isl", "osl", "batch_size", "tp_size",
      "attention_dp_size", "moe_ep_size", "prefill_num_workers", "prefill_tp_size", "prefill_attention_dp_size",
      "prefill_moe_ep_size", "prefill_batch_size", "decode_num_workers", "decode_tp_size", "decode_attention_dp_size",
      "decode_moe_tp_size", "decode_moe_ep_size", "decode_batch_size", "silicon_ttft_ms", "silicon_tpot_ms",
      "silicon_data_source"};
  return columns;
}

// RFC 4180 fields: comma-separated, optionally double-quoted (commas inside quotes are data); no escapes.
std::vector<std::string> split_fields(const std::string& line) {
  using Separator = boost::escaped_list_separator<char>;
  const boost::tokenizer<Separator> tokens(line, Separator("", ",", "\""));
  return {tokens.begin(), tokens.end()};
}

// One data line's cells by column name, with errors that name the line and column.
class RowCells {
 public:
  RowCells(const std::string& file, std::size_t line, const std::map<std::string, std::size_t>& columns,
           std::vector<std::string> cells)
      : file_(file), line_(line), columns_(columns), cells_(std::move(cells)) {}

  [[noreturn]] void fail(const std::string& column, const std::string& problem) const {
    throw rt::InputError(file_, "line " + std::to_string(line_) + ", column " + column, problem);
  }
  const std::string& text(const std::string& column) const { return cells_.at(columns_.at(column)); }
  bool empty(const std::string& column) const { return text(column).empty(); }

  std::string required_text(const std::string& column) const {
    if (empty(column)) fail(column, "is empty");
    return text(column);
  }
  std::int64_t whole(const std::string& column, const std::string& needed_by) const {
    const std::string& t = text(column);
    if (t.empty()) fail(column, "is empty; " + needed_by + " needs it");
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size() || v < 1) fail(column, "'" + t + "' is not a whole number >= 1");
    return v;
  }
  std::optional<std::int64_t> optional_whole(const std::string& column) const {
    if (empty(column)) return std::nullopt;
    return whole(column, "");
  }
  double positive(const std::string& column) const {
    const std::string& t = text(column);
    if (t.empty()) fail(column, "is empty; every row needs its measured figure");
    double v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size() || !std::isfinite(v) || v <= 0) {
      fail(column, "'" + t + "' is not a number > 0 (milliseconds)");
    }
    return v;
  }

 private:
  const std::string& file_;
  std::size_t line_;
  const std::map<std::string, std::size_t>& columns_;
  std::vector<std::string> cells_;
};

std::int64_t concurrency_of(const RowCells& cells) {
  const std::string& source = cells.text("silicon_data_source");
  const std::string column = "silicon_data_source";
  for (std::size_t start = 0; start <= source.size();) {
    std::size_t end = source.find(';', start);
    if (end == std::string::npos) end = source.size();
    std::string item = source.substr(start, end - start);
    item.erase(0, item.find_first_not_of(' '));
    if (item.starts_with(kConcurrencyKey)) {
      const std::string value = item.substr(kConcurrencyKey.size());
      std::int64_t v = 0;
      const auto [last, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || last != value.data() + value.size() || v < 1) {
        cells.fail(column, "silicon_concurrency '" + value + "' is not a whole number >= 1");
      }
      return v;
    }
    start = end + 1;
  }
  cells.fail(column, "has no silicon_concurrency=N (the benchmark's requests in flight)");
}

MeasuredWorkers workers_of(const RowCells& c, const std::string& prefix, const std::string& mode) {
  MeasuredWorkers w;
  const std::string needed_by = "every " + mode + " row";
  if (prefix.empty()) {
    w.tp = c.whole("tp_size", needed_by);
    w.dp = c.whole("attention_dp_size", needed_by);
    w.moe_ep = c.whole("moe_ep_size", needed_by);
    w.batch = c.optional_whole("batch_size");
    return w;
  }
  w.workers = c.whole(prefix + "num_workers", needed_by);
  w.tp = c.whole(prefix + "tp_size", needed_by);
  w.dp = c.whole(prefix + "attention_dp_size", needed_by);
  w.moe_ep = c.whole(prefix + "moe_ep_size", needed_by);
  w.batch = c.optional_whole(prefix + "batch_size");
  if (prefix == "decode_") w.moe_tp = c.optional_whole("decode_moe_tp_size");
  return w;
}

}  // namespace

std::vector<MeasuredRow> read_measured_table(std::istream& in, const std::string& file) {
  std::string text;
  std::size_t line = 0;
  const auto next_line = [&] {
    if (!std::getline(in, text)) return false;
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();  // CRLF files
    return true;
  };
  if (!next_line()) throw rt::InputError(file, "line 1", "empty: expected a header line of column names");
  std::map<std::string, std::size_t> columns;
  const std::vector<std::string> header = split_fields(text);
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (!columns.emplace(header[i], i).second) throw rt::InputError(file, "line 1, column " + header[i], "appears twice");
  }
  for (const std::string& c : required_columns()) {
    if (!columns.contains(c)) throw rt::InputError(file, "line 1, column " + c, "missing from the header");
  }

  std::vector<MeasuredRow> rows;
  std::map<std::string, std::size_t> id_lines;
  while (next_line()) {
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    std::vector<std::string> fields = split_fields(text);
    if (fields.size() != header.size()) {
      throw rt::InputError(file, "line " + std::to_string(line),
                           std::to_string(fields.size()) + " fields; the header has " + std::to_string(header.size()));
    }
    const RowCells c(file, line, columns, std::move(fields));
    MeasuredRow r;
    r.line = line;
    r.id = c.required_text("id");
    if (const auto [it, fresh] = id_lines.emplace(r.id, line); !fresh) {
      c.fail("id", "'" + r.id + "' is already the id of line " + std::to_string(it->second));
    }
    r.system = c.required_text("system");
    r.backend = c.required_text("backend");
    if (columns.contains("backend_version")) r.backend_version = c.text("backend_version");
    r.model_path = c.required_text("model_path");
    r.precision = c.required_text("precision");
    r.mode = c.required_text("mode");
    if (r.mode != "agg" && r.mode != "disagg") c.fail("mode", "'" + r.mode + "' is not one of agg, disagg");
    r.isl = c.whole("isl", "every row");
    r.osl = c.whole("osl", "every row");
    r.concurrency = concurrency_of(c);
    if (r.mode == "agg") {
      r.aggregated = workers_of(c, "", r.mode);
    } else {
      r.prefill = workers_of(c, "prefill_", r.mode);
      r.decode = workers_of(c, "decode_", r.mode);
    }
    r.ttft_ms = c.positive("silicon_ttft_ms");
    r.tpot_ms = c.positive("silicon_tpot_ms");
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<MeasuredRow> read_measured_table(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw rt::InputError(file.string(), "", "cannot open the measured table");
  return read_measured_table(in, file.string());
}

}  // namespace nvl::emu
