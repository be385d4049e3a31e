#pragma once
// A table of measured serving benchmarks, in the columns aiconfigurator publishes them in
// (scenarios/measured/README.md): one row per configuration and concurrency with its measured mean TTFT
// and TPOT. Bad rows (a missing column, a figure that is not a number, an unknown mode) are InputErrors
// naming the file, line and column; what the emulator cannot run is not judged here.
#include <cstdint>
#include <filesystem>
#include <istream>
#include <optional>
#include <string>
#include <vector>

namespace nvl::emu {

// One worker kind of a row: how many workers and each one's parallelism (a worker uses tp x dp GPUs).
struct MeasuredWorkers {
  std::int64_t workers = 1;
  std::int64_t tp = 1;
  std::int64_t dp = 1;      // attention data-parallel ranks
  std::int64_t moe_ep = 1;
  std::optional<std::int64_t> moe_tp{};  // decode workers only; not recorded for the others
  std::optional<std::int64_t> batch{};   // requests per worker (aggregated) or per decode rank; empty: not recorded
};

struct MeasuredRow {
  std::size_t line = 0;  // in the file, the header being line 1
  std::string id, system, backend, backend_version, model_path, precision, mode;  // mode: "agg" or "disagg"
  std::int64_t isl = 0, osl = 0;
  std::int64_t concurrency = 0;  // requests in flight, from silicon_data_source's silicon_concurrency=N
  MeasuredWorkers aggregated;    // mode agg: the one worker (tp_size, attention_dp_size, moe_ep_size, batch_size)
  MeasuredWorkers prefill;       // mode disagg
  MeasuredWorkers decode;        // mode disagg
  double ttft_ms = 0;            // measured means
  double tpot_ms = 0;
};

// Reads a whole table; `file` names it in errors.
std::vector<MeasuredRow> read_measured_table(std::istream& in, const std::string& file);
std::vector<MeasuredRow> read_measured_table(const std::filesystem::path& file);

}  // namespace nvl::emu
