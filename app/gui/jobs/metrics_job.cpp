// Head metrics for the Heads panel's colours (analysis/heads.h), streamed from one
// forward pass.
#include "app/gui/worker_context.h"

#include "app/gui/jobs/jobs.h"

#include "analysis/heads.h"

namespace poslens::gui {

Work metrics_job(const RunInput& input) {
  return [input](WorkerContext& ctx) -> std::any {
    const auto& loaded = ctx.model();
    const auto m = compute_head_metrics(loaded, input_ids(loaded, input), ctx.progress());
    HeadMetricsSummary summary;
    summary.n_layers = static_cast<int>(m.values.size(0));
    summary.n_heads = static_cast<int>(m.values.size(1));
    for (const auto& name : head_metric_names()) summary.names << QString::fromStdString(name);
    const auto v = m.values.contiguous();
    summary.values.assign(v.data_ptr<double>(), v.data_ptr<double>() + v.numel());
    return summary;
  };
}

}  // namespace poslens::gui
