#include "core/runtime/run.h"

#include <cstdio>
#include <string_view>

#include <torch/torch.h>

#include <sstream>

#include "core/base/error.h"
#include "core/formats/hdf5_export.h"

namespace poslens {

std::vector<int64_t> parse_token_ids(const std::string& text, int64_t vocab_size) {
  std::vector<int64_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto first = item.find_first_not_of(" \t\n");
    const auto last = item.find_last_not_of(" \t\n");
    const std::string trimmed = first == std::string::npos ? "" : item.substr(first, last - first + 1);
    size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(trimmed, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (trimmed.empty() || used != trimmed.size())
      throw Error("token ids: \"" + trimmed + "\" is not an integer (expected e.g. 1,403,411)");
    if (value < 0 || value >= vocab_size)
      throw Error("token ids: " + trimmed + " is outside the vocabulary [0, " +
                  std::to_string(vocab_size) + ")");
    ids.push_back(value);
  }
  if (ids.empty()) throw Error("token ids: the list is empty");
  return ids;
}

std::vector<int64_t> encode_text(const LoadedModel& model, const std::string& text) {
  if (text.empty()) throw Error("the text is empty: type something to run the model on");
  if (!model.tokenizer)
    throw Error(model.tokenizer_note.empty() ? "this model has no tokenizer: use token ids"
                                             : model.tokenizer_note);
  const bool bos = model.model->config().bos_token_id >= 0;
  return model.tokenizer->encode(text, bos);
}

namespace {

/// `text(id)` from the model's tokenizer for each id, "#id" without one or outside it.
template <class Text>
std::vector<std::string> per_token(const LoadedModel& model, const std::vector<int64_t>& ids,
                                   Text&& text) {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (const auto id : ids)
    out.push_back(model.tokenizer && id < model.tokenizer->vocab_size() ? text(*model.tokenizer, id)
                                                                        : "#" + std::to_string(id));
  return out;
}

}  // namespace

std::vector<std::string> token_labels(const LoadedModel& model, const std::vector<int64_t>& ids) {
  return per_token(model, ids, [](const Tokenizer& t, int64_t id) { return t.token_text(id); });
}

std::vector<std::string> token_pieces(const LoadedModel& model, const std::vector<int64_t>& ids) {
  return per_token(model, ids, [](const Tokenizer& t, int64_t id) { return t.piece(id); });
}

std::string display_label(const std::string& text) {
  std::string_view t = text;
  // llama2.c's BOS/EOS pieces are "\n<s>\n" / "\n</s>\n": the newlines are decoration.
  const auto first = t.find_first_not_of('\n'), last = t.find_last_not_of('\n');
  if (first != std::string_view::npos && first > 0 && t[first] == '<' && t[last] == '>')
    t = t.substr(first, last - first + 1);
  std::string label;
  size_t i = 0;
  while (i < t.size()) {
    const auto c = static_cast<unsigned char>(t[i]);
    const size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool valid = length > 0 && i + length <= t.size();
    for (size_t k = 1; valid && k < length; ++k)
      valid = (static_cast<unsigned char>(t[i + k]) & 0xC0) == 0x80;
    if (!valid) {  // a byte of a character split across tokens (byte-level BPE, byte fallback)
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      label += hex;
      ++i;
      continue;
    }
    if (length == 1 && (c < 0x20 || c == 0x7F)) {
      if (c == '\n') label += "↵";
      else if (c == '\t') label += "⇥";
      else if (c == '\r') label += "␍";
      else {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02X", c);
        label += hex;
      }
    } else if (c == ' ') {
      label += "␣";
    } else {
      label.append(t.substr(i, length));
    }
    i += length;
  }
  return label;
}

RunResult run_model(const LoadedModel& model, const std::vector<int64_t>& ids,
                    const CaptureSpec& spec, const ProgressFn& progress) {
  spec.check_matches_any(model.model->hook_points());
  RunResult run;
  run.ids = ids;
  run.labels = token_labels(model, ids);
  run.pieces = token_pieces(model, ids);
  const auto tokens = torch::tensor(ids, torch::kLong).unsqueeze(0);
  c10::InferenceMode inference;  // no autograd bookkeeping for a plain run
  run.logits = model.model->forward(tokens, spec, &run.captures, progress);
  return run;
}

ExportMetadata export_metadata(const LoadedModel& model) {
  ExportMetadata meta;
  meta.tool_version = POSLENS_VERSION;
  meta.model_config_json = model.model->config().to_json();
  meta.checkpoint = model.path;
  meta.device = model.model->device().str();
  meta.dtype = dtype_name(model.model->dtype());
  return meta;
}

void export_run(const std::string& path, const LoadedModel& model, const RunResult& run) {
  std::vector<NamedCapture> captures;
  for (const auto& [point, tensor] : run.captures.tensors)
    captures.push_back({point.name(), point.dims(), tensor});
  const ExportMetadata meta = export_metadata(model);
  const auto ids = torch::tensor(run.ids, torch::kLong).unsqueeze(0);
  write_captures_hdf5(path, captures, ids, run.labels, meta);
}

}  // namespace poslens
