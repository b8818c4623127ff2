#include "app/cli/tokenize_command.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/runtime/run.h"
#include "core/tokenizers/tokenizer_files.h"

namespace poslens::cli {

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

}  // namespace poslens::cli
