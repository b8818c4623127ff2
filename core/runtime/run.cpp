#include "core/runtime/run.h"

#include <cstdio>
#include <iomanip>
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
    std::stringstream words(item);
    std::string word;
    bool any = false;
    while (words >> word) {  // ids inside one comma-separated item: whitespace or line breaks
      any = true;
      size_t used = 0;
      long long value = -1;
      try {
        value = std::stoll(word, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != word.size())
        throw Error("token ids: \"" + word + "\" is not an integer (expected e.g. 1,403,411)");
      if (value < 0 || value >= vocab_size)
        throw Error("token ids: " + word + " is outside the vocabulary [0, " +
                    std::to_string(vocab_size) + ")");
      ids.push_back(value);
    }
    if (!any) throw Error("token ids: an empty item between commas (expected e.g. 1,403,411)");
  }
  if (ids.empty()) throw Error("token ids: the list is empty");
  return ids;
}

std::vector<int64_t> encode_text(const LoadedModel& model, const std::string& text) {
  if (text.empty()) throw Error("the text is empty: type something to run the model on");
  if (!model.tokenizer)
    throw Error(model.tokenizer_note.empty() ? "this model has no tokenizer: use token ids"
                                             : model.tokenizer_note);
  const auto& c = model.model->config();
  // Special tokens: a BOS-prefixed LM's BOS, a masked LM's [CLS] … [SEP], T5's closing </s>.
  return model.tokenizer->encode(text, c.bos_token_id >= 0 || !c.predicts_next_token() || c.encoder_decoder());
}

std::vector<int64_t> decoder_ids(const LoadedModel& model, const std::string& text) {
  const auto& c = model.model->config();
  if (!c.encoder_decoder()) throw Error(c.architecture + " is not an encoder–decoder model: it has no decoder input");
  std::vector<int64_t> ids{c.decoder_start_token_id};
  if (text.empty()) return ids;
  if (!model.tokenizer)
    throw Error(model.tokenizer_note.empty() ? "this model has no tokenizer for the decoder text" : model.tokenizer_note);
  for (const auto id : model.tokenizer->encode(text, false)) ids.push_back(id);
  return ids;
}

void require_one_stack(const LoadedModel& model, const std::string& what) {
  const auto& c = model.model->config();
  if (c.encoder_decoder())
    throw Error(what + " reads one stack of layers; it is not available for encoder–decoder models (" +
                c.architecture + ") yet: `run` (and the GUI's Heads panel) show every stack");
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
  meta.weights_sha256 = model.weights_sha256;
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

LogitsReturned prediction_logits(const ModelConfig& config) {
  return config.predicts_next_token() ? LogitsReturned::Last : LogitsReturned::All;
}

std::vector<PositionPredictions> predictions(const ModelConfig& config, const at::Tensor& logits,
                                             const std::vector<std::string>& labels, int top_k,
                                             int max_positions) {
  const int64_t T = static_cast<int64_t>(labels.size());
  if (!logits.defined() || logits.dim() != 3 || logits.size(2) != config.vocab_size)
    throw Error("predictions: logits must be [1, pos, vocab=" + std::to_string(config.vocab_size) + "]");
  std::vector<int64_t> positions;
  if (config.predicts_next_token()) {
    positions.push_back(T - 1);
  } else {
    if (logits.size(1) != T) throw Error("predictions: a masked LM needs the logits of every position");
    for (int64_t i = 0; i < T; ++i)
      if (labels[static_cast<size_t>(i)] == "[MASK]" || labels[static_cast<size_t>(i)] == "<mask>") positions.push_back(i);
    if (positions.empty())
      for (int64_t i = 0; i < T; ++i) positions.push_back(i);
  }
  if (static_cast<int64_t>(positions.size()) > max_positions) positions.resize(static_cast<size_t>(max_positions));
  std::vector<PositionPredictions> out;
  for (const int64_t pos : positions) {
    const auto row = logits[0][logits.size(1) == 1 ? 0 : pos].to(torch::kCPU, torch::kFloat32);
    const auto top = torch::softmax(row, -1).topk(std::min<int64_t>(top_k, row.size(0)));
    PositionPredictions p{pos, {}};
    for (int64_t k = 0; k < std::get<0>(top).size(0); ++k)
      p.top.emplace_back(std::get<1>(top)[k].item<int64_t>(), std::get<0>(top)[k].item<float>());
    out.push_back(std::move(p));
  }
  return out;
}

std::string describe_predictions(const LoadedModel& model, const std::vector<PositionPredictions>& p) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(3);
  const bool next = model.model->config().predicts_next_token();
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i].top.empty()) continue;
    const auto [id, prob] = p[i].top.front();
    out << (i ? ", " : "") << (next ? "next token: " : "position " + std::to_string(p[i].position) + " → ")
        << "\"" << display_label(token_labels(model, {id})[0]) << "\" (p=" << prob << ")";
  }
  return out.str();
}

}  // namespace poslens
