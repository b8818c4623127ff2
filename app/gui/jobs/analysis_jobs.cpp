// The Analyses panel's jobs on the open model: frequency usage, massive activations, pattern
// divergence, loss per position, position offset, Heinsen's states, and any plain analysis of
// the registry (analysis/ modules, streamed). Files the CLI wrote open through open_analysis_job.cpp.
#include "app/gui/worker_context.h"

#include "app/gui/jobs/jobs.h"

#include <QObject>

#include "analysis/analysis_files.h"
#include "analysis/analysis_registry.h"
#include "analysis/analysis_result.h"
#include "analysis/length_loss.h"
#include "analysis/position_offset.h"
#include "app/gui/jobs/analysis_view_builders.h"
#include "core/base/error.h"
#include "core/base/untrusted_json.h"

namespace poslens::gui {

Work frequency_usage_job(const RunInput& input, int layer) {
  return [input, layer](WorkerContext& ctx) -> std::any {
    const auto& loaded = ctx.model();
    const auto u = compute_frequency_usage(loaded, input_ids(loaded, input), ctx.progress());
    return of_model(usage_view(u, layer, stem(loaded.path)), loaded);
  };
}

Work massive_activations_job(const RunInput& input) {
  return [input](WorkerContext& ctx) -> std::any {
    const auto& loaded = ctx.model();
    const auto ids = input_ids(loaded, input);
    const auto m = compute_massive_activations(loaded, ids, 10, ctx.progress());
    return of_model(massive_view(m, token_labels(loaded, ids), stem(loaded.path)), loaded);
  };
}

Work divergence_job(const RunInput& input, const QString& checkpoint) {
  return [input, checkpoint](WorkerContext& ctx) -> std::any {
    const auto& first = ctx.model();
    LoadOptions options;
    options.device = first.model->device().str();
    const auto second = load_checkpoint(checkpoint.toStdString(), options);
    const auto ids = input_ids(first, input);
    const auto d = compute_pattern_divergence(first, second, ids, ctx.progress());
    auto v = divergence_view(d, token_labels(first, ids), stem(first.path) + " vs " + stem(second.path));
    v.provenance = provenance(first.path, first.weights_sha256, {}, first.model->config().interventions) +
                   QObject::tr(" | ") + provenance(second.path, second.weights_sha256);
    return v;
  };
}

Work length_loss_job(const QString& text_file, const QStringList& scalings) {
  return [text_file, scalings](WorkerContext& ctx) -> std::any {
    const auto& loaded = ctx.model();
    if (!loaded.tokenizer) throw Error("the model has no tokenizer: " + loaded.tokenizer_note);
    const int64_t L = training_length(loaded.model->config());
    const auto ids = loaded.tokenizer->encode(read_small_file(text_file.toStdString(), 64u << 20), false);
    std::vector<LossCurve> curves;
    const auto n = static_cast<double>(scalings.size());
    for (int s = 0; s < scalings.size(); ++s) {
      const auto spec = scalings[s].toStdString();
      const auto part = ctx.progress().part(s / n, 1.0 / n);
      const auto scaled = spec == "none" ? nullptr : with_rope_scaling(*loaded.model, rope_scaling_json(spec, L));
      auto curve = per_position_loss(scaled ? *scaled : *loaded.model, ids, 4 * L, 8,
                                     loaded.model->config().bos_token_id, part);
      curve.name = spec;
      curves.push_back(std::move(curve));
    }
    auto v = length_view(curves, L, stem(loaded.path));
    v.provenance = provenance(loaded.path, loaded.weights_sha256, {}, loaded.model->config().interventions) +
                   QObject::tr(" · text %1").arg(text_file);
    return v;
  };
}

Work position_offset_job(const RunInput& input, int64_t offset, int layer, int head) {
  return [input, offset, layer, head](WorkerContext& ctx) -> std::any {
    const auto& loaded = ctx.model();
    const auto ids = input_ids(loaded, input);
    const auto e = position_offset_effect(loaded, ids, offset, layer, head, 512, ctx.progress());
    return of_model(offset_view(e, token_labels(loaded, ids), stem(loaded.path),
                                loaded.model->position_encoding().describe()),
                    loaded);
  };
}

Work plain_analysis_job(const RunInput& input, const std::string& analysis) {
  return [input, analysis](WorkerContext& ctx) -> std::any {
    const auto& loaded = ctx.model();
    const auto& entry = analysis_entry(analysis);
    if (!entry.run) throw Error("\"" + analysis + "\" is not a plain analysis (it has its own job)");
    AnalysisInput in;
    in.ids = input_ids(loaded, input);
    in.labels = token_labels(loaded, in.ids);
    return of_model(result_view(entry.name, entry.run(loaded, in, ctx.progress())), loaded);
  };
}

Work heinsen_states_job(const RunInput& input) {
  return [input](WorkerContext& ctx) -> std::any {
    const auto& loaded = ctx.model();
    const auto ids = input_ids(loaded, input);
    return of_model(heinsen_view(compute_heinsen_states(loaded, ids), token_labels(loaded, ids), stem(loaded.path)),
                    loaded);
  };
}

}  // namespace poslens::gui
