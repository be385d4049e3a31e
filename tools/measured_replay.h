#pragma once
// nvl72emu validate --measured FILE.csv: replays every row of a measured serving table as a scenario run in
// a child process and prints measured vs emulated TTFT and TPOT, then a summary per (system, backend,
// precision). Rows the emulator cannot express are listed with the reason; exit 1 when a run failed.
#include <string>

namespace nvl::tools {

struct MeasuredReplayOptions {
  std::string table;      // the CSV file
  std::string json_path;  // also write the rows and groups as JSON here
  std::string only;       // a regular expression searched in each row id; empty: every row
  unsigned jobs = 0;      // runs at once; 0: the number of cores
  std::string out_dir;    // each row's scenario.json, report.json and log.txt, in a folder per row
};

int replay_measured_table(const MeasuredReplayOptions& opts);

}  // namespace nvl::tools
