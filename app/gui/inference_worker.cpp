// LibTorch first: Qt's `slots` macro breaks torch headers if Qt comes first.
#include <torch/torch.h>

#include "app/gui/inference_worker.h"

#include <chrono>
#include <cmath>

#include "analysis/heatmap_pooling.h"
#include "core/runtime/checkpoint.h"
#include "core/base/error.h"
#include "core/runtime/run.h"
#include "core/runtime/transformer.h"

namespace poslens::gui {

struct InferenceWorker::State {
  std::unique_ptr<LoadedModel> model;
  std::unique_ptr<RunResult> last_run;  // every capture of the last completed run
};

namespace {

constexpr int kThumbnailCells = 48;

/// Runs `body`, turning every exception into one failed() signal with a readable message.
template <typename Body>
void guarded(InferenceWorker* worker, const QString& title, Body&& body) {
  try {
    body();
  } catch (const Cancelled&) {
    emit worker->cancelled();
  } catch (const Error& e) {
    emit worker->failed(title, QString::fromStdString(e.what()));
  } catch (const c10::Error& e) {
    emit worker->failed(title, QString::fromStdString(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    emit worker->failed(title, QString::fromStdString(e.what()));
  }
}

/// A per-head view: which capture it shows and how it is labelled.
struct HeadView {
  HookKind kind;
  const char* title;
  const char* value_name;
};

HeadView head_view(const QString& suffix) {
  if (suffix == "hook_attn_scores") return {HookKind::AttnScores, "attention logits", "logit"};
  if (suffix == "hook_pos_scores") return {HookKind::PosScores, "position scores", "logit"};
  if (suffix == "hook_cope_gates") return {HookKind::CopeGates, "CoPE gates", "gate"};
  if (suffix == "hook_cope_pos") return {HookKind::CopePos, "CoPE positions", "position"};
  return {HookKind::Pattern, "attention pattern", "weight"};
}

HeatmapData head_map(const RunResult& run, const ModelConfig& config, int layer, int head,
                     int max_cells, const QString& view_name) {
  const auto view = head_view(view_name);
  const auto captured = run.captures.find({view.kind, layer});
  if (!captured.defined())
    throw Error("the last run has no " + std::string(view.title) + " for layer " +
                std::to_string(layer));
  if (head < 0 || head >= captured.size(1)) throw Error("no head " + std::to_string(head));
  // -inf marks cells the head cannot see, so the view draws them as masked.
  const auto hidden = allowed_keys(config, captured.size(2), torch::kCPU).logical_not();
  const at::Tensor cells = captured[0][head].masked_fill(hidden, -INFINITY);
  auto map = pool_heatmap(cells, max_cells, max_cells, Pooling::Max);
  for (const auto& label : run.labels) map.row_labels.push_back(display_label(label));
  map.col_labels = map.row_labels;
  map.layer = layer;
  map.head = head;
  map.value_name = view.value_name;
  map.title = "layer " + std::to_string(layer) + ", head " + std::to_string(head) + " — " + view.title;
  return map;
}

}  // namespace

InferenceWorker::InferenceWorker(QObject* parent) : QObject(parent), state_(std::make_unique<State>()) {
  qRegisterMetaType<ModelSummary>();
  qRegisterMetaType<RunSummary>();
  qRegisterMetaType<HeatmapData>();
}

InferenceWorker::~InferenceWorker() = default;

void InferenceWorker::openCheckpoint(const QString& path, const QString& device, const QString& dtype) {
  guarded(this, tr("Cannot open checkpoint"), [&] {
    LoadOptions options;
    options.device = device.toStdString();
    options.dtype = dtype.toStdString();
    auto loaded = std::make_unique<LoadedModel>(load_checkpoint(path.toStdString(), options));
    ModelSummary summary;
    summary.path = path;
    summary.description = QString::fromStdString(describe(*loaded));
    summary.n_layers = static_cast<int>(loaded->model->config().n_layers);
    summary.n_heads = static_cast<int>(loaded->model->config().n_heads);
    summary.has_tokenizer = loaded->tokenizer != nullptr;
    summary.views << "hook_pattern" << "hook_attn_scores";
    for (const auto& point : loaded->model->hook_points())
      if (point.layer == 0 && (point.kind == HookKind::PosScores || point.kind == HookKind::CopeGates ||
                               point.kind == HookKind::CopePos))
        summary.views << QString::fromStdString(point.name()).section('.', -1);
    state_->model = std::move(loaded);  // replaced only once the new one loaded completely
    state_->last_run.reset();
    emit opened(summary);
  });
}

void InferenceWorker::run(quint64 generation, const QString& input, bool as_token_ids,
                          const QString& captures, const QString& view) {
  if (generation < latest_generation_) return;  // superseded while queued
  cancel_ = false;
  guarded(this, tr("Run failed"), [&] {
    if (!state_->model) throw Error("open a checkpoint first");
    const auto& loaded = *state_->model;
    const auto ids = as_token_ids
                         ? parse_token_ids(input.toStdString(), loaded.model->config().vocab_size)
                         : encode_text(loaded, input.toStdString());
    std::vector<std::string> patterns{"blocks.*.attn.hook_pattern",
                                      "blocks.*.attn." + view.toStdString()};
    for (const auto& p : captures.split(',', Qt::SkipEmptyParts))
      patterns.push_back(p.trimmed().toStdString());
    const auto start = std::chrono::steady_clock::now();
    auto result = std::make_unique<RunResult>(run_model(
        loaded, ids, CaptureSpec(patterns), [this](int done, int total) {
          emit progress(done, total);
          return !cancel_;
        }));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    RunSummary summary;
    summary.generation = generation;
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
    state_->last_run = std::move(result);
    emit runFinished(summary);
  });
}

void InferenceWorker::requestHead(int layer, int head, int max_cells, const QString& view) {
  guarded(this, tr("Cannot show head"), [&] {
    if (!state_->last_run) return;
    emit headReady(head_map(*state_->last_run, state_->model->model->config(), layer, head,
                            max_cells, view));
  });
}

void InferenceWorker::exportCaptures(const QString& path) {
  guarded(this, tr("Export failed"), [&] {
    if (!state_->model || !state_->last_run) throw Error("run the model before exporting");
    export_run(path.toStdString(), *state_->model, *state_->last_run);
    emit exported(path);
  });
}

}  // namespace poslens::gui
