#include "core/runtime/model_input.h"

#include <cstdio>
#include <string_view>

#include "core/base/error.h"

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

}  // namespace poslens
