// poslens-cli sweep and merge (docs/sweeps.md): a manifest of (checkpoint, analysis, options)
// items run one HDF5 file each — locally, resumable, or as a Slurm job array with a dependent
// merge job — and merged into one file.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "analysis/sweep_merge.h"
#include "app/cli/child_process.h"
#include "app/cli/command.h"
#include "app/cli/sweep_manifest.h"
#include "core/base/atomic_file.h"
#include "core/base/compute_setup.h"
#include "core/base/error.h"

namespace poslens::cli {
namespace {

namespace fs = std::filesystem;

struct SweepCommand {
  std::string manifest;
  std::string out;
  int64_t item = -1;  ///< -1: every item
  bool slurm = false;
  std::string partition;
  int64_t gpus = 0;
  int64_t cpus_per_task = 0;  ///< 0: Slurm's default (one CPU)
  int64_t max_parallel = 0;  ///< 0: no limit
  std::string merged;        ///< the merge job's output (default OUT/merged.h5)
};

std::string log_path(const std::string& dir, int64_t index) {
  return (fs::path(dir) / "logs" / ("item-" + std::to_string(index) + ".log")).string();
}

/// The last non-empty line of a log, for a failure message.
std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

/// Runs item `index` unless its output exists; returns false when it failed.
bool run_item(const std::vector<SweepItem>& items, int64_t index, const std::string& dir) {
  const auto& item = items.at(static_cast<size_t>(index));
  const auto output = sweep_item_output(dir, index);
  const std::string what = "[" + std::to_string(index + 1) + "/" + std::to_string(items.size()) + "] " +
                           item.analysis + " " + fs::path(item.checkpoint).filename().string();
  // Outputs are written atomically, so one that exists is complete.
  if (fs::exists(output)) {
    std::cout << "sweep: " << what << ": done before, skipped\n" << std::flush;
    return true;
  }
  std::vector<std::string> argv = {self_executable(), item.analysis, item.checkpoint};
  argv.insert(argv.end(), item.options.begin(), item.options.end());
  argv.push_back("--out");
  argv.push_back(output);
  const auto log = log_path(dir, index);
  std::cout << "sweep: " << what << " …" << std::flush;
  const auto start = std::chrono::steady_clock::now();
  const int status = run_logged(argv, log);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (status == 0 && fs::exists(output)) {
    std::cout << " done in " << std::fixed << std::setprecision(1) << seconds << " s\n" << std::flush;
    return true;
  }
  std::cout << " failed (exit " << status << "): " << last_line(log) << " (log: " << log << ")\n" << std::flush;
  return false;
}

/// A path as one single-quoted shell word.
std::string shell_word(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Writes the two batch scripts and submits the array and the dependent merge with sbatch.
void submit_to_slurm(const SweepCommand& c, const std::string& expanded, int64_t n_items) {
  const auto dir = fs::absolute(c.out).string();
  const auto merged = fs::absolute(c.merged.empty() ? (fs::path(c.out) / "merged.h5") : fs::path(c.merged)).string();
  const auto self = self_executable();
  std::string header = "#!/bin/bash\n";
  if (!c.partition.empty()) header += "#SBATCH --partition=" + c.partition + "\n";
  const std::string array_script = (fs::path(dir) / "slurm" / "sweep.sbatch").string();
  const std::string merge_script = (fs::path(dir) / "slurm" / "merge.sbatch").string();
  fs::create_directories(fs::path(dir) / "slurm");
  write_file_atomically(array_script,
                        header + "#SBATCH --job-name=poslens-sweep\n#SBATCH --output=" + dir +
                            "/logs/slurm-%A_%a.out\n" +
                            (c.gpus > 0 ? "#SBATCH --gpus=" + std::to_string(c.gpus) + "\n" : "") +
                            (c.cpus_per_task > 0 ? "#SBATCH --cpus-per-task=" + std::to_string(c.cpus_per_task) + "\n"
                                                 : "") +
                            "# As many threads as the task has CPUs: a cluster that does not bind tasks to\n"
                            "# their CPUs (TaskPlugin=task/none) would otherwise get one thread per core of the\n"
                            "# node from every task, and tasks side by side wait on each other's threads.\n"
                            "export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$SLURM_CPUS_ON_NODE}\n"
                            "# One item of the sweep per array task (poslens-cli sweep --item).\n" + "exec " +
                            shell_word(self) + " sweep " + shell_word(expanded) + " --out " + shell_word(dir) +
                            " --item \"$SLURM_ARRAY_TASK_ID\"\n");
  write_file_atomically(merge_script, header + "#SBATCH --job-name=poslens-merge\n#SBATCH --output=" + dir +
                                          "/logs/slurm-merge-%j.out\n" + "exec " + shell_word(self) +
                                          " merge " + shell_word(dir) + " --out " + shell_word(merged) + "\n");
  std::string array = "--array=0-" + std::to_string(n_items - 1);
  if (c.max_parallel > 0) array += "%" + std::to_string(c.max_parallel);
  std::string array_id;
  try {
    array_id = run_captured({"sbatch", "--parsable", array, array_script});
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " — is Slurm installed and SLURM_CONF set? The scripts are in " + dir +
                "/slurm");
  }
  array_id = array_id.substr(0, array_id.find_first_of(";\n"));  // "ID" or "ID;cluster"
  auto merge_id = run_captured({"sbatch", "--parsable", "--dependency=afterok:" + array_id, merge_script});
  merge_id = merge_id.substr(0, merge_id.find_first_of(";\n"));
  std::cout << "sweep: submitted job array " << array_id << " (" << n_items << " items" <<
      (c.max_parallel > 0 ? ", at most " + std::to_string(c.max_parallel) + " at once" : "") << ") and merge job "
            << merge_id << " (after the array succeeds) → " << merged << "\n";
}

void sweep(const SweepCommand& c) {
  const auto items = read_sweep_manifest(c.manifest);
  fs::create_directories(fs::path(c.out) / "items");
  fs::create_directories(fs::path(c.out) / "logs");
  // The expanded list every task and merge reads; a task (--item) reads it, never rewrites it.
  const auto expanded = fs::absolute(fs::path(c.out) / "sweep.json").string();
  if (c.item < 0) {
    const auto text = sweep_manifest_json(items);
    std::ifstream old(expanded);
    const std::string before((std::istreambuf_iterator<char>(old)), std::istreambuf_iterator<char>());
    if (!before.empty() && before != text)
      throw Error(expanded + " holds another sweep's items: give this sweep its own --out folder");
    if (before.empty()) write_file_atomically(expanded, text);
  }
  const auto n = static_cast<int64_t>(items.size());
  if (c.slurm) {
    submit_to_slurm(c, expanded, n);
    return;
  }
  // Each item runs in a child with this process's environment and CPUs, so on these threads.
  std::cout << "sweep: items run on " << describe_compute() << "\n" << std::flush;
  if (c.item >= 0) {
    if (c.item >= n)
      throw Error("--item " + std::to_string(c.item) + ": the manifest has " + std::to_string(n) + " items");
    if (!run_item(items, c.item, c.out)) throw Error("item " + std::to_string(c.item) + " failed");
    return;
  }
  int64_t failed = 0;
  for (int64_t i = 0; i < n; ++i) failed += run_item(items, i, c.out) ? 0 : 1;
  std::cout << "sweep: " << n - failed << " of " << n << " items done in " << c.out << "/items";
  if (failed) throw Error(std::to_string(failed) + " items failed; run the sweep again to retry them");
  std::cout << "; merge them with: poslens-cli merge " << c.out << " --out ALL.h5\n";
}

struct MergeCommand {
  std::string dir;
  std::string out;
};

void merge(const MergeCommand& c) {
  const auto expanded = (fs::path(c.dir) / "sweep.json").string();
  if (!fs::exists(expanded)) throw Error(c.dir + ": no sweep.json (not a folder `poslens-cli sweep` wrote)");
  const auto items = read_sweep_manifest(expanded);
  std::vector<MergeItem> merge_items;
  for (size_t i = 0; i < items.size(); ++i)
    merge_items.push_back({sweep_item_output(c.dir, static_cast<int64_t>(i)), items[i].checkpoint,
                           items[i].analysis, items[i].options});
  merge_sweep(merge_items, c.out);
  std::cout << "merge: " << items.size() << " items → " << c.out << "\n";
}

}  // namespace

Command sweep_command() {
  auto c = std::make_shared<SweepCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "sweep", "Run a manifest of (checkpoint, analysis, options) items, one HDF5 file each; "
                         "resumable; --slurm submits a job array and a merge job");
            cmd->add_option("manifest", c->manifest, "The sweep's JSON manifest (docs/sweeps.md)")->required();
            cmd->add_option("--out", c->out, "Folder of the items' outputs and logs")->required();
            cmd->add_option("--item", c->item, "Run only item N (what each Slurm array task runs)")
                ->check(CLI::NonNegativeNumber);
            auto* slurm = cmd->add_option_group("Slurm", "Submit instead of running here");
            slurm->add_flag("--slurm", c->slurm, "Write and submit a job array (sbatch) and a dependent merge job");
            slurm->add_option("--partition", c->partition, "Slurm partition");
            slurm->add_option("--gpus", c->gpus, "GPUs per array task")->check(CLI::NonNegativeNumber);
            slurm->add_option("--cpus-per-task", c->cpus_per_task,
                              "CPUs per array task (default Slurm's, one); each task runs that many threads")
                ->check(CLI::PositiveNumber);
            slurm->add_option("--max-parallel", c->max_parallel, "At most K array tasks at once (--array=…%K)")
                ->check(CLI::PositiveNumber);
            slurm->add_option("--merge-out", c->merged, "The merge job's output (default OUT/merged.h5)");
            return cmd;
          },
          [=] {
            if (c->slurm && c->item >= 0) throw CLI::ValidationError("sweep", "--slurm and --item exclude each other");
            if (!c->slurm && (!c->partition.empty() || c->gpus > 0 || c->cpus_per_task > 0 || c->max_parallel > 0 ||
                              !c->merged.empty()))
              throw CLI::ValidationError(
                  "sweep", "--partition, --gpus, --cpus-per-task, --max-parallel and --merge-out need --slurm");
          },
          [=] { sweep(*c); }};
}

Command merge_command() {
  auto c = std::make_shared<MergeCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand("merge", "Merge a sweep's item files into one HDF5 file (copies)");
            cmd->add_option("dir", c->dir, "The folder `sweep --out` wrote")->required();
            cmd->add_option("--out", c->out, "The merged .h5 file")->required();
            return cmd;
          },
          [] {}, [=] { merge(*c); }};
}

}  // namespace poslens::cli
