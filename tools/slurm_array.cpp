#include "tools/slurm_array.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <regex>
#include <thread>

#include <boost/process.hpp>

#include "emu/rt/errors.h"
#include "tools/output_folder.h"

namespace nvl::tools {

namespace {

namespace bp = boost::process;
namespace fs = std::filesystem;

constexpr std::size_t kMaxArrayTasks = 1000;  // Slurm's default MaxArraySize is 1001 (indices 0..1000)

fs::path exit_file(const fs::path& work_dir, std::size_t run) { return work_dir / ("exit-" + std::to_string(run)); }

// One script for every array: the batch file named by $1 maps the task's index to a run; the run's exit code
// goes to exit-RUN beside it.
void write_job_script(const fs::path& script, const std::vector<ChildRun>& runs, const fs::path& work_dir) {
  const std::string exe = shell_quoted(self_executable().string());
  std::ofstream out(script);
  out << "#!/bin/sh\n"
         "# Written by nvl72emu: array task -> run (line TASK+1 of the batch file $1), then the run's exit code.\n"
         "run=$(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" \"$1\")\n"
         "case \"$run\" in\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    out << i << ") " << exe;
    for (const std::string& a : runs[i].args) out << ' ' << shell_quoted(a);
    out << " > " << shell_quoted(runs[i].log.string()) << " 2>&1 ;;\n";
  }
  out << "*) echo \"nvl72emu: no run '$run' for array task $SLURM_ARRAY_TASK_ID in $1\" >&2; exit 2 ;;\n"
         "esac\n"
         "echo $? > "
      << shell_quoted((work_dir / "exit-").string()) << "\"$run\"\n";
  if (!out) throw rt::InputError(script.string(), "--slurm", "cannot write the job script");
}

// Runs sbatch with `args`; returns the job id it printed (--parsable: "ID" or "ID;CLUSTER").
std::string sbatch(const std::vector<std::string>& args, const fs::path& log) {
  const boost::filesystem::path program = bp::search_path("sbatch");
  if (program.empty()) throw rt::InputError("sbatch", "--slurm", "not found on PATH (is this a Slurm submit host?)");
  int exit_code = 0;
  try {
    bp::child c(program, bp::args(args), (bp::std_out & bp::std_err) > log.string(), bp::std_in < bp::null);
    c.wait();
    exit_code = c.exit_code();
  } catch (const bp::process_error& e) {
    throw rt::InputError("sbatch", "--slurm", std::string("could not start: ") + e.what());
  }
  std::ifstream in(log);
  std::string first;
  std::getline(in, first);
  if (exit_code != 0) {
    throw rt::InputError("sbatch", "--slurm", "refused the job (exit " + std::to_string(exit_code) + "): " + last_line(log));
  }
  return first.substr(0, first.find(';'));
}

std::vector<std::string> common_args(const SlurmOptions& slurm, const std::string& job_name) {
  std::vector<std::string> args{"--parsable", "--job-name=" + job_name, "--chdir=" + fs::current_path().string()};
  if (!slurm.partition.empty()) args.push_back("--partition=" + slurm.partition);
  return args;
}

// Submits the runs `which` as arrays of at most kMaxArrayTasks and waits for all of them (a last job that
// depends on every array and is waited on). `pass` names the files of this submission.
void submit_and_wait(const std::vector<std::size_t>& which, const SlurmOptions& slurm, unsigned max_at_once,
                     const fs::path& work_dir, const fs::path& script, const std::string& pass) {
  const std::string job_name = "nvl72emu-" + work_dir.parent_path().filename().string();
  std::vector<std::string> job_ids;
  for (std::size_t begin = 0; begin < which.size(); begin += kMaxArrayTasks) {
    const std::size_t end = std::min(which.size(), begin + kMaxArrayTasks);
    const std::string part = pass + "-" + std::to_string(job_ids.size());
    const fs::path batch = work_dir / (part + "-batch.txt");
    std::ofstream(batch) << [&] {
      std::string lines;
      for (std::size_t k = begin; k < end; ++k) lines += std::to_string(which[k]) + "\n";
      return lines;
    }();
    std::string array = "--array=0-" + std::to_string(end - begin - 1);
    if (max_at_once > 0) array += "%" + std::to_string(max_at_once);
    std::vector<std::string> args = common_args(slurm, job_name);
    args.insert(args.end(), {array, "--time=" + slurm.time, "--mem=" + slurm.memory, "--ntasks=1",
                             "--output=" + (work_dir / (part + "-task-%a.txt")).string(), script.string(),
                             batch.string()});
    job_ids.push_back(sbatch(args, work_dir / (part + "-sbatch.txt")));
  }
  std::string after = "--dependency=afterany";
  for (const std::string& id : job_ids) after += ":" + id;
  std::vector<std::string> wait_args = common_args(slurm, job_name + "-wait");
  wait_args.insert(wait_args.end(), {"--wait", after, "--time=1", "--mem=16M", "--output=/dev/null", "--wrap=true"});
  sbatch(wait_args, work_dir / (pass + "-wait.txt"));
}

// The run's exit code from its exit file; -1 when it left none.
int recorded_exit(const fs::path& work_dir, std::size_t run) {
  std::ifstream in(exit_file(work_dir, run));
  int code = -1;
  return in >> code ? code : -1;
}

bool worth_retrying(int exit_code) { return exit_code < 0 || exit_code >= 128; }

}  // namespace

void add_slurm_options(CLI::App& app, SlurmOptions& opts) {
  app.add_flag("--slurm", opts.enabled, "Submit the runs as a Slurm job array and gather them from the shared --out "
                                         "folder (sbatch on PATH; every node sees this executable and --out)");
  app.add_option("--slurm-partition", opts.partition, "Slurm partition of the runs (default: the cluster's)");
  app.add_option("--slurm-time", opts.time, "Time limit per run, as sbatch --time: MINUTES, H:MM:SS or D-HH")
      ->check(CLI::Validator(
          [](std::string& s) {
            static const std::regex form(R"(\d+(:\d{2}){0,2}|\d+-\d+(:\d{2}){0,2})");
            return std::regex_match(s, form) ? std::string() : "expected MINUTES, H:MM:SS or D-HH, not '" + s + "'";
          },
          "TIME"))
      ->capture_default_str();
  app.add_option("--slurm-mem", opts.memory, "Memory per run, as sbatch --mem: a number with K, M, G or T")
      ->check(CLI::Validator(
          [](std::string& s) {
            static const std::regex form(R"(\d+[KMGT]?)");
            return std::regex_match(s, form) ? std::string() : "expected e.g. 4G or 500M, not '" + s + "'";
          },
          "MEMORY"))
      ->capture_default_str();
}

std::vector<int> run_children_on_slurm(const std::vector<ChildRun>& runs, const SlurmOptions& slurm,
                                       unsigned max_at_once, const fs::path& work_dir,
                                       const std::function<void(std::size_t, int)>& on_done) {
  prepare_output_folder(work_dir, "--slurm");
  std::error_code ec;
  for (std::size_t i = 0; i < runs.size(); ++i) fs::remove(exit_file(work_dir, i), ec);
  const fs::path script = fs::absolute(work_dir / "runs.sh");
  write_job_script(script, runs, fs::absolute(work_dir));

  std::vector<std::size_t> all(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) all[i] = i;
  std::cout << "slurm: submitting " << runs.size() << " runs (job scripts and statuses in " << work_dir.string() << ")\n"
            << std::flush;
  submit_and_wait(all, slurm, max_at_once, work_dir, script, "first");

  std::vector<std::size_t> again;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (worth_retrying(recorded_exit(work_dir, i))) again.push_back(i);
  }
  if (!again.empty()) {
    std::cout << "slurm: " << again.size() << " runs left no exit status or died of a signal; submitting them again, once\n"
              << std::flush;
    for (std::size_t i : again) fs::remove(exit_file(work_dir, i), ec);
    submit_and_wait(again, slurm, max_at_once, work_dir, script, "retry");
  }

  std::vector<int> exit_codes(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const int code = recorded_exit(work_dir, i);
    if (code < 0) {
      std::ofstream(runs[i].log, std::ios::app) << "nvl72emu: the Slurm task left no exit status (see "
                                                << work_dir.string() << "/*-task-*.txt)\n";
    }
    exit_codes[i] = code < 0 ? 127 : code;
    on_done(i, exit_codes[i]);
  }
  return exit_codes;
}

std::vector<int> run_children_here_or_on_slurm(const std::vector<ChildRun>& runs, unsigned jobs,
                                               const SlurmOptions& slurm, const fs::path& out_dir,
                                               const std::function<void(std::size_t, int)>& on_done) {
  if (slurm.enabled) return run_children_on_slurm(runs, slurm, jobs, out_dir / "slurm", on_done);
  return run_children(runs, jobs > 0 ? jobs : std::max(1U, std::thread::hardware_concurrency()), on_done);
}

}  // namespace nvl::tools
