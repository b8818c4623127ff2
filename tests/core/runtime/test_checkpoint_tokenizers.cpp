// A checkpoint's tokenizer is found whatever its format (core/tokenizers/tokenizer_files.h):
// HF folders with tokenizer.json, tokenizer.model (+ tokenizer_config.json) or GPT-2's
// vocab.json + merges.txt take text and give the ids HF gives (expected ids from HF's Rust
// tokenizers / SentencePiece, as in the fixtures README and tests/data/tokenizers).
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/base/error.h"
#include "core/formats/safetensors.h"
#include "core/runtime/checkpoint.h"
#include "core/runtime/model_input.h"
#include "core/tokenizers/tokenizer_files.h"
#include "fixtures.h"

namespace poslens {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using test::tokenizers_dir;

/// A random 1-layer HF Llama folder with `vocab` tokens (d_model 16), no tokenizer yet.
fs::path llama_folder(const std::string& name, int64_t vocab) {
  torch::manual_seed(1);
  const int64_t d = 16, hidden = 32;
  auto r = [](std::vector<int64_t> s) { return torch::randn(s) * 0.1; };
  std::vector<std::pair<std::string, at::Tensor>> t{
      {"model.embed_tokens.weight", r({vocab, d})}, {"model.norm.weight", torch::ones({d})},
      {"lm_head.weight", r({vocab, d})}};
  const std::string p = "model.layers.0.";
  t.insert(t.end(), {{p + "input_layernorm.weight", torch::ones({d})},
                     {p + "self_attn.q_proj.weight", r({d, d})}, {p + "self_attn.k_proj.weight", r({d, d})},
                     {p + "self_attn.v_proj.weight", r({d, d})}, {p + "self_attn.o_proj.weight", r({d, d})},
                     {p + "post_attention_layernorm.weight", torch::ones({d})},
                     {p + "mlp.gate_proj.weight", r({hidden, d})}, {p + "mlp.up_proj.weight", r({hidden, d})},
                     {p + "mlp.down_proj.weight", r({d, hidden})}});
  const auto dir = test::scratch_dir() / name;
  fs::create_directories(dir);
  std::ofstream(dir / "config.json")
      << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 16, "num_hidden_layers": 1,
            "num_attention_heads": 2, "num_key_value_heads": 2, "intermediate_size": 32,
            "vocab_size": )" << vocab << R"(, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "max_position_embeddings": 64, "tie_word_embeddings": false, "bos_token_id": 1})";
  write_safetensors((dir / "model.safetensors").string(), t);
  return dir;
}

void copy_in(const fs::path& from, const fs::path& dir) {
  fs::copy_file(from, dir / from.filename(), fs::copy_options::overwrite_existing);
}

TEST(CheckpointTokenizers, HfFolderWithTokenizerJsonTakesText) {
  POSLENS_REQUIRE_TOKENIZERS();
  const auto dir = llama_folder("mistral_tok", 32000);
  copy_in(tokenizers_dir() / "mistral" / "tokenizer.json", dir);
  copy_in(tokenizers_dir() / "mistral" / "tokenizer_config.json", dir);
  const auto model = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  ASSERT_NE(model.tokenizer, nullptr) << model.tokenizer_note;
  EXPECT_THAT(model.tokenizer->describe(), HasSubstr("tokenizer.json"));
  // HF's Rust tokenizers: "Hello world!" -> <s> ▁Hello ▁world !
  EXPECT_EQ(encode_text(model, "Hello world!"), (std::vector<int64_t>{1, 22557, 1526, 28808}));
  const auto labels = token_labels(model, {1, 22557, 13});
  EXPECT_EQ(display_label(labels[1]), "␣Hello");
  EXPECT_EQ(display_label(labels[2]), "↵");  // <0x0A>
  EXPECT_EQ(token_pieces(model, {22557, 13}), (std::vector<std::string>{"▁Hello", "<0x0A>"}));
}

TEST(CheckpointTokenizers, HfFolderWithSentencePieceModelTakesText) {
  POSLENS_REQUIRE_TOKENIZERS();
  const auto dir = llama_folder("llama_spm", 32000);
  copy_in(tokenizers_dir() / "llama2" / "tokenizer.model", dir);
  const auto model = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  ASSERT_NE(model.tokenizer, nullptr) << model.tokenizer_note;
  // SentencePiece (python3-sentencepiece) plus BOS, as HF's LlamaTokenizer adds it.
  EXPECT_EQ(encode_text(model, "Hello world!"), (std::vector<int64_t>{1, 15043, 3186, 29991}));
  // A tokenizer_config.json without add_bos_token keeps LlamaTokenizer's default (BOS added);
  // add_bos_token=false is obeyed.
  std::ofstream(dir / "tokenizer_config.json") << R"({"bos_token": "<s>"})";
  EXPECT_EQ(load_checkpoint(dir.string(), {"cpu", "float32", ""}).tokenizer->encode("Hello world!", true),
            (std::vector<int64_t>{1, 15043, 3186, 29991}));
  std::ofstream(dir / "tokenizer_config.json") << R"({"add_bos_token": false, "bos_token": "<s>"})";
  const auto plain = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  EXPECT_EQ(plain.tokenizer->encode("Hello world!", true), (std::vector<int64_t>{15043, 3186, 29991}));
}

TEST(CheckpointTokenizers, Gpt2VocabAndMergesAreFoundAndAnExplicitTokenizerWins) {
  POSLENS_REQUIRE_TOKENIZERS();
  const auto dir = llama_folder("gpt2_files", 50257);
  copy_in(tokenizers_dir() / "gpt2" / "vocab.json", dir);
  copy_in(tokenizers_dir() / "gpt2" / "merges.txt", dir);
  auto model = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  ASSERT_NE(model.tokenizer, nullptr) << model.tokenizer_note;
  EXPECT_EQ(model.tokenizer->encode("Hello world!", false), (std::vector<int64_t>{15496, 995, 0}));
  // --tokenizer overrides discovery (here the same vocabulary as a tokenizer.json).
  model = load_checkpoint(dir.string(),
                          {"cpu", "float32", (tokenizers_dir() / "gpt2" / "tokenizer.json").string()});
  EXPECT_THAT(model.tokenizer->describe(), HasSubstr("tokenizer.json"));
}

TEST(CheckpointTokenizers, ABrokenOrTooLargeTokenizerLeavesTheModelOpenWithAReason) {
  POSLENS_REQUIRE_TOKENIZERS();
  auto dir = llama_folder("broken_tok", 32000);
  std::ofstream(dir / "tokenizer.json") << R"({"model": {"type": "BPE", "vocab": )";
  auto model = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  EXPECT_EQ(model.tokenizer, nullptr);
  EXPECT_THAT(model.tokenizer_note, HasSubstr("tokenizer.json"));
  EXPECT_THAT(model.tokenizer_note, HasSubstr("use token ids"));
  dir = llama_folder("small_vocab", 100);  // the Llama-2 vocabulary does not fit 100 tokens
  copy_in(tokenizers_dir() / "llama2" / "tokenizer.model", dir);
  model = load_checkpoint(dir.string(), {"cpu", "float32", ""});
  EXPECT_EQ(model.tokenizer, nullptr);
  EXPECT_THAT(model.tokenizer_note, HasSubstr("more than the model's vocab_size 100"));
}

TEST(TokenizerFiles, ResolvesFilesAndCheckpointsInTheDocumentedOrder) {
  POSLENS_REQUIRE_TOKENIZERS();
  const auto dir = test::scratch_dir() / "order";
  fs::create_directories(dir);
  EXPECT_EQ(find_tokenizer_file(dir.string()), "");
  copy_in(tokenizers_dir() / "gpt2" / "vocab.json", dir);
  EXPECT_EQ(find_tokenizer_file(dir.string()), "") << "vocab.json needs merges.txt";
  copy_in(tokenizers_dir() / "gpt2" / "merges.txt", dir);
  EXPECT_EQ(fs::path(find_tokenizer_file(dir.string())).filename(), "vocab.json");
  copy_in(tokenizers_dir() / "llama2" / "tokenizer.model", dir);
  EXPECT_EQ(fs::path(find_tokenizer_file(dir.string())).filename(), "tokenizer.model");
  copy_in(tokenizers_dir() / "gpt2" / "tokenizer.json", dir);
  EXPECT_EQ(fs::path(find_tokenizer_file(dir.string())).filename(), "tokenizer.json");
  std::ofstream(dir / "config.json") << "{}";
  EXPECT_EQ(fs::path(resolve_tokenizer_path((dir / "config.json").string())).filename(), "tokenizer.json");
  EXPECT_EQ(resolve_tokenizer_path((dir / "merges.txt").string()), (dir / "tokenizer.json").string());
  try {
    resolve_tokenizer_path((test::scratch_dir() / "nothing_here").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no such file"));
  }
}

TEST(TokenizerFiles, Llama2cTokenizerTakesItsVocabularyFromItsName) {
  POSLENS_REQUIRE_STORIES();
  const auto tok = read_tokenizer((test::stories_dir() / "tok512.bin").string());
  EXPECT_EQ(tok->vocab_size(), 512);
  EXPECT_EQ(tok->encode("Once upon a time", true), (std::vector<int64_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(fs::path(resolve_tokenizer_path((test::stories_dir() / "stories260K.bin").string())).filename(),
            "tok512.bin");
}

}  // namespace
}  // namespace poslens
