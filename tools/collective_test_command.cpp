// nvl72emu collective-test KIND --gpus N --min-bytes A --max-bytes B [--step-factor F] [--cluster PROFILE]:
// prints what nccl-tests' KIND_perf prints (size, count, type, redop, root, time, algbw, busbw) for the
// emulated fabric, each size timed on idle links among the first N GPUs. Exit 2 for bad input.
#include <iostream>
#include <memory>
#include <stdexcept>

#include "emu/rt/errors.h"
#include "fabric/nccl_test_sweep.h"
#include "fabric/profile_loader.h"
#include "tools/commands.h"

namespace nvl::tools {

namespace {

struct Options {
  std::string kind;
  int gpus = 8;
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = 128ULL << 20;
  std::uint64_t step_factor = 2;
  std::string cluster = "gb300-nvl72";
};

// A cluster file (a path ending .json), else a node profile name, given as many units as the GPUs need.
fabric::ClusterSpec cluster_for(const Options& opts) {
  if (opts.cluster.ends_with(".json")) return fabric::load_cluster(opts.cluster);
  const fabric::ClusterSpec one = fabric::make_cluster(opts.cluster, 1);
  const int per_unit = one.node.gpus();
  const int units = std::max(1, (opts.gpus + per_unit - 1) / per_unit);
  return units == 1 ? one : fabric::make_cluster(opts.cluster, units);
}

int run(const Options& opts) {
  hal::CollectiveKind kind{};
  if (!fabric::nccl_test_kind(opts.kind, kind)) {
    throw rt::InputError("KIND", "", "expected all_reduce, all_gather, reduce_scatter, alltoall, broadcast or sendrecv, got '" +
                                         opts.kind + "'");
  }
  const fabric::ClusterSpec spec = cluster_for(opts);
  std::vector<fabric::NcclTestRow> rows;
  try {
    rows = fabric::nccl_test_sweep(spec, kind, opts.gpus, opts.min_bytes, opts.max_bytes, opts.step_factor);
  } catch (const std::invalid_argument& e) {
    throw rt::InputError("collective-test", "", e.what());
  }
  const auto& measured = spec.node.collectives.measured_nccl;
  const bool from_table = measured && measured->time(kind, opts.gpus, opts.min_bytes).has_value();
  std::cout << "# nvl72emu collective-test " << opts.kind << ": " << opts.gpus << " GPUs of " << spec.node.name << " x "
            << spec.units << "; times "
            << (from_table ? "measured (the profile's nccl-tests table, as fabric/measured_nccl_table.h reads it)"
                           : "from the flow model (no measured table for this collective)")
            << "\n";
  fabric::print_nccl_test(std::cout, kind, rows);
  return 0;
}

}  // namespace

void register_collective_test_command(CommandRegistry& registry) {
  auto opts = std::make_shared<Options>();
  CLI::App* sub = registry.add("collective-test",
                               "Print what nccl-tests prints (size, time, algbw, busbw) for a collective on the emulated fabric",
                               [opts]() { return run(*opts); });
  sub->add_option("KIND", opts->kind, "all_reduce, all_gather, reduce_scatter, alltoall, broadcast or sendrecv")->required();
  sub->add_option("--gpus", opts->gpus, "GPUs taking part (the cluster's first N)")->capture_default_str();
  sub->add_option("--min-bytes", opts->min_bytes, "Smallest message size (nccl-tests -b)")->capture_default_str();
  sub->add_option("--max-bytes", opts->max_bytes, "Largest message size (nccl-tests -e)")->capture_default_str();
  sub->add_option("--step-factor", opts->step_factor, "Size multiplier between rows (nccl-tests -f)")->capture_default_str();
  sub->add_option("--cluster", opts->cluster, "A fabric node profile (gb300-nvl72, hgx-h100, ...) or a cluster file (.json)")
      ->capture_default_str();
}

}  // namespace nvl::tools
