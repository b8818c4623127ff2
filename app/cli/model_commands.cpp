// poslens-cli info, run, generate and convert: what a checkpoint is, one forward pass with its
// captures streamed to HDF5, greedy decoding, and Llama-family conversion to an HF folder.
#include <torch/torch.h>

#include <chrono>
#include <iomanip>
#include <iostream>

#include "app/cli/command.h"
#include "core/base/error.h"
#include "core/formats/hdf5_export.h"
#include "core/models/hf_writer.h"
#include "core/runtime/hdf5_sink.h"
#include "core/runtime/resources.h"
#include "core/runtime/model_input.h"
#include "core/runtime/predictions.h"
#include "core/runtime/run.h"
#include "core/runtime/sinks.h"

namespace poslens::cli {
namespace {

/// Shows a token as a readable label: quotes, and visible newlines.
std::string quoted(const std::string& piece) {
  std::string out = "\"";
  for (char ch : piece) out += ch == '\n' ? std::string("\\n") : std::string(1, ch);
  return out + "\"";
}

struct InfoCommand {
  ModelOptions model;
  bool hooks = false, json = false;
};

void info(const InfoCommand& c) {
  const auto loaded = load_model(c.model);
  if (c.json) {
    std::cout << loaded.model->config().to_json() << "\n";
    return;
  }
  std::cout << describe(loaded);
  if (c.hooks) {
    std::cout << "hook points:\n";
    for (const auto& point : loaded.model->hook_points()) std::cout << "  " << point.name() << "\n";
  }
}

struct RunCommand {
  ModelOptions model;
  InputOptions input;
  std::vector<std::string> captures;  ///< names or globs; empty: every pattern + logits
  std::string heads;                  ///< "L.H,...": map hooks keep only these heads
  int64_t pool = 0;                   ///< > 0: map hooks max-pooled to at most pool × pool
  std::string out;
  int top_k = 5;  ///< next-token predictions printed for the last position
  bool warmup = false;  ///< one unrecorded forward before the timed one
  std::string decoder_text;  ///< encoder–decoder models: the decoder's input after its start token
};

/// The first tokens (a long input would fill the terminal) as id:"text".
void print_tokens(const LoadedModel& loaded, const std::vector<int64_t>& ids) {
  constexpr size_t kShown = 32;
  const auto labels = token_labels(loaded, ids);
  std::cout << "tokens (" << ids.size() << "):";
  for (size_t i = 0; i < std::min(kShown, ids.size()); ++i)
    std::cout << " " << ids[i] << ":" << quoted(labels[i]);
  if (ids.size() > kShown) std::cout << " … (" << ids.size() - kShown << " more)";
  std::cout << "\n";
}

void run(const RunCommand& c) {
  const auto loaded = load_model(c.model);
  const auto& cfg = loaded.model->config();
  const auto ids = input_ids(loaded, c.input);
  if (!c.decoder_text.empty() && !cfg.encoder_decoder())
    throw Error("--decoder-text is for encoder–decoder models (T5); " + cfg.architecture + " has one stack");
  // T5: the decoder reads [decoder_start_token_id] + the decoder text; maps are sized by the longer.
  const auto decoder = cfg.encoder_decoder() ? decoder_ids(loaded, c.decoder_text) : std::vector<int64_t>{};
  const int64_t T = std::max(static_cast<int64_t>(ids.size()), static_cast<int64_t>(decoder.size()));
  const auto points = loaded.model->hook_points();
  const CaptureSpec spec = c.captures.empty() ? CaptureSpec::default_spec(points) : CaptureSpec(c.captures);
  spec.check_matches_any(points);
  std::optional<HeadSelection> heads;
  if (!c.heads.empty()) heads = parse_head_selection(c.heads, cfg.n_layers, cfg.n_heads);
  const int64_t stride = c.pool > 0 && T > c.pool ? (T + c.pool - 1) / c.pool : 1;

  // What will be written, before anything is: refused when it cannot fit.
  int64_t bytes = 0, n_captures = 0;
  for (const auto& p : points) {
    if (!spec.wants(p)) continue;
    int64_t n_heads = cfg.n_heads;
    if (heads && is_map_hook(p.kind)) n_heads = static_cast<int64_t>(heads_of_layer(*heads, p.layer).size());
    if (n_heads == 0) continue;
    bytes += hook_bytes(cfg, p, 1, T, n_heads, stride);
    ++n_captures;
  }
  const int64_t memory = forward_working_bytes(cfg, 1, T, loaded.model->dtype());
  std::cout << "run: " << T << " tokens, " << n_captures << " captures"
            << (heads ? " (selected heads)" : "")
            << (stride > 1 ? ", maps max-pooled by " + std::to_string(stride) : "") << ": up to "
            << gigabytes(bytes) << " to " << c.out << ", about " << gigabytes(memory)
            << " of memory beside the weights\n";
  check_resources("run", c.out, bytes, memory);

  Hdf5Writer file(c.out, export_metadata(loaded));
  Hdf5CaptureSink stream(file, spec, heads, /*maps=*/c.pool == 0);
  PooledMapSink pooled(spec, std::max<int64_t>(c.pool, 1), heads);
  std::vector<HookSink*> sinks{&stream};
  if (c.pool > 0) sinks.push_back(&pooled);
  SinkFanout all(sinks);
  ForwardOptions options;
  options.logits = prediction_logits(cfg);
  if (!decoder.empty()) options.decoder_tokens = torch::tensor(decoder, torch::kLong).unsqueeze(0);
  const auto input = torch::tensor(ids, torch::kLong).unsqueeze(0);
  const auto device = loaded.model->device();
  if (c.warmup) {  // CUDA's context, cuBLAS handles and kernels are set up here, not timed
    c10::InferenceMode inference;
    SinkFanout nothing(std::vector<HookSink*>{});  // wants nothing
    loaded.model->forward(input, nothing, {}, options);
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  }
  const auto start = std::chrono::steady_clock::now();
  at::Tensor last;
  {
    c10::InferenceMode inference;
    last = loaded.model->forward(input, all, progress_printer("run").layers(), options);
    if (device.is_cuda()) torch::cuda::synchronize(device.index());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& [point, map] : pooled.maps()) {
    // An encoder–decoder model's maps have their own lengths (and strides): decoder queries.
    const bool decoder_queries = point.stack == HookStack::Decoder || point.stack == HookStack::Cross;
    std::vector<Hdf5Attribute> attributes{{"pooling", std::string("max")},
                                          {"pool_stride", pooled.stride_of(point)},
                                          {"source_length", static_cast<int64_t>(decoder_queries ? decoder.size() : ids.size())}};
    if (point.stack == HookStack::Cross) attributes.push_back({"source_key_length", static_cast<int64_t>(ids.size())});
    if (heads) attributes.push_back({"heads", heads_of_layer(*heads, point.layer)});
    file.add({"/captures/" + point.name(), map, {}, {"batch", "head", "q_block", "k_block"}, attributes});
  }
  file.tokens(torch::tensor(ids, torch::kLong).unsqueeze(0), token_labels(loaded, ids));
  if (!decoder.empty())
    file.group_attributes("/tokens", {{"decoder_ids", decoder}, {"decoder_text", token_labels(loaded, decoder)}});
  file.commit();

  print_tokens(loaded, ids);
  if (!decoder.empty()) {
    std::cout << "decoder ";
    print_tokens(loaded, decoder);
  }
  std::cout << "forward pass: " << std::fixed << std::setprecision(3) << seconds << " s on "
            << loaded.model->device() << " (" << dtype_name(loaded.model->dtype()) << ")\n";
  if (c.top_k > 0) {
    // A causal LM's next token; a masked LM's prediction at each [MASK] (or every position).
    for (const auto& p : predictions(cfg, last, token_labels(loaded, decoder.empty() ? ids : decoder), c.top_k)) {
      if (cfg.predicts_next_token())
        std::cout << "next token:";
      else
        std::cout << "position " << p.position << " ("
                  << quoted(token_labels(loaded, {ids[static_cast<size_t>(p.position)]})[0]) << "):";
      for (const auto& [id, prob] : p.top)
        std::cout << " " << quoted(token_labels(loaded, {id})[0]) << " " << std::setprecision(3) << prob;
      std::cout << "\n";
    }
  }
  std::cout << "wrote " << n_captures << " captures to " << c.out << "\n";
}

struct GenerateCommand {
  ModelOptions model;
  std::string prompt;
  int max_new_tokens = 200;
};

void generate(const GenerateCommand& c) {
  const auto loaded = load_model(c.model);
  const auto& cfg = loaded.model->config();
  if (!cfg.predicts_next_token())
    throw Error("generate needs a causal language model; " + cfg.architecture +
                " is a bidirectional masked LM (use run: it prints each [MASK]'s prediction)");
  if (!loaded.tokenizer) throw Error(loaded.tokenizer_note);
  // Encoder–decoder (T5): the prompt is the encoder's input and stays; the decoder grows from
  // its start token. Decoder-only: the prompt grows.
  const bool seq2seq = cfg.encoder_decoder();
  if (seq2seq && c.prompt.empty()) throw Error("generate with " + cfg.architecture + " needs --text (the encoder's input)");
  const auto prompt = c.prompt.empty() ? std::vector<int64_t>{loaded.tokenizer->bos_id()} : encode_text(loaded, c.prompt);
  std::vector<int64_t> ids = seq2seq ? decoder_ids(loaded, "") : prompt;
  const size_t start_len = ids.size();
  Captures none;
  CaptureSink nothing(CaptureSpec(), none);
  ForwardOptions last;
  last.logits = LogitsReturned::Last;
  for (int step = 0; step < c.max_new_tokens; ++step) {
    if (!seq2seq && cfg.n_ctx > 0 && static_cast<int64_t>(ids.size()) >= cfg.n_ctx) break;
    c10::InferenceMode inference;
    const auto current = torch::tensor(ids, torch::kLong).unsqueeze(0);
    if (seq2seq) last.decoder_tokens = current;
    const auto logits = loaded.model->forward(seq2seq ? torch::tensor(prompt, torch::kLong).unsqueeze(0) : current,
                                              nothing, {}, last);
    const int64_t next = logits[0][0].argmax().item<int64_t>();
    if (next == loaded.tokenizer->eos_id() || next == loaded.tokenizer->bos_id()) break;
    ids.push_back(next);
  }
  if (seq2seq) ids.erase(ids.begin());  // the start token is not part of the output
  std::cout << loaded.tokenizer->decode(ids) << "\n";
  std::cerr << "(" << ids.size() - (seq2seq ? 0 : start_len) << " new tokens, greedy)\n";
}

struct ConvertCommand {
  ModelOptions model;
  std::string out;
};

void convert(const ConvertCommand& c) {
  const auto loaded = load_model(c.model);
  write_hf_llama(c.out, loaded.model->config(), loaded.model->weights());
  std::cout << "wrote " << c.out << " (config.json, model.safetensors) as LlamaForCausalLM\n";
}

}  // namespace

Command info_command() {
  auto c = std::make_shared<InfoCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand("info", "Describe a checkpoint");
            add_model_options(cmd, c->model, /*with_device=*/false);
            cmd->add_flag("--hooks", c->hooks, "Also list every hook point name");
            cmd->add_flag("--json", c->json, "Print the model config as JSON");
            return cmd;
          },
          {}, [=] { info(*c); }};
}

Command run_command() {
  auto c = std::make_shared<RunCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand(
                "run", "Run one forward pass and stream the captures to HDF5 (any length: maps "
                       "are written block by block)");
            add_model_options(cmd, c->model);
            add_input_options(cmd, c->input);
            cmd->add_option("--decoder-text", c->decoder_text,
                            "Encoder–decoder models (T5): the decoder's input after decoder_start_token_id "
                            "(default: the start token alone); --text / --tokens are the encoder's");
            cmd->add_option("--capture", c->captures,
                            "Hook names or globs, comma-separated (default: "
                            "blocks.*.attn.hook_pattern,logits; T5: encoder.*, decoder.* and "
                            "decoder.*.cross_attn patterns)")
                ->delimiter(',');
            cmd->add_option("--heads", c->heads,
                            "Map hooks keep only these heads, LAYER.HEAD comma-separated (e.g. 5.3,0.1)");
            cmd->add_option("--pool", c->pool,
                            "Max-pool map hooks to at most N × N cells (attributes pooling, pool_stride)")
                ->check(CLI::PositiveNumber);
            cmd->add_option("--out", c->out, "Output HDF5 file")->required();
            cmd->add_option("--top-k", c->top_k, "Predictions to print (next token; a masked LM's at each [MASK])")->capture_default_str();
            cmd->add_flag("--warmup", c->warmup,
                          "Run the forward once, unrecorded, before the timed one (GPU timings without "
                          "the CUDA context and kernel set-up)");
            return cmd;
          },
          [=] { require_input(c->input); }, [=] { run(*c); }};
}

Command generate_command() {
  auto c = std::make_shared<GenerateCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand("generate", "Greedy decoding from a prompt (or from BOS)");
            add_model_options(cmd, c->model);
            cmd->add_option("--text", c->prompt, "Prompt (default: start from BOS)");
            cmd->add_option("--max-new-tokens", c->max_new_tokens)
                ->capture_default_str()
                ->check(CLI::Range(1, 100000));
            return cmd;
          },
          {}, [=] { generate(*c); }};
}

Command convert_command() {
  auto c = std::make_shared<ConvertCommand>();
  return {[=](CLI::App& app) {
            auto* cmd = app.add_subcommand("convert", "Write a Llama-family model as an HF folder");
            add_model_options(cmd, c->model, /*with_device=*/false);
            cmd->add_option("--out", c->out, "New folder to create")->required();
            return cmd;
          },
          {}, [=] { convert(*c); }};
}

}  // namespace poslens::cli
