// poslens-cli train / eval as a user runs them: exit codes, messages, Ctrl-C, a killed run,
// and a trained checkpoint taking its task's notation in `run`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

#include "app/cli_runner.h"
#include "core/runtime/checkpoint.h"
#include "core/train/run_folder.h"
#include "fixtures.h"

namespace poslens {
namespace {

using ::testing::HasSubstr;
using test::cli;
using test::q;
namespace fs = std::filesystem;

/// A tiny Flip-Flop model config; returns its path.
fs::path tiny_model(const fs::path& dir) {
  const auto path = dir / "model.json";
  std::ofstream(path) << R"({"model_type": "poslens", "d_model": 16, "n_layers": 1, "n_heads": 2,
    "d_mlp": 32, "position_encoding": [{"type": "cope", "npos_max": 8}]})";
  return path;
}

std::string tiny_run(const fs::path& dir, const std::string& out, int steps) {
  return "train --task flipflop --length 16 --model " + q(tiny_model(dir)) + " --out " + q(out) +
         " --steps " + std::to_string(steps) + " --warmup 1 --batch-size 4 --eval-sequences 20";
}

TEST(CliTrain, TrainEvalAndRunTheCheckpoint) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  const auto run = dir / "run";
  auto r = cli(tiny_run(dir, run.string(), 3));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("step 3/3"));
  EXPECT_THAT(r.output, HasSubstr("trained 3 steps; last checkpoint"));

  const auto checkpoint = q(run / "step-000003");
  r = cli("eval " + checkpoint + " --n 30 --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("task flipflop, training length 16, 30 sequences per split"));
  EXPECT_THAT(r.output, HasSubstr("ignore probability 0.98, 16 tokens"));
  EXPECT_THAT(r.output, ::testing::ContainsRegex("test +30 +[0-9]+ +[0-9.]+ +[0-9.]+"));

  r = cli("eval " + checkpoint + " --split ood --n 5 --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("\ntest ")));

  // The task's own notation as text: one token per character.
  r = cli("run " + checkpoint + " --text w1i0r --out " + q(dir / "run.h5") + " --device cpu");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("tokens (5): 0:\"w\" 4:\"1\" 2:\"i\" 3:\"0\" 1:\"r\""));
  r = cli("info " + checkpoint);
  EXPECT_THAT(r.output, HasSubstr("tokenizer.json, one token per character, 5 tokens"));
  EXPECT_THAT(r.output, HasSubstr("trained:           flipflop (L 16), step 3/3, seed 0"));
}

TEST(CliTrain, BadArgumentsGiveOneClearError) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  const auto model = q(tiny_model(dir));
  struct Case {
    std::string args;
    int code;
    std::string message;
  };
  const std::vector<Case> cases{
      {"train --task flipflop --out " + q(dir / "a"), 2, "--model is required"},
      {"train --task sorting --model " + model + " --out " + q(dir / "b"), 1,
       "unknown task \"sorting\" (known: flipflop, selective_copy, counting, text)"},
      {"train --task flipflop --model " + model + " --out " + q(dir / "c") + " --task-option x", 1,
       "--task-option x: expected KEY=VALUE"},
      {"train --task flipflop --model " + model + " --out " + q(dir / "d") + " --steps 0", 1,
       "steps must be positive"},
      {"train --resume " + q(dir) + " --steps 5", 2, "cannot be combined with --resume"},
      {"train --resume " + q(dir), 1, "is not a training run (no train.json)"},
      {"eval " + q(dir / "nothing"), 1, "no such file or folder"},
      {"eval " + q(test::stories_dir() / "stories260K.bin") + " --device cpu", 1,
       "has no training metadata: name the task with --task"},
  };
  for (const auto& c : cases) {
    const auto r = cli(c.args);
    EXPECT_EQ(r.code, c.code) << c.args << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message)) << c.args;
  }
  EXPECT_FALSE(fs::exists(dir / "b")) << "nothing written for a bad run";
}

/// Starts `args` in the background; returns its pid.
pid_t start(const std::string& args, const fs::path& log) {
  const auto pid_file = log.string() + ".pid";
  const std::string command = std::string(POSLENS_CLI_PATH) + " " + args + " > " + q(log) +
                              " 2>&1 & echo $! > " + q(pid_file);
  EXPECT_EQ(std::system(command.c_str()), 0);
  pid_t pid = 0;
  std::ifstream(pid_file) >> pid;
  return pid;
}

/// Waits (up to a minute) until the run has a checkpoint at or after `step`.
bool wait_for_checkpoint(const fs::path& run, int64_t step) {
  for (int i = 0; i < 600; ++i) {
    const auto steps = train::checkpoint_steps(run.string());
    if (!steps.empty() && steps.back() >= step) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

bool exited(pid_t pid) { return ::kill(pid, 0) != 0; }

TEST(CliTrain, CtrlCWritesACheckpointAndResumeFinishes) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  const auto run = dir / "run";
  const auto pid = start(tiny_run(dir, run.string(), 100000), dir / "log");
  ASSERT_TRUE(wait_for_checkpoint(run, 0));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(pid, SIGINT);
  for (int i = 0; i < 600 && !exited(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::ifstream in(dir / "log");
  const std::string output((std::istreambuf_iterator<char>(in)), {});
  EXPECT_THAT(output, HasSubstr("interrupted at step"));
  EXPECT_THAT(output, HasSubstr("--resume"));
  const auto steps = train::checkpoint_steps(run.string());
  ASSERT_GE(steps.size(), 2u) << output;
  EXPECT_GT(steps.back(), 0);
  load_checkpoint((run / train::checkpoint_name(steps.back())).string(), {"cpu", "float32", ""});
}

TEST(CliTrain, AKilledRunLeavesOnlyCompleteCheckpoints) {
  REQUIRE_CLI();
  const auto dir = test::scratch_dir();
  const auto run = dir / "run";
  const auto pid =
      start(tiny_run(dir, run.string(), 100000) + " --checkpoint-every 1", dir / "log");
  ASSERT_TRUE(wait_for_checkpoint(run, 5));
  ::kill(pid, SIGKILL);
  for (int i = 0; i < 100 && !exited(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // Every step-N folder is complete and loads; a write cut short is only a step-N.tmp-PID.
  for (const auto& entry : fs::directory_iterator(run)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("step-", 0) != 0 || name.find(".tmp-") != std::string::npos) continue;
    EXPECT_TRUE(fs::exists(entry.path() / "trainer_state.json")) << name;
    EXPECT_NO_THROW(load_checkpoint(entry.path().string(), {"cpu", "float32", ""})) << name;
  }
}

}  // namespace
}  // namespace poslens
