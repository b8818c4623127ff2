// The trainer (core/train/trainer.h): determinism, resume equal to an uninterrupted run, the
// run folder and its checkpoints, the schedule, the evaluation on a model whose answers are
// known, and clear errors.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/models/poslens_model.h"
#include "core/runtime/checkpoint.h"
#include "core/train/evaluate.h"
#include "core/train/run_folder.h"
#include "core/train/trainer.h"
#include "fixtures.h"

namespace poslens::train {
namespace {

using test::Contains;
using test::error_of;
namespace fs = std::filesystem;

TrainOptions small_run(const std::string& pe = R"([{"type": "cope", "npos_max": 8}])") {
  TrainOptions o;
  o.task = {"flipflop", 16, {}};
  o.model_json = R"({"model_type": "poslens", "d_model": 16, "n_layers": 1, "n_heads": 2, "d_mlp": 32, "position_encoding": )" +
                 pe + "}";
  o.steps = 6;
  o.batch_size = 4;
  o.warmup = 2;
  o.log_every = 1;
  o.eval_sequences = 10;
  o.seed = 3;
  return o;
}

std::vector<double> logged_losses(const fs::path& run) {
  std::vector<double> losses;
  std::ifstream in(run / "log.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("loss")) losses.push_back(j["loss"].get<double>());
  }
  return losses;
}

at::Tensor logits_of(const fs::path& checkpoint, const at::Tensor& tokens) {
  auto loaded = load_checkpoint(checkpoint.string(), {"cpu", "float32", ""});
  c10::InferenceMode guard;
  return loaded.model->forward(tokens);
}

TEST(Trainer, WritesARunFolderWithCheckpointsThatLoad) {
  const auto run = test::scratch_dir() / "run";
  auto options = small_run();
  options.checkpoint_every = 3;
  const auto result = train(run.string(), options);
  EXPECT_EQ(result.step, 6);
  EXPECT_FALSE(result.interrupted);
  EXPECT_EQ(checkpoint_steps(run.string()), (std::vector<int64_t>{0, 3, 6}));
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json", "optimizer.pt",
                           "trainer_state.json"})
    EXPECT_TRUE(fs::exists(run / "step-000006" / file)) << file;
  EXPECT_TRUE(fs::exists(run / "train.json"));
  EXPECT_EQ(logged_losses(run).size(), 6u);

  // The checkpoint is a PosLens model with its task's tokenizer and how it was trained.
  const auto loaded = load_checkpoint((run / "step-000006").string(), {"cpu", "float32", ""});
  const auto& c = loaded.model->config();
  EXPECT_EQ(c.n_ctx, 16) << "the training length is the checkpoint's n_ctx";
  EXPECT_EQ(c.vocab_size, 5);
  const auto training = nlohmann::json::parse(c.training_json);
  EXPECT_EQ(training["task"], "flipflop");
  EXPECT_EQ(training["step"], 6);
  EXPECT_EQ(training["seed"], 3);
  EXPECT_DOUBLE_EQ(training["loss"].get<double>(), logged_losses(run).back());
  EXPECT_TRUE(training["eval"].contains("ood"));
  ASSERT_TRUE(loaded.tokenizer);
  EXPECT_EQ(loaded.tokenizer->encode("w1r1", false), (std::vector<int64_t>{0, 4, 1, 4}));
  ASSERT_EQ(result.eval.size(), 2u);
  EXPECT_EQ(result.eval[0].split, "test");
}

TEST(Trainer, ChecksAtListedStepsAndRefusesAnUnorderedList) {
  const auto run = test::scratch_dir() / "run";
  auto options = small_run();
  options.checkpoint_steps = {1, 2, 4};
  train(run.string(), options);
  EXPECT_EQ(checkpoint_steps(run.string()), (std::vector<int64_t>{0, 1, 2, 4, 6}));
  // Stored in train.json and read back for --resume.
  std::ifstream in(run / "train.json");
  const auto back = TrainOptions::from_json(std::string(std::istreambuf_iterator<char>(in), {}), "train.json");
  EXPECT_EQ(back.checkpoint_steps, (std::vector<int64_t>{1, 2, 4}));
  options.checkpoint_steps = {4, 2};
  EXPECT_TRUE(Contains(error_of([&] { options.validate(); }), "checkpoint steps must ascend within [0, 6]"));
  options.checkpoint_steps = {7};
  EXPECT_TRUE(Contains(error_of([&] { options.validate(); }), "got 7"));
}

// A language model on a BPE tokenizer (text, tokenizer=FILE: the real GPT-2 tokenizer.json):
// every checkpoint carries that file, loads with it, and resumes exactly.
TEST(Trainer, TextOnAnHfTokenizerCheckpointsTheTokenizerAndResumes) {
  POSLENS_REQUIRE_TOKENIZERS();
  const auto dir = test::scratch_dir();
  std::string corpus;
  for (int block = 0; block < 40; ++block) corpus += "the quick brown fox jumps over the lazy dog " + std::to_string(block) + "\n%\n";
  std::ofstream(dir / "corpus") << corpus;
  const auto gpt2 = (test::tokenizers_dir() / "gpt2" / "tokenizer.json").string();
  auto options = small_run(R"([{"type": "rope"}])");
  options.task = {"text", 8, {{"corpus", (dir / "corpus").string()}, {"tokenizer", gpt2}}};
  options.model_json = R"({"model_type": "poslens", "d_model": 16, "n_layers": 1, "n_heads": 2, "d_mlp": 32,
                           "tie_word_embeddings": true, "position_encoding": [{"type": "rope"}]})";
  train((dir / "whole").string(), options);
  std::atomic<bool> stop{false};
  train((dir / "split").string(), options, &stop, [&](const TrainProgress& p) {
    if (p.step == 2) stop = true;
  });
  resume((dir / "split").string());
  EXPECT_EQ(logged_losses(dir / "split"), logged_losses(dir / "whole"));

  std::ifstream file(gpt2, std::ios::binary), copy(dir / "whole" / "step-000006" / "tokenizer.json", std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(copy), {}) ,
            std::string(std::istreambuf_iterator<char>(file), {}) + "\n");
  const auto loaded = load_checkpoint((dir / "whole" / "step-000006").string(), {"cpu", "float32", ""});
  EXPECT_EQ(loaded.model->config().vocab_size, 50257);
  EXPECT_EQ(loaded.model->config().bos_token_id, 50256);
  ASSERT_TRUE(loaded.tokenizer);
  EXPECT_EQ(loaded.tokenizer->encode("the quick", false), (std::vector<int64_t>{1169, 2068}));
}

TEST(Trainer, TwoRunsWithOneSeedGiveIdenticalLosses) {
  const auto dir = test::scratch_dir();
  train((dir / "a").string(), small_run());
  train((dir / "b").string(), small_run());
  const auto a = logged_losses(dir / "a");
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a, logged_losses(dir / "b"));
  auto other = small_run();
  other.seed = 4;
  train((dir / "c").string(), other);
  EXPECT_NE(a, logged_losses(dir / "c"));
}

TEST(Trainer, ResumeContinuesExactlyAsAnUninterruptedRun) {
  const auto dir = test::scratch_dir();
  const auto options = small_run(R"([{"type": "rope"}, {"type": "cope", "npos_max": 8}])");
  train((dir / "whole").string(), options);

  // Interrupted after step 3 (as Ctrl-C does), then resumed.
  std::atomic<bool> stop{false};
  const auto first = train((dir / "split").string(), options, &stop, [&](const TrainProgress& p) {
    if (p.step == 2) stop = true;  // set while step 2 is reported: the run stops after step 3
  });
  EXPECT_TRUE(first.interrupted);
  EXPECT_EQ(first.step, 3);
  EXPECT_EQ(checkpoint_steps((dir / "split").string()), (std::vector<int64_t>{0, 3}));
  // A line logged after the checkpoint (a killed run) is dropped on resume.
  append_log((dir / "split" / "log.jsonl").string(), R"({"step": 4, "loss": 123.0})");
  const auto second = resume((dir / "split").string());
  EXPECT_FALSE(second.interrupted);
  EXPECT_EQ(second.step, 6);

  EXPECT_EQ(logged_losses(dir / "whole"), logged_losses(dir / "split"));
  const auto tokens = torch::randint(0, 5, {2, 16}, torch::kLong);
  EXPECT_TRUE(logits_of(dir / "whole" / "step-000006", tokens)
                  .equal(logits_of(dir / "split" / "step-000006", tokens)))
      << "weights after resume are bit-identical";
}

TEST(Trainer, ResumeRemovesPartialCheckpointWrites) {
  const auto run = test::scratch_dir() / "run";
  auto options = small_run();
  options.steps = 2;
  options.warmup = 1;
  train(run.string(), options);
  fs::create_directories(run / "step-000004.tmp-999");
  std::ofstream(run / "step-000004.tmp-999" / "config.json") << "{";
  EXPECT_EQ(checkpoint_steps(run.string()), (std::vector<int64_t>{0, 2})) << "a partial write is no checkpoint";
  resume(run.string());
  EXPECT_FALSE(fs::exists(run / "step-000004.tmp-999"));
}

// kill -9 between train.json and the step-0 checkpoint (tests/crash/kill_writers.py found it)
// leaves train.json and a partial step-0 folder: resume starts the run over, as it would have run.
TEST(Trainer, ResumeOfARunKilledBeforeItsFirstCheckpointStartsOver) {
  const auto dir = test::scratch_dir();
  auto options = small_run();
  options.steps = 2;
  options.warmup = 1;
  train((dir / "whole").string(), options);
  const auto killed = dir / "killed";
  fs::create_directories(killed / "step-000000.tmp-999-1");
  fs::copy_file(dir / "whole" / "train.json", killed / "train.json");
  std::ofstream(killed / "step-000000.tmp-999-1" / "config.json") << "{";
  const auto result = resume(killed.string());
  EXPECT_EQ(result.step, 2);
  EXPECT_FALSE(fs::exists(killed / "step-000000.tmp-999-1"));
  EXPECT_EQ(checkpoint_steps(killed.string()), checkpoint_steps((dir / "whole").string()));
  EXPECT_EQ(logged_losses(dir / "whole"), logged_losses(killed));
}

TEST(Trainer, LearningRateSchedule) {
  TrainOptions o;
  o.lr = 1.0;
  o.steps = 110;
  o.warmup = 10;
  EXPECT_DOUBLE_EQ(learning_rate(o, 1), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(o, 10), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate(o, 60), 0.5);
  EXPECT_DOUBLE_EQ(learning_rate(o, 110), 0.0);
  o.schedule = "cosine";
  o.min_lr_ratio = 0.1;
  EXPECT_NEAR(learning_rate(o, 60), 0.1 + 0.9 * 0.5, 1e-12);
  EXPECT_NEAR(learning_rate(o, 110), 0.1, 1e-12);
}

TEST(Trainer, ClearErrors) {
  const auto dir = test::scratch_dir();
  auto o = small_run();
  o.warmup = 100;
  EXPECT_TRUE(Contains(error_of([&] { train((dir / "a").string(), o); }), "warmup (100 steps)"));
  o = small_run();
  o.task.name = "parity";
  EXPECT_TRUE(Contains(error_of([&] { train((dir / "b").string(), o); }), "unknown task \"parity\""));
  o = small_run();
  o.model_json = R"({"model_type": "poslens", "d_model": 16, "n_layers": 1, "n_heads": 2, "d_mlp": 32, "vocab_size": 7})";
  EXPECT_TRUE(Contains(error_of([&] { train((dir / "c").string(), o); }),
                       "\"vocab_size\" is 7 but task flipflop has a vocabulary of 5"));
  EXPECT_FALSE(fs::exists(dir / "c")) << "nothing written for a config that does not fit";
  o = small_run();
  o.model_json = R"({"model_type": "llama"})";
  EXPECT_TRUE(Contains(error_of([&] { train((dir / "d").string(), o); }), "not a PosLens config"));
  train((dir / "e").string(), small_run());
  EXPECT_TRUE(Contains(error_of([&] { train((dir / "e").string(), small_run()); }),
                       "already exists and is not empty (use --resume"));
  EXPECT_TRUE(Contains(error_of([&] { resume((dir / "nothing").string()); }), "is not a training run"));
}

/// A flip-flop model that always answers "0": token embeddings all e_0, every block weight 0
/// (the residual stream stays e_0), the unembedding row of "0" = e_0 and the others 0.
Transformer always_zero_model() {
  const auto config = poslens_config_from_text(
      R"({"model_type": "poslens", "d_model": 4, "n_layers": 1, "n_heads": 1, "d_mlp": 4, "vocab_size": 5, "n_ctx": 16})",
      "test");
  auto w = initialize_weights(config, 0);
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : named_parameters(config, w))
    if (name.find("norm") == std::string::npos) t.zero_();
  w.tok_embed.select(1, 0).fill_(1.0);
  w.unembed[3][0] = 1.0;  // "0" is id 3
  return Transformer(config, w);
}

TEST(Evaluate, ErrorOfAModelThatAlwaysAnswersZero) {
  const auto task = make_task({"flipflop", 16, {}});
  const auto model = always_zero_model();
  const auto result = evaluate(model, *task, "test", 40, 7);
  // Independently: the share of read bits that are "1" in the same test sequences.
  auto rng = split_rng("flipflop", "test");
  const auto batch = task->sample("test", 40, rng);
  const auto targets = batch.tokens.slice(1, 1);
  const auto ones = targets.eq(4).logical_and(batch.answers).sum().item<int64_t>();
  const auto answers = batch.answers.sum().item<int64_t>();
  EXPECT_EQ(result.sequences, 40);
  EXPECT_EQ(result.answers, answers);
  EXPECT_DOUBLE_EQ(result.error_pct, 100.0 * ones / answers);
  EXPECT_GT(ones, 0);
  EXPECT_TRUE(result.unavailable.empty());
}

TEST(Evaluate, ScoresOnlyAnswersAmongTheCandidates) {
  TaskBatch batch;
  batch.tokens = torch::tensor({0, 3, 1, 4}, torch::kLong).unsqueeze(0);  // w 0 r 1
  batch.weights = torch::ones({1, 3});
  batch.answers = torch::tensor({false, false, true}).unsqueeze(0);  // the prediction at r
  // At r the largest logit is "w" (id 0), but among the candidates 0/1 it is "1": right.
  auto logits = torch::zeros({1, 4, 5});
  logits[0][2][0] = 5.0;
  logits[0][2][4] = 1.0;
  auto score = score_batch(logits, batch, {3, 4});
  EXPECT_EQ(score.answers, 1);
  EXPECT_EQ(score.wrong, 0);
  const double expected_nll = -torch::log_softmax(logits[0][2], 0)[4].item<double>();
  EXPECT_NEAR(score.loss_sum, expected_nll, 1e-6);
  score = score_batch(logits, batch, {});
  EXPECT_EQ(score.wrong, 1) << "over the whole vocabulary the argmax is w";
}

TEST(Evaluate, ASplitLongerThanALearnedTableIsReportedNotThrown) {
  const auto dir = test::scratch_dir();
  std::string corpus;
  for (int block = 0; block < 10; ++block) corpus += std::string(40, 'a') + "\n%\n";
  std::ofstream(dir / "corpus") << corpus;  // block 9 is held out
  auto o = small_run(R"([{"type": "learned_absolute"}])");
  o.task = {"text", 8, {{"corpus", (dir / "corpus").string()}, {"min_count", "1"}}};
  o.steps = 1;
  o.warmup = 0;
  const auto result = train((dir / "run").string(), o);
  ASSERT_EQ(result.eval.size(), 2u);
  EXPECT_TRUE(result.eval[0].unavailable.empty());
  EXPECT_TRUE(Contains(result.eval[1].unavailable, "longer than the model's learned positions"));
}

}  // namespace
}  // namespace poslens::train
