#pragma once
// Finding and reading a checkpoint's tokenizer, whatever its format:
//   tokenizer.json                HF tokenizers (hf_tokenizer.h; PosLens's own task vocabularies
//                                 are a subset of it)
//   tokenizer.model               SentencePiece ModelProto (sentencepiece_tokenizer.h), with
//                                 tokenizer_config.json's add_bos_token / add_eos_token beside it
//   vocab.json + merges.txt       GPT-2's original byte-level BPE files
//   tokenizer.bin, tok<N>.bin     llama2.c (llama2c_tokenizer.h)
// Every file is untrusted: each reader has its own size limits and names the file and the field
// in its errors.
#include <cstdint>
#include <memory>
#include <string>

#include "core/tokenizers/tokenizer.h"

namespace poslens {

/// Reads the tokenizer in `path`, by its name: a .json file is HF's tokenizer.json, except
/// `vocab.json`, which needs `merges.txt` beside it (GPT-2); a .model file is SentencePiece;
/// anything else is a llama2.c tokenizer.bin, which has no vocabulary size of its own and
/// takes `vocab_size` (the model's) or, when -1, the N of a `tok<N>.bin` name.
/// Throws poslens::Error naming the file for a missing, unreadable or damaged one.
std::unique_ptr<Tokenizer> read_tokenizer(const std::string& path, int64_t vocab_size = -1);

/// The tokenizer file in checkpoint folder `dir`, in the order tokenizer.json, tokenizer.model,
/// vocab.json (with merges.txt), tokenizer.bin, tok<vocab_size>.bin; empty when none is there.
std::string find_tokenizer_file(const std::string& dir, int64_t vocab_size = -1);

/// A path to a tokenizer file or to a checkpoint (a folder, or a file in one): the tokenizer
/// file itself, or the one find_tokenizer_file() finds in the checkpoint's folder. Throws
/// poslens::Error when there is none, listing the names looked for.
std::string resolve_tokenizer_path(const std::string& path);

}  // namespace poslens
