// LibTorch first: Qt's `slots` macro breaks torch headers if Qt comes first.
#include <torch/torch.h>

#include "app/gui/inference_worker.h"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "analysis/frequency_curves.h"
#include "analysis/head_metrics.h"
#include "analysis/heatmap_pooling.h"
#include "analysis/position_map.h"
#include "analysis/checkpoint_series.h"
#include "analysis/probe_compare.h"
#include "analysis/rope_probe.h"
#include "analysis/text_decomposition.h"
#include "core/runtime/checkpoint.h"
#include "core/base/compute_setup.h"
#include "core/base/error.h"
#include "core/runtime/run.h"
#include "core/runtime/transformer.h"

namespace poslens::gui {

struct InferenceWorker::State {
  std::unique_ptr<LoadedModel> model;
  // Only the captures of the shown view (ARCHITECTURE.md: capture what the views show), so a
  // 32-layer x 2048-token model keeps one [heads, pos, pos] tensor per layer, not every hook.
  std::unique_ptr<RunResult> last_run;
  QString last_view;
  // The position maps of every head for one input (position jobs reuse them per head).
  std::unique_ptr<PositionMapResult> positions;
  RunInput positions_input;
};

namespace {

constexpr int kThumbnailCells = 48;

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

/// A per-head view: which capture it shows, how it is labelled and coloured.
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

/// One head's [q, k] map as the views draw it: cells the head cannot see set to -inf (drawn as
/// masked), max-pooled to `max_cells` per axis, token labels on both axes, a title.
/// The tokens on a map's axes: ids, labels (token_labels) and raw pieces (token_pieces).
struct AxisTokens {
  const std::vector<int64_t>& ids;
  const std::vector<std::string>& labels;
  const std::vector<std::string>& pieces;
};

HeatmapData head_heatmap(const at::Tensor& cells, const at::Tensor& hidden, const AxisTokens& tokens,
                         int layer, int head, int max_cells, HeatmapKind kind,
                         const std::string& value_name, const std::string& what) {
  auto map = pool_heatmap(cells.to(torch::kCPU).masked_fill(hidden, -INFINITY), max_cells,
                          max_cells, Pooling::Max);
  for (const auto& label : tokens.labels) map.row_labels.push_back(display_label(label));
  map.col_labels = map.row_labels;
  map.token_ids = tokens.ids;
  map.token_pieces = tokens.pieces;
  map.layer = layer;
  map.head = head;
  map.value_name = value_name;
  map.kind = kind;
  map.title = "layer " + std::to_string(layer) + ", head " + std::to_string(head) + " — " + what;
  return map;
}

HeatmapData head_map(const RunResult& run, const ModelConfig& config, int layer, int head,
                     int max_cells, const QString& view_name) {
  const auto view = head_view(view_name);
  const auto captured = run.captures.find({view.hook, layer});
  if (!captured.defined())
    throw Error("the last run has no " + std::string(view.title) + " for layer " +
                std::to_string(layer));
  if (head < 0 || head >= captured.size(1)) throw Error("no head " + std::to_string(head));
  const auto hidden = allowed_keys(config, captured.size(2), torch::kCPU).logical_not();
  return head_heatmap(captured[0][head], hidden, {run.ids, run.labels, run.pieces}, layer, head,
                      max_cells, view.kind, view.value_name, view.title);
}

/// Per-head curves are sent when all of them hold at most this many values.
constexpr int64_t kMaxCurveValues = 20'000'000;

/// Every layer's probe curves: head means, and per head when small enough.
FrequencySummary probe_summary(const ProbeResult& probe, const std::string& note) {
  FrequencySummary s;
  s.n_layers = static_cast<int>(probe.scores.size(0));
  s.n_heads = static_cast<int>(probe.scores.size(1));
  const int64_t values = probe.scores.size(0) * (probe.scores.size(1) + 1) *
                         (probe.components.size(2) + 1) * probe.T;
  s.per_head = values <= kMaxCurveValues;
  s.curves.resize(static_cast<size_t>(s.n_layers * (s.n_heads + 1)));
  for (int l = 0; l < s.n_layers; ++l)
    for (int h = -1; h < (s.per_head ? s.n_heads : 0); ++h)
      s.curves[static_cast<size_t>(l * (s.n_heads + 1) + h + 1)] = probe_curves(probe, l, h, note);
  return s;
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

std::vector<int64_t> input_ids(const LoadedModel& loaded, const RunInput& input) {
  return input.as_token_ids
             ? parse_token_ids(input.text.toStdString(), loaded.model->config().vocab_size)
             : encode_text(loaded, input.text.toStdString());
}

}  // namespace

InferenceWorker::InferenceWorker(QObject* parent) : QObject(parent), state_(std::make_unique<State>()) {
  qRegisterMetaType<ModelSummary>();
  qRegisterMetaType<RunSummary>();
  qRegisterMetaType<HeatmapData>();
  qRegisterMetaType<FrequencySummary>();
  qRegisterMetaType<SeriesSummary>();
  qRegisterMetaType<PositionView>();
  qRegisterMetaType<HeadMetricsSummary>();
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
    ModelSummary summary;
    summary.path = path;
    summary.description = QString::fromStdString(describe(*loaded));
    summary.n_layers = static_cast<int>(loaded->model->config().n_layers);
    summary.n_heads = static_cast<int>(loaded->model->config().n_heads);
    summary.has_tokenizer = loaded->tokenizer != nullptr;
    summary.tokenizer_note = QString::fromStdString(loaded->tokenizer_note);
    summary.rotary = loaded->model->position_encoding().rotary_info().has_value();
    summary.train_length = static_cast<int>(training_length(loaded->model->config()));
    summary.series_folder = series_folder_of(path);
    summary.views << "hook_pattern" << "hook_attn_scores";
    for (const auto& point : loaded->model->hook_points())
      if (point.layer == 0 && (point.kind == HookKind::PosScores || point.kind == HookKind::CopeGates ||
                               point.kind == HookKind::CopePos))
        summary.views << QString::fromStdString(point.name()).section('.', -1);
    state_->last_run.reset();  // free the old captures before the old model goes
    state_->positions.reset();
    state_->model = std::move(loaded);
    emit opened(job.generation, summary);
  });
}

void InferenceWorker::run(const JobTicket& job, const RunInput& input, const QString& view) {
  guarded(this, job, tr("Run failed"), [&] {
    if (!state_->model) throw Error("open a checkpoint first");
    const auto& loaded = *state_->model;
    const auto ids = input_ids(loaded, input);
    const CaptureSpec spec({"blocks.*.attn." + view.toStdString()});
    state_->last_run.reset();  // its captures are stale now; free them before the new run
    const auto start = std::chrono::steady_clock::now();
    auto result = std::make_unique<RunResult>(run_model(
        loaded, ids, spec, [this, &job](int done, int total) {
          emit progress(job.generation, done, total);
          return !job.cancelled();
        }));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    RunSummary summary;
    summary.view = view;
    summary.n_layers = static_cast<int>(loaded.model->config().n_layers);
    summary.n_heads = static_cast<int>(loaded.model->config().n_heads);
    for (const auto& label : result->labels)
      summary.tokens << QString::fromStdString(display_label(label));
    for (int l = 0; l < summary.n_layers; ++l)
      for (int h = 0; h < summary.n_heads; ++h)
        summary.thumbnails.push_back(
            head_map(*result, loaded.model->config(), l, h, kThumbnailCells, view));
    const auto last = result->logits[0][static_cast<int64_t>(ids.size()) - 1];
    const int64_t next = last.argmax().item<int64_t>();
    summary.message = tr("%1 tokens, forward pass %2 s; next token: \"%3\" (p=%4)")
                          .arg(ids.size())
                          .arg(seconds, 0, 'f', 3)
                          .arg(QString::fromStdString(display_label(token_labels(loaded, {next})[0])))
                          .arg(torch::softmax(last, -1)[next].item<double>(), 0, 'f', 3);
    result->logits = at::Tensor();  // the summary has what the views need
    state_->last_run = std::move(result);
    state_->last_view = view;
    if (job.cancelled()) throw Cancelled();
    emit runFinished(job.generation, summary);
  });
}

void InferenceWorker::head(const JobTicket& job, int layer, int head, int max_cells,
                           const QString& view) {
  guarded(this, job, tr("Cannot show head"), [&] {
    if (!state_->last_run) throw Error("run the model first");
    auto map = head_map(*state_->last_run, state_->model->model->config(), layer, head,
                        max_cells, view);
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
    // A fresh run with the export's capture spec: runs keep only what the views show.
    const auto result = run_model(loaded, input_ids(loaded, input), CaptureSpec(patterns),
                                  [this, &job](int done, int total) {
                                    emit progress(job.generation, done, total);
                                    return !job.cancelled();
                                  });
    export_run(path.toStdString(), loaded, result);
    emit exported(job.generation, path);
  });
}

void InferenceWorker::probe(const JobTicket& job, const ProbeRequest& request) {
  guarded(this, job, tr("Probe failed"), [&] {
    if (!state_->model) throw Error("open a checkpoint first");
    const auto& loaded = *state_->model;
    ProbeOptions options;
    options.length = request.length;
    options.samples = request.samples;
    options.seed = request.seed;
    const bool overlay = request.extrapolate_to > request.length;
    const int64_t total = (overlay ? 2 : 1);
    int64_t pass = 0;
    const auto report = [&](int64_t done, int64_t n) {
      emit progress(job.generation, static_cast<int>(pass * n + done), static_cast<int>(total * n));
      return !job.cancelled();
    };
    const auto start = std::chrono::steady_clock::now();
    const auto result = run_probe(loaded, options, report);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string name = std::filesystem::path(loaded.path).filename().string();
    auto summary = probe_summary(result, name);
    if (overlay) {
      ++pass;
      options.length = request.extrapolate_to;
      options.tokens = result.tokens;
      summary.overlay = probe_summary(run_probe(loaded, options, report), name).curves;
    }
    summary.note = tr("probe T=%1%2, %3 tokens, %4 s")
                       .arg(request.length)
                       .arg(overlay ? tr(" and T=%1").arg(request.extrapolate_to) : QString())
                       .arg(result.n_samples)
                       .arg(seconds, 0, 'f', 2);
    if (job.cancelled()) throw Cancelled();
    emit probeReady(job.generation, summary);
  });
}

void InferenceWorker::decomposeInput(const JobTicket& job, const RunInput& input, int layer) {
  guarded(this, job, tr("Decomposition failed"), [&] {
    if (!state_->model) throw Error("open a checkpoint first");
    const auto& loaded = *state_->model;
    const auto ids = input_ids(loaded, input);
    const auto start = std::chrono::steady_clock::now();
    const auto d = decompose_text(loaded, ids, layer);
    FrequencySummary summary;
    summary.n_layers = static_cast<int>(loaded.model->config().n_layers);
    summary.n_heads = static_cast<int>(loaded.model->config().n_heads);
    summary.per_head = true;
    summary.from_input = true;
    summary.curves.resize(static_cast<size_t>(summary.n_layers * (summary.n_heads + 1)));
    for (int h = -1; h < summary.n_heads; ++h)
      summary.curves[static_cast<size_t>(layer * (summary.n_heads + 1) + h + 1)] =
          text_curves(d, h, std::filesystem::path(loaded.path).filename().string());
    for (auto& c : summary.curves)
      for (auto& label : c.key_labels) label = display_label(label);
    summary.note = tr("%1 tokens, decomposed in %2 s")
                       .arg(ids.size())
                       .arg(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                            0, 'f', 2);
    if (job.cancelled()) throw Cancelled();
    emit probeReady(job.generation, summary);
  });
}

void InferenceWorker::positions(const JobTicket& job, const RunInput& input, int layer, int head,
                                int max_cells) {
  guarded(this, job, tr("Position map failed"), [&] {
    if (!state_->model) throw Error("open a checkpoint first");
    const auto& loaded = *state_->model;
    if (!state_->positions || !(state_->positions_input == input)) {
      state_->positions.reset();
      auto result = position_map_whole(loaded, input_ids(loaded, input), {},
                                       Progress([&](double done, const std::string&) {
                                         emit progress(job.generation, static_cast<int>(done * 1000), 1000);
                                         return !job.cancelled();
                                       }));
      state_->positions = std::make_unique<PositionMapResult>(std::move(result));
      state_->positions_input = input;
    }
    const auto& r = *state_->positions;
    if (layer < 0 || layer >= r.position_map.size(0) || head < 0 || head >= r.position_map.size(1))
      throw Error("no layer " + std::to_string(layer) + ", head " + std::to_string(head));
    const auto hidden =
        allowed_keys(loaded.model->config(), r.position_map.size(2), torch::kCPU).logical_not();
    const auto pieces = token_pieces(loaded, r.ids);
    const AxisTokens tokens{r.ids, r.labels, pieces};
    const auto map_of = [&](const at::Tensor& all, const std::string& what) {
      return head_heatmap(all[layer][head], hidden, tokens, layer, head, max_cells,
                          HeatmapKind::Probability, "weight / row max", what);
    };
    PositionView view;
    view.layer = layer;
    view.head = head;
    view.pattern = map_of(r.pattern, "attention pattern");
    view.method = QString::fromStdString(r.methods[static_cast<size_t>(layer)]);
    view.position = map_of(r.position_map, "position only (" + r.methods[static_cast<size_t>(layer)] + ")");
    view.explanation = QString::fromStdString(r.explanation);
    if (r.absolute && layer == 0) {
      const auto& a = *r.absolute;
      for (const auto& [name, t] : {std::pair{"token–token", a.token_token},
                                    {"token–position", a.token_position},
                                    {"position–token", a.position_token},
                                    {"position–position", a.position_position},
                                    {"bias terms", a.bias}}) {
        view.absolute_terms.push_back(head_heatmap(t[head], hidden, tokens, layer, head,
                                                   max_cells, HeatmapKind::Signed, "logit term",
                                                   std::string(name) + " term"));
      }
    }
    if (r.cope) {
      const auto gates = r.cope->mean_gate_per_token[layer][head];
      const auto order = gates.argsort(0, /*descending=*/true);
      for (int64_t i = 0; i < order.size(0); ++i) {
        const int64_t t = order[i].item<int64_t>();
        const int64_t id = r.cope->token_ids[static_cast<size_t>(t)];
        CountedToken c;
        c.token = QString::fromStdString(display_label(token_labels(loaded, {id})[0]));
        c.id = static_cast<int>(id);
        c.mean_gate = gates[t].item<float>();
        c.count = static_cast<int>(r.cope->token_counts[static_cast<size_t>(t)]);
        if (i < 12)
          view.counted << QStringLiteral("%1   %2   ×%3").arg(c.token).arg(c.mean_gate, 0, 'f', 2).arg(c.count);
        view.counted_tokens.push_back(c);
      }
    }
    if (job.cancelled()) throw Cancelled();
    emit positionsReady(job.generation, view);
  });
}

void InferenceWorker::headMetrics(const JobTicket& job, const RunInput& input) {
  guarded(this, job, tr("Head metrics failed"), [&] {
    if (!state_->model) throw Error("open a checkpoint first");
    const auto& loaded = *state_->model;
    const auto m = compute_head_metrics(
        loaded, input_ids(loaded, input), Progress([&](double done, const std::string&) {
          emit progress(job.generation, static_cast<int>(done * 1000), 1000);
          return !job.cancelled();
        }));
    HeadMetricsSummary summary;
    summary.n_layers = static_cast<int>(m.values.size(0));
    summary.n_heads = static_cast<int>(m.values.size(1));
    for (const auto& name : head_metric_names()) summary.names << QString::fromStdString(name);
    const auto v = m.values.contiguous();
    summary.values.assign(v.data_ptr<double>(), v.data_ptr<double>() + v.numel());
    if (job.cancelled()) throw Cancelled();
    emit metricsReady(job.generation, summary);
  });
}

void InferenceWorker::compareSeries(const JobTicket& job, const QString& folder,
                                    const ProbeRequest& request) {
  guarded(this, job, tr("Comparison failed"), [&] {
    if (!state_->model) throw Error("open a checkpoint first");
    ProbeOptions options;
    options.length = request.length;
    options.samples = request.samples;
    options.seed = request.seed;
    LoadOptions load;
    load.device = state_->model->model->device().str();
    const auto paths = series_checkpoints(folder.toStdString());
    const auto start = std::chrono::steady_clock::now();
    const auto result = compare_checkpoints(paths, load, options, [&](int64_t done, int64_t n) {
      emit progress(job.generation, static_cast<int>(done), static_cast<int>(n));
      return !job.cancelled();
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    SeriesSummary summary;
    summary.folder = folder;
    for (int l = 0; l < static_cast<int>(result.vaf.size(1)); ++l) {
      summary.per_layer.push_back(compare_series(result, l));
      summary.checkpoint_curves.emplace_back();
      for (size_t i = 0; i < result.probes.size(); ++i)
        summary.checkpoint_curves.back().push_back(probe_curves(result.probes[i], l, -1, paths[i]));
    }
    summary.last = probe_summary(
        result.probes.back(), std::filesystem::path(paths.back()).filename().string());
    summary.last.note = tr("%1 checkpoints, probe T=%2, %3 tokens each, %4 s")
                            .arg(paths.size())
                            .arg(request.length)
                            .arg(result.probes.back().n_samples)
                            .arg(seconds, 0, 'f', 1);
    if (job.cancelled()) throw Cancelled();
    emit seriesReady(job.generation, summary);
  });
}

}  // namespace poslens::gui
