// LibTorch first: Qt's `slots` macro breaks torch headers if Qt comes first.
#include "app/gui/worker_context.h"

#include "app/gui/inference_worker.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>

#include "analysis/checkpoint_series.h"
#include "analysis/heatmap_pooling.h"
#include "analysis/interventions.h"
#include "analysis/probe.h"
#include "core/base/compute_setup.h"
#include "core/base/error.h"
#include "core/formats/hdf5_export.h"
#include "core/runtime/device_memory.h"
#include "core/runtime/hdf5_sink.h"
#include "core/runtime/model_input.h"
#include "core/runtime/predictions.h"
#include "core/runtime/run.h"
#include "core/runtime/sinks.h"
#include "core/runtime/transformer.h"

namespace poslens::gui {

std::vector<int64_t> input_ids(const LoadedModel& loaded, const RunInput& input) {
  return input.as_token_ids
             ? parse_token_ids(input.text.toStdString(), loaded.model->config().vocab_size)
             : encode_text(loaded, input.text.toStdString());
}

namespace {

constexpr int kThumbnailCells = 48;

/// One forward pass over `ids` keeping the attention inputs (and whatever `extra` wants); the
/// logits prediction_logits() names (a causal LM's last position, a masked LM's every position)
/// into `last_logits` when given.
AttentionState attention_state(const LoadedModel& loaded, const RunInput& input,
                               std::vector<int64_t> ids, const ProgressFn& progress,
                               HookSink* extra = nullptr, at::Tensor* last_logits = nullptr) {
  AttentionState s;
  s.input = input;
  s.ids = std::move(ids);
  s.labels = token_labels(loaded, s.ids);
  s.pieces = token_pieces(loaded, s.ids);
  AttentionInputsSink keep(s.layers, loaded.model->config().n_layers,
                           loaded.model->position_encoding().scores_read_values());
  std::vector<HookSink*> sinks{&keep};
  if (extra) sinks.push_back(extra);
  SinkFanout all(sinks);
  c10::InferenceMode inference;
  ForwardOptions options;
  options.logits = last_logits ? prediction_logits(loaded.model->config()) : LogitsReturned::None;
  if (loaded.model->config().encoder_decoder()) {
    s.decoder_ids = decoder_ids(loaded, input.decoder_text.toStdString());
    s.decoder_labels = token_labels(loaded, s.decoder_ids);
    options.decoder_tokens = torch::tensor(s.decoder_ids, torch::kLong).unsqueeze(0);
  }
  const auto logits = loaded.model->forward(torch::tensor(s.ids, torch::kLong).unsqueeze(0), all,
                                            progress, options);
  if (last_logits) *last_logits = logits;
  return s;
}

}  // namespace

struct InferenceWorker::State {
  std::unique_ptr<LoadedModel> model;
  /// The checkpoint's own model while `model` runs an intervened one (null otherwise).
  std::unique_ptr<Transformer> stored;
  // The last run: what its attention is computed from (a head's map is recomputed from it)
  // and the view its thumbnails show.
  std::unique_ptr<AttentionState> run;
  QString run_view;
  // The attention state of the last other input an analysis asked for.
  std::unique_ptr<AttentionState> other;
  std::map<std::string, std::any> cache;  // per open model

  void forget_model() {
    run.reset();
    other.reset();
    cache.clear();
  }
};

namespace {

/// The WorkerContext of one job.
class Context : public WorkerContext {
 public:
  Context(InferenceWorker::State& state, Progress progress, const JobTicket& job)
      : state_(state), progress_(std::move(progress)), job_(job) {}
  const LoadedModel& model() const override {
    if (!state_.model) throw Error("open a checkpoint first");
    return *state_.model;
  }
  const AttentionState& attention(const RunInput& input, const Progress& progress) override {
    require_one_stack(model(), "This analysis");
    if (state_.run && state_.run->input == input) return *state_.run;
    if (state_.other && state_.other->input == input) return *state_.other;
    state_.other.reset();  // free the previous input's state first
    state_.other = std::make_unique<AttentionState>(
        attention_state(model(), input, input_ids(model(), input), progress.layers()));
    return *state_.other;
  }
  const Progress& progress() const override { return progress_; }
  bool cancelled() const override { return job_.cancelled(); }
  std::any& cached(const std::string& key, const std::function<std::any()>& make) override {
    auto it = state_.cache.find(key);
    if (it == state_.cache.end()) it = state_.cache.emplace(key, make()).first;
    return it->second;
  }

 private:
  InferenceWorker::State& state_;
  Progress progress_;
  const JobTicket& job_;
};

/// Runs `body`, turning every exception into one failed() (or cancelled()) signal with a
/// readable message: nothing thrown on the worker thread may reach Qt's event loop.
template <typename Body>
void guarded(InferenceWorker* worker, const JobTicket& job, const QString& title, Body&& body) {
  // What a job freed goes back to the system (the allocator keeps it otherwise: compute_setup.h).
  struct Release {
    ~Release() { release_free_memory(); }
  } release;
  try {
    if (job.cancelled()) throw Cancelled();  // cancelled while it waited in the queue
    body();
  } catch (const Cancelled&) {
    emit worker->cancelled(job.generation);
  } catch (const Error& e) {
    emit worker->failed(job.generation, title, QString::fromStdString(e.what()));
  } catch (const c10::Error& e) {
    emit worker->failed(job.generation, title, QString::fromStdString(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    emit worker->failed(job.generation, title, QString::fromStdString(e.what()));
  }
}

/// Progress of `job` as thousandths on the worker's progress() signal.
Progress job_progress(InferenceWorker* worker, const JobTicket& job) {
  return Progress([worker, &job](double done, const std::string&) {
    emit worker->progress(job.generation, static_cast<int>(done * 1000), 1000);
    return !job.cancelled();
  });
}

/// The run folder holding `path` when `path` is one of its step-NNNNNN checkpoints.
QString series_folder_of(const QString& path) {
  namespace fs = std::filesystem;
  fs::path p(path.toStdString());
  if (p.filename().empty()) p = p.parent_path();
  if (p.filename().string().rfind("step-", 0) != 0) return {};
  try {
    if (series_checkpoints(p.parent_path().string()).size() >= 2)
      return QString::fromStdString(p.parent_path().string());
  } catch (const Error&) {
  }
  return {};
}

/// What the views need to know of `loaded`, opened from `path`.
ModelSummary model_summary(const LoadedModel& loaded, const QString& path) {
  const auto& cfg = loaded.model->config();
  ModelSummary summary;
  summary.path = path;
  summary.description = QString::fromStdString(describe(loaded));
  const auto rows = attention_rows(cfg);
  summary.n_layers = static_cast<int>(rows.size());
  for (const auto& row : rows) summary.layer_labels << QString::fromStdString(row.label);
  summary.encoder_decoder = cfg.encoder_decoder();
  summary.n_heads = static_cast<int>(cfg.n_heads);
  summary.has_tokenizer = loaded.tokenizer != nullptr;
  summary.tokenizer_note = QString::fromStdString(loaded.tokenizer_note);
  summary.rotary = loaded.model->position_encoding().rotary_info().has_value();
  const auto has_rope = [](const std::vector<PositionComponentSpec>& components) {
    return std::any_of(components.begin(), components.end(), [](const auto& c) { return c.type == "rope"; });
  };
  summary.rope = has_rope(cfg.pe_components) ||
                 std::any_of(cfg.layer_schemes.begin(), cfg.layer_schemes.end(),
                             [&](const LayerScheme& s) { return has_rope(s.pe_components); });
  summary.learned_sinks = cfg.attention_sinks;
  summary.interventions = QString::fromStdString(cfg.interventions);
  summary.train_length = static_cast<int>(training_length(cfg));
  summary.series_folder = series_folder_of(path);
  summary.views << "hook_pattern" << "hook_attn_scores";
  for (const auto& point : loaded.model->hook_points())
    if (point.layer == 0 && (point.kind == HookKind::PosScores || point.kind == HookKind::CopeGates ||
                             point.kind == HookKind::CopePos))
      summary.views << QString::fromStdString(point.name()).section('.', -1);
  return summary;
}

/// A per-head view: which hook it shows, how it is labelled and coloured.
struct HeadView {
  HookKind hook;
  const char* title;
  const char* value_name;
  HeatmapKind kind;
};

HeadView head_view(const QString& suffix) {
  if (suffix == "hook_attn_scores")
    return {HookKind::AttnScores, "attention logits", "logit", HeatmapKind::Logit};
  if (suffix == "hook_pos_scores")
    return {HookKind::PosScores, "position scores", "logit", HeatmapKind::Signed};
  if (suffix == "hook_cope_gates")
    return {HookKind::CopeGates, "CoPE gates", "gate", HeatmapKind::Gate};
  if (suffix == "hook_cope_pos")
    return {HookKind::CopePos, "CoPE positions", "position", HeatmapKind::Position};
  return {HookKind::Pattern, "attention pattern", "weight", HeatmapKind::Probability};
}

const at::Tensor& pick(const AttentionBlock& b, HookKind kind) {
  switch (kind) {
    case HookKind::AttnScores: return b.scores;
    case HookKind::PosScores: return b.position;
    case HookKind::CopeGates: return b.cope_gates;
    case HookKind::CopePos: return b.cope_positions;
    default: return b.pattern;
  }
}

/// An empty max-pool canvas for `rows` × `cols` source entries at most `cells` per side: −inf
/// cells (nothing seen yet) and the stride.
std::pair<at::Tensor, int64_t> pool_canvas(int64_t rows, int64_t cols, int cells) {
  const int64_t stride = pool_stride(std::max(rows, cols), std::max(cells, 1));
  return {pooled_canvas({}, rows, cols, stride), stride};
}

/// A filled canvas as the heatmap of `view` (cells nothing reached: NaN).
HeatmapData canvas_heatmap(const at::Tensor& pooled, int64_t rows, int64_t cols, const HeadView& view) {
  auto map = heatmap_from_pooled(finished_pooled(pooled), rows, cols);
  map.value_name = view.value_name;
  map.kind = view.kind;
  return map;
}

/// Head (`r.layer`, `r.head`)'s map of `view` over rows [q0, q1) × keys [k0, k1), recomputed
/// from `state` block by block and max-pooled to at most `r.cells` per side.
HeatmapData head_map(const LoadedModel& loaded, const AttentionState& state, const HeadRequest& r,
                     int64_t q0, int64_t q1, int64_t k0, int64_t k1, const JobTicket& job) {
  const auto& cfg = loaded.model->config();
  if (r.layer < 0 || r.layer >= cfg.n_layers || r.head < 0 || r.head >= cfg.n_heads)
    throw Error("no layer " + std::to_string(r.layer) + ", head " + std::to_string(r.head));
  const auto view = head_view(r.view);
  const LayerAttention attention(loaded.model->layer_config(r.layer), loaded.model->position_encoding(r.layer),
                                 state.layers[static_cast<size_t>(r.layer)], r.head, 1);
  BlockRequest what;
  what.scores = view.hook == HookKind::AttnScores;
  what.pattern = view.hook == HookKind::Pattern;
  what.position = view.hook == HookKind::PosScores;
  what.cope = view.hook == HookKind::CopeGates || view.hook == HookKind::CopePos;
  auto [pooled, stride] = pool_canvas(q1 - q0, k1 - k0, r.cells);
  const int64_t rows = attention.block_rows({});
  for (int64_t a = q0; a < q1; a += rows) {
    if (job.cancelled()) throw Cancelled();  // the user has moved on to another head
    const int64_t e = std::min(q1, a + rows);
    const auto [first, last] = attention.key_range(a, e);
    if (std::max(k0, first) >= std::min(k1, last)) continue;  // these rows see no key of the region
    // A region narrower than the rows' keys: only its keys, the pattern from the rows'
    // log-sum-exp (exact; no softmax over whole rows).
    const bool some_keys = k0 > first || k1 < last;
    const auto b = some_keys ? attention.region(a, e, k0, k1, what, what.pattern ? attention.row_lse(a, e) : at::Tensor())
                             : attention.rows(a, e, what);
    const auto& values = pick(b, view.hook);
    if (!values.defined())
      throw Error("this model has no " + std::string(view.title) + " (" + r.view.toStdString() + ")");
    const int64_t c0 = std::max(k0, b.k_begin), c1 = std::min(k1, b.k_end);
    max_pool_block(pooled, values[0][0].narrow(1, c0 - b.k_begin, c1 - c0),
                   b.allowed.narrow(1, c0 - b.k_begin, c1 - c0), a - q0, c0 - k0, stride);
  }
  auto map = canvas_heatmap(pooled, q1 - q0, k1 - k0, view);
  label_head_map(map, state, r.layer, r.head, q0, q1, k0, k1, view.title);
  return map;
}

/// The grid row of hook `point` (attention_rows order).
int row_of(const std::vector<AttentionRow>& rows, const HookPoint& point) {
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].stack == point.stack && rows[i].layer == point.layer) return static_cast<int>(i);
  throw Error("internal: no grid row for " + point.name());
}

/// Query and key lengths of a map of `stack`: the encoder's own, the decoder's own, or decoder
/// queries over encoder keys (cross-attention).
std::pair<int64_t, int64_t> map_lengths(const AttentionState& s, HookStack stack) {
  const auto S = static_cast<int64_t>(s.ids.size()), T = static_cast<int64_t>(s.decoder_ids.size());
  switch (stack) {
    case HookStack::Decoder: return {T, T};
    case HookStack::Cross: return {T, S};
    default: return {S, S};
  }
}

/// An encoder–decoder model's head map (its stacks keep no attention inputs to recompute
/// from): one forward pass keeping that one head of that one hook, rows [q0, q1) × keys
/// [k0, k1) max-pooled to at most `r.cells` per side, labelled with each side's tokens.
HeatmapData stack_head_map(const LoadedModel& loaded, const AttentionState& s, const AttentionRow& row,
                           const HeadRequest& r, int64_t q0, int64_t q1, int64_t k0, int64_t k1) {
  const auto view = head_view(r.view);
  const HookPoint point{view.hook, row.layer, row.stack};
  if (r.head < 0 || r.head >= loaded.model->config().n_heads) throw Error("no head " + std::to_string(r.head));
  Captures captures;
  CaptureSink sink(CaptureSpec({point.name()}), captures, HeadSelection{{row.layer, r.head}});
  {
    c10::InferenceMode inference;
    ForwardOptions options;
    options.logits = LogitsReturned::None;
    options.decoder_tokens = torch::tensor(s.decoder_ids, torch::kLong).unsqueeze(0);
    loaded.model->forward(torch::tensor(s.ids, torch::kLong).unsqueeze(0), sink, {}, options);
  }
  const auto whole = captures.find(point);
  if (!whole.defined())
    throw Error("this model has no " + std::string(view.title) + " in " + row.label + " (" + r.view.toStdString() + ")");
  const auto region = whole[0][0].narrow(0, q0, q1 - q0).narrow(1, k0, k1 - k0);
  auto [pooled, stride] = pool_canvas(q1 - q0, k1 - k0, r.cells);
  // Hidden entries hold the hook's masked value (0 or −inf), which the max leaves alone.
  max_pool_block(pooled, region, torch::ones(region.sizes(), torch::kBool), 0, 0, stride);
  auto map = canvas_heatmap(pooled, q1 - q0, k1 - k0, view);
  label_map(map, row.stack == HookStack::Encoder ? s.labels : s.decoder_labels,
            row.stack == HookStack::Decoder ? s.decoder_labels : s.labels, row.label, r.head, q0, q1, k0, k1,
            view.title);
  map.layer = r.layer;
  return map;
}

}  // namespace

InferenceWorker::InferenceWorker(QObject* parent) : QObject(parent), state_(std::make_unique<State>()) {
  qRegisterMetaType<ModelSummary>();
  qRegisterMetaType<RunSummary>();
  qRegisterMetaType<HeatmapData>();
  qRegisterMetaType<std::any>();
}

InferenceWorker::~InferenceWorker() = default;

void InferenceWorker::open(const JobTicket& job, const QString& path, const QString& device,
                           const QString& dtype) {
  guarded(this, job, tr("Cannot open checkpoint"), [&] {
    LoadOptions options;
    options.device = device.toStdString();
    options.dtype = dtype.toStdString();
    // Progress per stored tensor; Cancel stops the load between two tensors.
    int last_percent = -1;
    options.progress = [&](int64_t done, int64_t total) {
      const int percent = total > 0 ? static_cast<int>(100 * done / total) : 0;
      if (percent != last_percent) {  // at most 101 signals, whatever the tensor count
        last_percent = percent;
        emit progress(job.generation, percent, 100);
      }
      return !job.cancelled();
    };
    auto loaded = std::make_unique<LoadedModel>(load_checkpoint(path.toStdString(), options));
    if (job.cancelled()) throw Cancelled();  // cancelled after the last tensor: discard it
    const auto summary = model_summary(*loaded, path);
    state_->forget_model();  // free what belongs to the old model before it goes
    state_->stored.reset();
    state_->model = std::move(loaded);
    emit opened(job.generation, summary);
  });
}

void InferenceWorker::intervene(const JobTicket& job, const QStringList& specs) {
  guarded(this, job, tr("Cannot apply the interventions"), [&] {
    if (!state_->model) throw Error("open a checkpoint first");
    std::vector<std::string> items;
    for (const auto& spec : specs) items.push_back(spec.trimmed().toStdString());
    const auto interventions = parse_interventions(items);
    auto& loaded = *state_->model;
    const Transformer& stored = state_->stored ? *state_->stored : *loaded.model;
    // Made (and checked) before anything changes: a spec that does not apply changes nothing.
    auto next = interventions.empty() ? nullptr : intervened_model(stored, interventions);
    state_->forget_model();  // the runs and cached results belong to the model that ran them
    if (!next) {
      if (state_->stored) loaded.model = std::move(state_->stored);
    } else {
      if (!state_->stored) state_->stored = std::move(loaded.model);
      loaded.model = std::move(next);
    }
    emit opened(job.generation, model_summary(loaded, QString::fromStdString(loaded.path)));
  });
}

void InferenceWorker::run(const JobTicket& job, const RunInput& input, const QString& view) {
  guarded(this, job, tr("Run failed"), [&] {
    if (!state_->model) throw Error("open a checkpoint first");
    const auto& loaded = *state_->model;
    const auto ids = input_ids(loaded, input);
    state_->run.reset();  // its attention inputs are stale now; free them before the new run
    const auto& cfg = loaded.model->config();
    const auto rows = attention_rows(cfg);
    const std::string hook = view.toStdString();
    PooledMapSink thumbnails(cfg.encoder_decoder() ? CaptureSpec({"encoder.*.attn." + hook, "decoder.*.attn." + hook,
                                                                  "decoder.*.cross_attn." + hook})
                                                   : CaptureSpec({"blocks.*.attn." + hook}),
                             kThumbnailCells);
    const auto device = loaded.model->device();
    reset_peak_device_memory(device);
    const auto start = std::chrono::steady_clock::now();
    at::Tensor last;
    auto state = std::make_unique<AttentionState>(attention_state(
        loaded, input, ids,
        [this, &job](int done, int total) {
          emit progress(job.generation, done, total);
          return !job.cancelled();
        },
        &thumbnails, &last));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    RunSummary summary;
    summary.view = view;
    summary.n_layers = static_cast<int>(rows.size());
    for (const auto& row : rows) summary.layer_labels << QString::fromStdString(row.label);
    summary.n_heads = static_cast<int>(cfg.n_heads);
    for (const auto& label : state->labels) summary.tokens << QString::fromStdString(display_label(label));
    // One tile per row and head, in grid order; a row without this view (T5's cross-attention
    // has no position scores) stays blank.
    summary.thumbnails.resize(rows.size() * static_cast<size_t>(cfg.n_heads));
    for (const auto& [point, map] : thumbnails.maps()) {
      const auto row = row_of(rows, point);
      const auto [Tq, Tk] = map_lengths(*state, point.stack);
      for (int64_t h = 0; h < map.size(1); ++h) {
        auto d = heatmap_from_pooled(map[0][h], Tq, Tk);
        d.layer = row;
        d.head = static_cast<int>(h);
        d.kind = head_view(view).kind;
        summary.thumbnails[static_cast<size_t>(row * cfg.n_heads + h)] = std::move(d);
      }
    }
    // A causal LM's next token; a masked LM's prediction at each [MASK] (every position without one).
    // On CUDA the peak device memory of the run too (the caching allocator's count).
    const auto memory = device_memory(device);
    const QString peak = memory ? tr(", peak device memory %1").arg(QString::fromStdString(gib_text(memory->peak_bytes)))
                                : QString();
    summary.message = tr("%1 tokens, forward pass %2 s%3; %4")
                          .arg(ids.size())
                          .arg(seconds, 0, 'f', 3)
                          .arg(peak)
                          .arg(QString::fromStdString(describe_predictions(
                              loaded, predictions(cfg, last, cfg.encoder_decoder() ? state->decoder_labels : state->labels,
                                                  1, cfg.predicts_next_token() ? 1 : 4))));
    if (!cfg.interventions.empty())
      summary.message += tr(" · with interventions: %1").arg(QString::fromStdString(cfg.interventions));
    state_->run = std::move(state);
    state_->run_view = view;
    if (job.cancelled()) throw Cancelled();
    emit runFinished(job.generation, summary);
  });
}

void InferenceWorker::head(const JobTicket& job, const HeadRequest& request) {
  guarded(this, job, tr("Cannot show head"), [&] {
    if (!state_->run) throw Error("run the model first");
    const auto& s = *state_->run;
    const auto& loaded = *state_->model;
    const auto rows = attention_rows(loaded.model->config());
    if (request.layer < 0 || request.layer >= static_cast<int>(rows.size()))
      throw Error("no layer row " + std::to_string(request.layer));
    const auto stack = rows[static_cast<size_t>(request.layer)].stack;
    const auto [Tq, Tk] = map_lengths(s, stack);
    const int64_t q0 = request.region ? std::clamp<int64_t>(request.q0, 0, Tq - 1) : 0;
    const int64_t q1 = request.region ? std::clamp<int64_t>(request.q1, q0 + 1, Tq) : Tq;
    const int64_t k0 = request.region ? std::clamp<int64_t>(request.k0, 0, Tk - 1) : 0;
    const int64_t k1 = request.region ? std::clamp<int64_t>(request.k1, k0 + 1, Tk) : Tk;
    auto map = loaded.model->config().encoder_decoder()
                   ? stack_head_map(loaded, s, rows[static_cast<size_t>(request.layer)], request, q0, q1, k0, k1)
                   : head_map(loaded, s, request, q0, q1, k0, k1, job);
    if (job.cancelled()) throw Cancelled();  // the user has moved on to another head
    emit headReady(job.generation, map);
  });
}

void InferenceWorker::exportCaptures(const JobTicket& job, const QString& path,
                                     const RunInput& input, const QString& captures) {
  guarded(this, job, tr("Export failed"), [&] {
    if (!state_->model) throw Error("open a checkpoint first");
    std::vector<std::string> patterns;
    for (const auto& p : captures.split(',', Qt::SkipEmptyParts))
      patterns.push_back(p.trimmed().toStdString());
    if (patterns.empty()) throw Error("choose which hooks to capture for export");
    const auto& loaded = *state_->model;
    const CaptureSpec spec(patterns);
    spec.check_matches_any(loaded.model->hook_points());
    const auto ids = input_ids(loaded, input);
    // A fresh run streaming the chosen hooks to the file: nothing kept in memory.
    Hdf5Writer file(path.toStdString(), export_metadata(loaded));
    Hdf5CaptureSink sink(file, spec);
    {
      c10::InferenceMode inference;
      ForwardOptions options;
      options.logits = LogitsReturned::None;
      if (loaded.model->config().encoder_decoder())
        options.decoder_tokens =
            torch::tensor(decoder_ids(loaded, input.decoder_text.toStdString()), torch::kLong).unsqueeze(0);
      loaded.model->forward(torch::tensor(ids, torch::kLong).unsqueeze(0), sink,
                            [this, &job](int done, int total) {
                              emit progress(job.generation, done, total);
                              return !job.cancelled();
                            },
                            options);
    }
    file.tokens(torch::tensor(ids, torch::kLong).unsqueeze(0), token_labels(loaded, ids));
    file.commit();
    emit exported(job.generation, path);
  });
}

void InferenceWorker::execute(const JobTicket& job, const Work& work) {
  guarded(this, job, tr("Analysis failed"), [&] {
    Context context(*state_, job_progress(this, job), job);
    auto value = work(context);
    if (job.cancelled()) throw Cancelled();
    emit result(job.generation, value);
  });
}

}  // namespace poslens::gui
