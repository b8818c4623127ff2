// poslens-cli tokenize: text to ids (and back) with any tokenizer PosLens reads, exactly as the
// model's own tokenizer does it (HF tokenizers, SentencePiece, llama2.c; docs/tokenizers.md).
#include "app/cli/command.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/runtime/model_input.h"
#include "core/tokenizers/tokenizer_files.h"

namespace poslens::cli {
namespace {

struct TokenizeCommand {
  std::string path;       ///< a tokenizer file, or a checkpoint (file or folder) to find one in
  std::string text;       ///< text to encode (may be empty)
  std::string decode;     ///< "ID,ID,...": decode instead of encoding
  bool json = false;      ///< {"ids": [...], "tokens": [...], "offsets": [[start, end], ...]}
  bool no_special = false;  ///< leave out what the post-processor / BOS convention adds
};

/// Prints the ids comma-separated (or the JSON object), or the decoded text for --decode.
/// Throws poslens::Error for a missing or damaged tokenizer file, ids outside the vocabulary or
/// text that is not UTF-8.
void tokenize(const TokenizeCommand& command) {
  const std::string file = resolve_tokenizer_path(command.path);
  const auto tokenizer = read_tokenizer(file);
  if (!command.decode.empty()) {
    const auto ids = parse_token_ids(command.decode, tokenizer->vocab_size());
    std::cout << tokenizer->decode(ids) << "\n";
    return;
  }
  const Encoding e = tokenizer->encode_full(command.text, !command.no_special);
  if (!command.json) {
    for (size_t i = 0; i < e.ids.size(); ++i) std::cout << (i ? "," : "") << e.ids[i];
    std::cout << "\n";
    return;
  }
  nlohmann::json out;
  out["ids"] = e.ids;
  out["tokens"] = e.tokens;
  auto offsets = nlohmann::json::array();
  for (const auto& [start, end] : e.offsets) offsets.push_back({start, end});
  out["offsets"] = offsets;
  // Pieces are UTF-8 in every format PosLens reads; replace (never throw on) anything else.
  std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace

Command tokenize_command() {
  auto c = std::make_shared<TokenizeCommand>();
  auto text = std::make_shared<CLI::Option*>(nullptr), decode = std::make_shared<CLI::Option*>(nullptr);
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "tokenize", "Text to token ids (or --decode ids to text) with a tokenizer file or a "
                            "checkpoint's tokenizer (docs/tokenizers.md)");
            cmd->add_option("path", c->path,
                            "tokenizer.json, tokenizer.model, vocab.json, tokenizer.bin, or a checkpoint")
                ->required();
            *text = cmd->add_option("--text", c->text, "Text to encode");
            *decode = cmd->add_option("--decode", c->decode, "Comma-separated ids to decode");
            (*text)->excludes(*decode);
            cmd->add_flag("--json", c->json, "Print {\"ids\", \"tokens\", \"offsets\"} (byte offsets)");
            cmd->add_flag("--no-special", c->no_special,
                          "Leave out the special tokens the tokenizer adds (BOS, template)");
            return cmd;
          },
          [=] {
            if ((*text)->count() == 0 && (*decode)->count() == 0)
              throw CLI::RequiredError("--text or --decode");
          },
          [=] { tokenize(*c); }};
}

}  // namespace poslens::cli
