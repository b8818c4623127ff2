#pragma once
// poslens-cli tokenize: text to ids (and back) with any tokenizer PosLens reads, exactly as the
// model's own tokenizer does it (HF tokenizers, SentencePiece, llama2.c; docs/tokenizers.md).
#include <string>

namespace poslens::cli {

struct TokenizeCommand {
  std::string path;       ///< a tokenizer file, or a checkpoint (file or folder) to find one in
  std::string text;       ///< text to encode (may be empty)
  bool has_text = false;
  std::string decode;     ///< "ID,ID,...": decode instead of encoding
  bool json = false;      ///< {"ids": [...], "tokens": [...], "offsets": [[start, end], ...]}
  bool no_special = false;  ///< leave out what the post-processor / BOS convention adds
};

/// Prints the ids comma-separated (or the JSON object), or the decoded text for --decode.
/// Throws poslens::Error for a missing or damaged tokenizer file, ids outside the vocabulary or
/// text that is not UTF-8.
void tokenize(const TokenizeCommand& command);

}  // namespace poslens::cli
