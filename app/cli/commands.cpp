#include "app/cli/commands.h"

#include <torch/torch.h>

#include <chrono>
#include <iomanip>
#include <iostream>

#include "core/runtime/checkpoint.h"
#include "core/base/error.h"
#include "core/models/hf_writer.h"
#include "core/runtime/run.h"

namespace poslens::cli {

LoadOptions load_options(const CommonOptions& common) {
  LoadOptions options;
  options.device = common.device;
  options.dtype = common.dtype;
  options.tokenizer = common.tokenizer;
  return options;
}

namespace {

LoadedModel load(const CommonOptions& common) {
  return load_checkpoint(common.checkpoint, load_options(common));
}

/// Shows a token as a readable label: quotes, and visible newlines.
std::string quoted(const std::string& piece) {
  std::string out = "\"";
  for (char ch : piece) out += ch == '\n' ? std::string("\\n") : std::string(1, ch);
  return out + "\"";
}

}  // namespace

void info(const CommonOptions& common, bool list_hooks, bool json) {
  const auto loaded = load(common);
  if (json) {
    std::cout << loaded.model->config().to_json() << "\n";
    return;
  }
  std::cout << describe(loaded);
  if (list_hooks) {
    std::cout << "hook points:\n";
    for (const auto& point : loaded.model->hook_points()) std::cout << "  " << point.name() << "\n";
  }
}

void run(const CommonOptions& common, const RunOptions& options) {
  const auto loaded = load(common);
  const auto ids = options.from_tokens
                       ? parse_token_ids(options.tokens, loaded.model->config().vocab_size)
                       : encode_text(loaded, options.text);
  const CaptureSpec spec =
      options.captures.empty() ? CaptureSpec::default_spec() : CaptureSpec(options.captures);

  const auto start = std::chrono::steady_clock::now();
  const auto result = run_model(loaded, ids, spec);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  export_run(options.out, loaded, result);

  std::cout << "tokens (" << ids.size() << "):";
  for (size_t i = 0; i < ids.size(); ++i) std::cout << " " << ids[i] << ":" << quoted(result.labels[i]);
  std::cout << "\nforward pass: " << std::fixed << std::setprecision(3) << seconds << " s on "
            << loaded.model->device() << " (" << dtype_name(loaded.model->dtype()) << ")\n";
  if (options.top_k > 0) {
    const auto last = result.logits[0][static_cast<int64_t>(ids.size()) - 1].to(torch::kCPU);
    const auto top = torch::softmax(last, -1).topk(std::min<int64_t>(options.top_k, last.size(0)));
    std::cout << "next token:";
    for (int64_t i = 0; i < std::get<0>(top).size(0); ++i) {
      const int64_t id = std::get<1>(top)[i].item<int64_t>();
      std::cout << " " << quoted(token_labels(loaded, {id})[0]) << " "
                << std::setprecision(3) << std::get<0>(top)[i].item<float>();
    }
    std::cout << "\n";
  }
  std::cout << "wrote " << result.captures.tensors.size() << " captures to " << options.out << "\n";
}

void generate(const CommonOptions& common, const std::string& prompt, int max_new_tokens) {
  const auto loaded = load(common);
  if (!loaded.tokenizer) throw Error(loaded.tokenizer_note);
  const auto& c = loaded.model->config();
  std::vector<int64_t> ids = prompt.empty() ? std::vector<int64_t>{loaded.tokenizer->bos_id()}
                                            : encode_text(loaded, prompt);
  const size_t prompt_len = ids.size();
  for (int step = 0; step < max_new_tokens; ++step) {
    if (c.n_ctx > 0 && static_cast<int64_t>(ids.size()) >= c.n_ctx) break;
    c10::InferenceMode inference;
    const auto logits = loaded.model->forward(torch::tensor(ids, torch::kLong).unsqueeze(0));
    const int64_t next = logits[0][static_cast<int64_t>(ids.size()) - 1].argmax().item<int64_t>();
    if (next == loaded.tokenizer->eos_id() || next == loaded.tokenizer->bos_id()) break;
    ids.push_back(next);
  }
  std::cout << loaded.tokenizer->decode(ids) << "\n";
  std::cerr << "(" << ids.size() - prompt_len << " new tokens, greedy)\n";
}

void convert(const CommonOptions& common, const std::string& out_dir) {
  const auto loaded = load(common);
  write_hf_llama(out_dir, loaded.model->config(), loaded.model->weights());
  std::cout << "wrote " << out_dir << " (config.json, model.safetensors) as LlamaForCausalLM\n";
}

}  // namespace poslens::cli
