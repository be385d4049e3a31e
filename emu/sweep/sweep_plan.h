#pragma once
// What `nvl72emu sweep` runs: the cartesian product of every --vary axis and the --seeds range, one run of
// the scenario per point. Bad --vary or --seeds text is an rt::InputError naming the option.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nvl::emu {

// One --vary key.path=v1,v2,...: the scenario key and the values it takes in turn (as --set reads them).
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
};

// One run of a sweep: a value for each axis (in --vary order) and a seed.
struct SweepPoint {
  std::vector<std::pair<std::string, std::string>> settings;
  std::uint64_t seed = 1;

  // The --set overrides of the run (seed included), as `nvl72emu run` takes them.
  std::vector<std::string> overrides() const;
  // A folder name for the run's output: "key=value_..._seed=S", with characters unsafe in a file name replaced.
  std::string folder_name() const;
};

// "key.path=v1,v2,...": at least one value, none empty; `seed` is not a key (use --seeds).
SweepAxis parse_vary(const std::string& spec);
// "A..B" (inclusive, A <= B) or a single seed "S".
std::vector<std::uint64_t> parse_seeds(const std::string& spec);
// Every combination: the first axis varies slowest, the seed fastest. A key varied twice is an error.
std::vector<SweepPoint> plan_sweep(const std::vector<SweepAxis>& axes, const std::vector<std::uint64_t>& seeds);

}  // namespace nvl::emu
