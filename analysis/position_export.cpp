#include "analysis/position_export.h"

#include <torch/torch.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/analysis_registry.h"
#include "core/base/atomic_file.h"
#include "core/base/error.h"
#include "core/runtime/run.h"
#include "core/runtime/sinks.h"

namespace poslens {
namespace {

using Datasets = std::vector<Hdf5Dataset>;

}  // namespace

namespace {

bool is_term(PositionMapKind kind) {
  return kind != PositionMapKind::Pattern && kind != PositionMapKind::PositionOnly &&
         kind != PositionMapKind::SinkShare;
}

std::string dataset_of(PositionMapKind kind) {
  return std::string(is_term(kind) ? "/analysis/absolute_terms/" : "/analysis/") + to_string(kind);
}

std::vector<std::string> head_names(const ModelConfig& c, const std::optional<HeadSelection>& heads,
                                    bool layer0_only) {
  std::vector<std::string> names;
  for (int l = 0; l < (layer0_only ? 1 : c.n_layers); ++l)
    for (int h = 0; h < c.n_heads; ++h)
      if (!heads || std::find(heads->begin(), heads->end(), std::pair<int, int>{l, h}) != heads->end())
        names.push_back(std::to_string(l) + "." + std::to_string(h));
  return names;
}

}  // namespace

PositionMapFile::PositionMapFile(const std::string& path, const LoadedModel& model, int64_t T,
                                 const std::optional<HeadSelection>& heads, int64_t pool)
    : file_(path, export_metadata(model)),
      config_(model.model->config()),
      methods_(position_methods(model, T)),
      explanation_(position_only_explanation(model, T)),
      T_(T),
      pool_(pool),
      heads_(heads) {
  if (pool_ > 0) pooled_.emplace(T, pool_);
}

void PositionMapFile::add(const PositionMapBlock& b) {
  const std::string path = dataset_of(b.kind);
  const bool term = is_term(b.kind), column = b.kind == PositionMapKind::SinkShare;
  if (created_.insert(path).second) {
    const int64_t side = pooled_ ? pooled_->side() : T_;
    std::vector<int64_t> shape{config_.n_heads, side, side};
    std::vector<std::string> dims{"head", pooled_ ? "q_block" : "q_pos", pooled_ ? "k_block" : "k_pos"};
    if (column) {  // one value per query row: [layer, head, q]
      shape.pop_back();
      dims.pop_back();
    }
    if (!term) {
      shape.insert(shape.begin(), config_.n_layers);
      dims.insert(dims.begin(), "layer");
    }
    std::vector<Hdf5Attribute> attributes{{"heads", head_names(config_, heads_, term)}};
    if (b.kind == PositionMapKind::PositionOnly)
      attributes.insert(attributes.end(), {{"methods", methods_}, {"explanation", explanation_}});
    if (column)
      attributes.push_back({"meaning", std::string("1 - sum_j p_ij: the learned sink's share of each query row")});
    if (pooled_)
      attributes.insert(attributes.end(), {{"pooling", std::string("max")},
                                           {"pool_stride", pooled_->stride()},
                                           {"source_length", T_}});
    file_.create(path, shape, dims, attributes,
                 pooled_ ? std::numeric_limits<float>::quiet_NaN() : 0.0f);
  }
  std::vector<int64_t> at{b.head, 0, 0};
  if (!term) at.insert(at.begin(), b.layer);
  if (column) at.pop_back();
  const auto stored = [column](at::Tensor values) { return column ? values.squeeze(1) : values; };
  if (!pooled_) {
    at[at.size() - (column ? 1 : 2)] = b.q_begin;
    if (!column) at.back() = b.k_begin;
    auto values = stored(b.values.to(torch::kCPU, torch::kFloat32));
    while (values.dim() < static_cast<int64_t>(at.size())) values = values.unsqueeze(0);
    file_.write(path, at, values);
    return;
  }
  if (!pooled_->add(b)) return;  // the head's map is complete: write it and let it go
  auto map = stored(pooled_->take(b.kind, b.layer, b.head));
  while (map.dim() < static_cast<int64_t>(at.size())) map = map.unsqueeze(0);
  file_.write(path, at, map);
}

void PositionMapFile::finish(const PositionMapResult& r) {
  if (!created_.count(kPositionMapGroup))
    throw Error("position map: no head was mapped (check --heads)");
  if (r.cope) {
    const auto& c = *r.cope;
    file_.add({"/analysis/cope/mean_gate_per_key", c.mean_gate_per_key, {}, {"layer", "head", "k_pos"}, {}});
    file_.add({"/analysis/cope/mean_gate_per_token", c.mean_gate_per_token, {},
               {"layer", "head", "token_type"}, {}});
    file_.add({"/analysis/cope/token_ids", torch::tensor(c.token_ids, torch::kLong), {}, {"token_type"}, {}});
    file_.add({"/analysis/cope/token_counts", torch::tensor(c.token_counts, torch::kLong), {},
               {"token_type"}, {}});
  }
  file_.tokens(torch::tensor(r.ids, torch::kLong).unsqueeze(0), r.labels);
  file_.commit();
}

int64_t PositionMapFile::estimate_bytes(const ModelConfig& c, int64_t T,
                                        const std::optional<HeadSelection>& heads, int64_t pool,
                                        const std::string& method) {
  const int64_t side = pool > 0 ? (T + pool_stride(T, pool) - 1) / pool_stride(T, pool) : T;
  const int64_t per_map = side * side * 4;
  const int64_t n = heads ? static_cast<int64_t>(heads->size()) : c.n_layers * c.n_heads;
  int64_t layer0 = heads ? static_cast<int64_t>(heads_of_layer(*heads, 0).size()) : c.n_heads;
  return 2 * n * per_map + (method == "absolute" ? 5 * layer0 * per_map : 0) +
         (c.attention_sinks ? n * side * 4 : 0);
}

void write_head_metrics_hdf5(const std::string& path, const HeadMetrics& m,
                             const std::vector<int64_t>& ids, const std::vector<std::string>& labels,
                             const std::vector<std::string>& methods, const ExportMetadata& meta) {
  Datasets d;
  d.push_back({std::string(kHeadsGroup) + "/values", m.values, {}, {"layer", "head", "metric"},
               {{"methods", methods}}});
  d.push_back({std::string(kHeadsGroup) + "/metrics", {}, head_metric_names(), {"metric"}, {}});
  if (!m.induction_ids.empty())  // what the induction column was measured on
    d.push_back({std::string(kHeadsGroup) + "/induction_ids", torch::tensor(m.induction_ids, torch::kLong), {}, {"pos"}, {}});
  write_analysis_hdf5(path, d, {}, torch::tensor(ids, torch::kLong).unsqueeze(0), labels, meta);
}

HeadMetrics read_head_metrics_hdf5(const Hdf5Reader& file) {
  check_analysis_file_version(file);
  const std::string g = kHeadsGroup;
  const auto values = file.read(g + "/values");
  const auto names = file.read_strings(g + "/metrics");
  // Files of earlier versions hold a first part of today's metrics (learned_sink came later):
  // the missing columns read as NaN (not measured).
  const auto& current = head_metric_names();
  const bool earlier = names.size() <= current.size() && std::equal(names.begin(), names.end(), current.begin());
  if (values.dim() != 3 || values.size(2) != static_cast<int64_t>(names.size()) || !earlier)
    throw Error(file.path() + ": its head metrics are not this version's (" + std::to_string(names.size()) +
                " metrics)");
  HeadMetrics m;
  m.values = torch::full({values.size(0), values.size(1), static_cast<int64_t>(current.size())},
                         std::numeric_limits<double>::quiet_NaN(), torch::kDouble);
  m.values.narrow(2, 0, values.size(2)).copy_(values.to(torch::kDouble));
  if (file.exists(g + "/induction_ids")) {
    const auto ids = file.read(g + "/induction_ids").contiguous();
    m.induction_ids.assign(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
  }
  return m;
}

void write_head_metrics_csv(const std::string& path, const HeadMetrics& m) {
  const auto v = m.values.to(torch::kDouble).contiguous();
  write_file_atomically(path, head_metrics_csv(v.size(0), v.size(1),
                                               std::vector<double>(v.data_ptr<double>(),
                                                                   v.data_ptr<double>() + v.numel())));
}

PositionMapHead read_position_map_hdf5(const Hdf5Reader& file, int layer, int head) {
  check_analysis_file_version(file);
  const std::string map = dataset_of(PositionMapKind::PositionOnly), pattern = dataset_of(PositionMapKind::Pattern);
  if (!file.exists(pattern)) throw Error(file.path() + ": a position map without its " + pattern);
  const auto shape = file.shape(map);
  if (shape.size() != 4 || file.shape(pattern) != shape)
    throw Error(file.path() + ": position_map and pattern must be [layer, head, q, k] of one shape");
  PositionMapHead h;
  h.heads = file.string_list_attribute(map, "heads");
  h.layer = layer;
  h.head = head;
  if (layer < 0 && (h.heads.empty() || std::sscanf(h.heads.front().c_str(), "%d.%d", &h.layer, &h.head) != 2))
    h.layer = h.head = 0;
  if (h.layer < 0 || h.layer >= shape[0] || h.head < 0 || h.head >= shape[1])
    throw Error(file.path() + ": head " + std::to_string(h.layer) + "." + std::to_string(h.head) +
                " is outside the maps [" + std::to_string(shape[0]) + " layers, " + std::to_string(shape[1]) +
                " heads]");
  h.source_length = file.int_attribute(map, "source_length", shape[2]);
  h.position = file.read_slice(map, {h.layer, h.head}).to(torch::kFloat32);
  h.pattern = file.read_slice(pattern, {h.layer, h.head}).to(torch::kFloat32);
  const auto methods = file.string_list_attribute(map, "methods");
  if (static_cast<size_t>(h.layer) < methods.size()) h.method = methods[static_cast<size_t>(h.layer)];
  h.explanation = file.string_attribute(map, "explanation");
  const std::string sink = dataset_of(PositionMapKind::SinkShare);
  if (file.exists(sink)) {
    const auto sink_shape = file.shape(sink);
    if (sink_shape.size() != 3 || sink_shape[0] != shape[0] || sink_shape[1] != shape[1] || sink_shape[2] != shape[2])
      throw Error(file.path() + ": sink_share must be [layer, head, q] of the maps' rows");
    h.sink_share = file.read_slice(sink, {h.layer, h.head}).to(torch::kFloat32);
  }
  return h;
}

}  // namespace poslens
