#pragma once
// Child runs submitted as Slurm job arrays (`sweep --slurm`, `study --slurm`), for studies that outgrow one
// machine: each array task runs one child on some node of the cluster, writing into the shared output folder.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/child_runs.h"

namespace nvl::tools {

struct SlurmOptions {
  bool enabled = false;
  std::string partition;       // empty: the cluster's default partition
  std::string time = "60";     // per run, as sbatch --time takes it
  std::string memory = "4G";   // per run, as sbatch --mem takes it
};

// --slurm, --slurm-partition, --slurm-time and --slurm-mem, with their formats checked.
void add_slurm_options(CLI::App& app, SlurmOptions& opts);

// Runs every child as a task of a Slurm job array (arrays of at most 1000 tasks, the default MaxArraySize),
// `max_at_once` tasks at a time (0: no limit), and waits for them. A run that left no exit status (killed by
// Slurm: time limit, memory, a lost node) or died of a signal is submitted again, once; a run that exited
// with a code fails the same way again (runs are deterministic) and is not. Job scripts, Slurm's own task
// output and the exit statuses go in `work_dir`, which every node must see at the same path, as it must the
// executable. Throws rt::InputError naming --slurm when sbatch is missing or refuses the job.
std::vector<int> run_children_on_slurm(const std::vector<ChildRun>& runs, const SlurmOptions& slurm,
                                       unsigned max_at_once, const std::filesystem::path& work_dir,
                                       const std::function<void(std::size_t, int)>& on_done);

// Here (`jobs` at once; 0: one per core) or, with slurm.enabled, on Slurm with its work in out_dir/slurm.
std::vector<int> run_children_here_or_on_slurm(const std::vector<ChildRun>& runs, unsigned jobs,
                                               const SlurmOptions& slurm, const std::filesystem::path& out_dir,
                                               const std::function<void(std::size_t, int)>& on_done);

}  // namespace nvl::tools
