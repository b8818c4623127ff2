// The task generators (core/train/*.cpp): hand-checked small examples, the invariants of every
// sequence, in- and out-of-distribution statistics, determinism and clear errors.
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <numeric>

#include "core/base/error.h"
#include "core/tokenizers/tokenizer_files.h"
#include "core/tokenizers/vocab_tokenizer.h"
#include "core/train/task.h"
#include "fixtures.h"

namespace poslens::train {
namespace {

using test::Contains;
using test::error_of;

std::vector<std::vector<int64_t>> rows_of(const at::Tensor& tokens) {
  std::vector<std::vector<int64_t>> rows;
  for (int64_t b = 0; b < tokens.size(0); ++b) {
    const auto row = tokens[b].contiguous();
    rows.emplace_back(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel());
  }
  return rows;
}

std::string text_of(const Task& task, const std::vector<int64_t>& ids) {
  std::string out;
  for (const auto id : ids) out += task.tokenizer().token_text(id);
  return out;
}

TEST(FlipFlop, EverySequenceFollowsTheRules) {
  const auto task = make_task({"flipflop", 32, {}});
  EXPECT_EQ(dynamic_cast<const VocabTokenizer&>(task->tokenizer()).pieces(), (std::vector<std::string>{"w", "r", "i", "0", "1"}));
  auto rng = split_rng("flipflop", "test");
  const auto batch = task->sample("test", 200, rng);
  ASSERT_EQ(batch.tokens.sizes(), (std::vector<int64_t>{200, 32}));
  const auto answers = batch.answers;
  const auto rows = rows_of(batch.tokens);
  for (int64_t b = 0; b < static_cast<int64_t>(rows.size()); ++b) {
    const auto text = text_of(*task, rows[static_cast<size_t>(b)]);  // e.g. "w1i0r1...r1"
    ASSERT_EQ(text.front(), 'w') << text;
    ASSERT_EQ(text[text.size() - 2], 'r') << text;
    char memory = '?';
    for (size_t t = 0; t < text.size(); t += 2) {
      ASSERT_NE(std::string("wri").find(text[t]), std::string::npos) << text;
      ASSERT_NE(std::string("01").find(text[t + 1]), std::string::npos) << text;
      if (text[t] == 'w') memory = text[t + 1];
      if (text[t] == 'r') {
        ASSERT_EQ(text[t + 1], memory) << "read must repeat the last write: " << text;
      }
      // Scored exactly at the r instructions (the prediction of the bit after them).
      ASSERT_EQ(answers[b][static_cast<int64_t>(t)].item<bool>(), text[t] == 'r') << text;
      if (t + 1 < text.size() - 1) {
        ASSERT_FALSE(answers[b][static_cast<int64_t>(t + 1)].item<bool>());
      }
    }
  }
  EXPECT_TRUE(batch.weights.eq(1).all().item<bool>()) << "no padding in Flip-Flop";
  EXPECT_EQ(task->answer_candidates(), (std::vector<int64_t>{3, 4}));
}

/// Fraction of ignore instructions among the middle ones (the first is w, the last r).
double ignore_fraction(const Task& task, const std::string& split) {
  auto rng = split_rng("flipflop", split);
  const auto rows = rows_of(task.sample(split, 400, rng).tokens);
  double ignores = 0, total = 0;
  for (const auto& row : rows)
    for (size_t t = 2; t + 2 < row.size(); t += 2) {
      ignores += row[t] == 2;
      total += 1;
    }
  return ignores / total;
}

TEST(FlipFlop, InAndOutOfDistributionIgnoreRates) {
  const auto task = make_task({"flipflop", 128, {}});
  EXPECT_NEAR(ignore_fraction(*task, "test"), 0.8, 0.01);  // 400 x 62 draws: sd ~0.003
  EXPECT_NEAR(ignore_fraction(*task, "train"), 0.8, 0.01);
  EXPECT_NEAR(ignore_fraction(*task, "ood"), 0.98, 0.003);
  EXPECT_EQ(task->splits(), (std::vector<std::string>{"test", "ood"}));
}

TEST(FlipFlop, SameStreamSameBatchOtherStepOtherBatch) {
  const auto task = make_task({"flipflop", 64, {}});
  auto a = step_rng(7, 3), b = step_rng(7, 3), c = step_rng(7, 4), d = step_rng(8, 3);
  const auto ta = task->sample("train", 8, a).tokens;
  EXPECT_TRUE(ta.equal(task->sample("train", 8, b).tokens));
  EXPECT_FALSE(ta.equal(task->sample("train", 8, c).tokens));
  EXPECT_FALSE(ta.equal(task->sample("train", 8, d).tokens));
  auto t1 = split_rng("flipflop", "test"), t2 = split_rng("flipflop", "test");
  EXPECT_TRUE(task->sample("test", 4, t1).tokens.equal(task->sample("test", 4, t2).tokens));
}

TEST(SelectiveCopy, CopiesTheNonBlanksInOrder) {
  const auto task = make_task({"selective_copy", 0, {{"copies", "5"}, {"blanks", "7"}}});
  EXPECT_EQ(task->length(), 2 * 5 + 7 + 1);
  EXPECT_EQ(task->tokenizer().vocab_size(), 16) << "16 symbols as Golovneva et al. 2024 §5.2";
  for (const auto& [split, blanks] :
       std::vector<std::pair<std::string, int>>{{"test", 7}, {"dense", 3}, {"sparse", 14}}) {
    auto rng = split_rng("selective_copy", split);
    const auto batch = task->sample(split, 50, rng);
    ASSERT_EQ(batch.tokens.size(1), 2 * 5 + blanks + 1) << split;
    for (const auto& row : rows_of(batch.tokens)) {
      const auto text = text_of(*task, row);  // e.g. "..AB.C..D.E|ABCDE"
      const auto bar = text.find('|');
      ASSERT_EQ(bar, static_cast<size_t>(5 + blanks)) << text;
      std::string kept;
      for (char ch : text.substr(0, bar)) if (ch != '.') kept += ch;
      EXPECT_EQ(kept, text.substr(bar + 1)) << text;
      EXPECT_EQ(std::count(text.begin(), text.end(), '.'), blanks) << text;
    }
    // Scored: the 5 predictions from the separator on.
    EXPECT_EQ(batch.answers.sum(1).eq(5).all().item<bool>(), true) << split;
    EXPECT_TRUE(batch.answers.slice(1, 5 + blanks).all().item<bool>()) << split;
  }
  EXPECT_TRUE(Contains(error_of([] { make_task({"selective_copy", 50, {}}); }),
                       "set copies= and blanks="));
}

/// Runs a counting program written as words and returns the printed variable's value.
int interpret(const std::vector<std::string>& words) {
  std::map<std::string, int> value;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i + 2 < words.size() && words[i + 1] == "=") value[words[i]] = std::stoi(words[i + 2]);
    if (i + 1 < words.size() && words[i + 1] == "++") ++value[words[i]];
    if (words[i] == "print") return value.at(words[i + 1]);
  }
  return -1;
}

TEST(Counting, ThePrintedValueIsTheCount) {
  const auto task = make_task({"counting", 96, {{"variables", "3"}}});
  auto rng = split_rng("counting", "test");
  const auto batch = task->sample("test", 100, rng);
  const auto rows = rows_of(batch.tokens);
  for (size_t b = 0; b < rows.size(); ++b) {
    std::vector<std::string> words;
    for (const auto id : rows[b])
      if (id != 0) words.push_back(task->tokenizer().token_text(id));  // 0 = <pad>
    ASSERT_GE(words.size(), 3u);
    ASSERT_EQ(words[words.size() - 3], "print");
    const int printed = std::stoi(words.back());
    EXPECT_EQ(printed, interpret(words)) << task->tokenizer().decode(rows[b]);
    EXPECT_LE(printed, 10);
    // Scored once, at the variable after print; padding carries no loss.
    const auto answers = batch.answers[static_cast<int64_t>(b)];
    EXPECT_EQ(answers.sum().item<int64_t>(), 1);
    EXPECT_TRUE(answers[94].item<bool>());
    const int64_t pads = std::count(rows[b].begin(), rows[b].end(), 0);
    EXPECT_LE(pads, 6);
    // Targets are tokens 1..95: all real when unpadded, else the 96 - pads after the padding.
    EXPECT_EQ(batch.weights[static_cast<int64_t>(b)].sum().item<float>(), pads > 0 ? 96 - pads : 95);
  }
  EXPECT_EQ(task->tokenizer().decode(task->tokenizer().encode("a = 0 ; a ++ ; pass ; print a 1", false)),
            "a = 0 ; a ++ ; pass ; print a 1");
}

/// Passes per set operation after the initial set: w_pass / w_set whatever the cap at 10 does
/// to increments (a capped increment is redrawn as set or pass in the same proportion).
double passes_per_set(const Task& task, const std::string& split) {
  auto rng = split_rng("counting", split);
  double passes = 0, sets = 0;
  for (const auto& row : rows_of(task.sample(split, 1500, rng).tokens)) {
    const auto first = std::find_if(row.begin(), row.end(), [](int64_t id) { return id != 0; });
    for (auto it = first + 4; it != row.end(); ++it) {  // after the leading "a = 0 ;"
      const auto& word = task.tokenizer().token_text(*it);
      passes += word == "pass";
      sets += word == "=";
    }
  }
  return passes / sets;
}

TEST(Counting, PassWeightsOfTheSplits) {
  const auto task = make_task({"counting", 256, {}});
  EXPECT_EQ(task->splits(), (std::vector<std::string>{"test", "short", "long"}));
  // w_set 1 against w_pass 50 / 10 / 100 (about 1500, 3000 and 800 sets drawn: sd < 4%).
  EXPECT_NEAR(passes_per_set(*task, "test"), 50, 50 * 0.12);
  EXPECT_NEAR(passes_per_set(*task, "short"), 10, 10 * 0.12);
  EXPECT_NEAR(passes_per_set(*task, "long"), 100, 100 * 0.15);
}

TEST(TextTask, HeldOutBlocksAndCharacterVocabulary) {
  const auto dir = test::scratch_dir();
  // Blocks 9 and 19 (every 10th) are held out: only they hold "h" runs.
  std::string corpus;
  for (int block = 0; block < 20; ++block)
    corpus += std::string(block % 10 == 9 ? "hhhhhhhhhhhh" : block == 0 ? "th" : "tttttttttttt") + "\n%\n";
  std::ofstream(dir / "corpus") << corpus;
  const auto task = make_task({"text", 8, {{"corpus", (dir / "corpus").string()}, {"min_count", "1"}}});
  const auto& tok = dynamic_cast<const VocabTokenizer&>(task->tokenizer());
  EXPECT_EQ(tok.pieces(), (std::vector<std::string>{"<bos>", "<unk>", "\n", "%", "h", "t"}));
  EXPECT_EQ(tok.bos_id(), 0);
  auto rng = split_rng("text", "test");
  const auto batch = task->sample("test", 30, rng);
  ASSERT_EQ(batch.tokens.size(1), 8);
  EXPECT_TRUE(batch.tokens.select(1, 0).eq(0).all().item<bool>()) << "BOS first";
  EXPECT_TRUE(batch.answers.all().item<bool>());
  for (const auto& row : rows_of(batch.tokens))
    EXPECT_EQ(tok.decode(row).find('t'), std::string::npos)
        << "test windows come from the held-out blocks: " << tok.decode(row);
  auto train_rng = step_rng(0, 1);
  const auto train_text = tok.decode(rows_of(task->sample("train", 1, train_rng).tokens)[0]);
  EXPECT_NE(train_text.find('t'), std::string::npos) << train_text;
  auto long_rng = split_rng("text", "long");
  EXPECT_EQ(task->sample("long", 2, long_rng).tokens.size(1), 16);
}

// Text on a subword tokenizer (option tokenizer=FILE): the real GPT-2 tokenizer.json, whose
// <|endoftext|> is the BOS; blocks encoded alone; the checkpoints carry the file's bytes.
TEST(Tasks, TextOnAnHfTokenizerEncodesBlocksAloneAndCarriesTheFile) {
  POSLENS_REQUIRE_TOKENIZERS();
  const auto dir = test::scratch_dir();
  const auto gpt2 = (test::tokenizers_dir() / "gpt2" / "tokenizer.json").string();
  std::string corpus;
  for (int block = 0; block < 20; ++block)
    corpus += std::string(block % 10 == 9 ? "held out words here and there again and again" : "the cat sat on the mat again") +
              "\n%\n";
  std::ofstream(dir / "corpus") << corpus;
  const TaskSpec spec{"text", 8, {{"corpus", (dir / "corpus").string()}, {"tokenizer", gpt2}}};
  const auto task = make_task(spec);
  const auto hf = read_tokenizer(gpt2);
  EXPECT_EQ(task->tokenizer().vocab_size(), 50257);
  EXPECT_EQ(task->tokenizer().bos_id(), 50256);
  std::ifstream in(gpt2, std::ios::binary);
  EXPECT_EQ(task->tokenizer_json(), std::string(std::istreambuf_iterator<char>(in), {}));
  EXPECT_EQ(task->spec().options.at("tokenizer"), gpt2);

  auto rng = split_rng("text", "test");
  const auto batch = task->sample("test", 20, rng);
  ASSERT_EQ(batch.tokens.size(1), 8);
  EXPECT_TRUE(batch.tokens.select(1, 0).eq(50256).all().item<bool>()) << "BOS first";
  const auto newline = hf->encode("\n", false);
  ASSERT_EQ(newline.size(), 1u);
  for (const auto& row : rows_of(batch.tokens)) {
    // Every window is made of GPT-2's encoding of the held-out block and the newline between
    // blocks: "%" never appears (the separator is not text) and no token spans two blocks.
    const std::vector<int64_t> rest(row.begin() + 1, row.end());
    const auto text = hf->decode(rest);
    EXPECT_EQ(text.find('%'), std::string::npos) << text;
    EXPECT_EQ(text.find("cat"), std::string::npos) << "test windows come from the held-out blocks: " << text;
  }
  const auto block = hf->encode("held out words here and there again and again", false);
  std::vector<int64_t> stream = block;
  stream.insert(stream.end(), newline.begin(), newline.end());
  stream.insert(stream.end(), block.begin(), block.end());
  bool found = false;  // the first window of the held-out stream, wherever it starts
  for (const auto& row : rows_of(batch.tokens))
    for (size_t s = 0; s + 7 <= stream.size(); ++s)
      found = found || std::equal(row.begin() + 1, row.end(), stream.begin() + static_cast<std::ptrdiff_t>(s));
  EXPECT_TRUE(found);

  // Resume and eval hand the model's tokenizer back: the same file passes, another is refused.
  EXPECT_NO_THROW(make_task(spec, hf.get()));
  const auto mistral = read_tokenizer((test::tokenizers_dir() / "mistral" / "tokenizer.json").string());
  EXPECT_TRUE(Contains(error_of([&] { make_task(spec, mistral.get()); }), "is not " + gpt2));
  EXPECT_TRUE(Contains(error_of([&] { make_task({"text", 8, {{"corpus", (dir / "corpus").string()},
                                                               {"tokenizer", (dir / "corpus").string()}}}); }),
                       "is not an HF tokenizer.json file"));
}

TEST(Tasks, ClearErrors) {
  EXPECT_TRUE(Contains(error_of([] { make_task({"sorting", 0, {}}); }),
                       "unknown task \"sorting\" (known: flipflop, selective_copy, counting, text)"));
  EXPECT_TRUE(Contains(error_of([] { make_task({"flipflop", 33, {}}); }), "must be even"));
  EXPECT_TRUE(Contains(error_of([] { make_task({"flipflop", 0, {{"p_ignor", "0.5"}}}); }),
                       "unknown option \"p_ignor\" for task flipflop (known: p_ignore, p_ignore_ood)"));
  EXPECT_TRUE(Contains(error_of([] { make_task({"counting", 0, {{"variables", "x"}}}); }),
                       "option variables=\"x\" is not an integer"));
  EXPECT_TRUE(Contains(error_of([] { make_task({"counting", 0, {{"variables", "9"}}}); }),
                       "outside [1, 5]"));
  EXPECT_TRUE(Contains(error_of([] { make_task({"text", 0, {{"corpus", "/no/such/corpus"}}}); }),
                       "corpus /no/such/corpus does not exist"));
  const auto task = make_task({"flipflop", 8, {}});
  auto rng = split_rng("flipflop", "x");
  EXPECT_TRUE(Contains(error_of([&] { task->sample("validation", 1, rng); }),
                       "unknown split \"validation\" for task flipflop (known: train, test, ood)"));
  const VocabTokenizer other(VocabTokenizer::Unit::Character, {"a", "b"});
  EXPECT_TRUE(Contains(error_of([&] { make_task({"flipflop", 8, {}}, &other); }),
                       "is not the vocabulary of task flipflop"));
}

}  // namespace
}  // namespace poslens::train
