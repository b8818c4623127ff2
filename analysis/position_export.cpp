#include "analysis/position_export.h"

#include <torch/torch.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/atomic_file.h"
#include "core/base/error.h"

namespace poslens {
namespace {

using Datasets = std::vector<Hdf5Dataset>;

const std::vector<std::string> kMapDims = {"layer", "head", "q_pos", "k_pos"};

}  // namespace

void write_position_map_hdf5(const std::string& path, const PositionMapResult& r,
                             const ExportMetadata& meta) {
  Datasets d;
  const std::vector<Hdf5Attribute> map_attrs = {{"methods", r.methods},
                                                {"explanation", r.explanation}};
  d.push_back({"/analysis/position_map", r.position_map, {}, kMapDims, map_attrs});
  d.push_back({"/analysis/pattern", r.pattern, {}, kMapDims, {}});
  if (r.cope) {
    const auto& c = *r.cope;
    d.push_back({"/analysis/cope/mean_gate_per_key", c.mean_gate_per_key, {}, {"layer", "head", "k_pos"}, {}});
    d.push_back({"/analysis/cope/mean_gate_per_token", c.mean_gate_per_token, {},
                 {"layer", "head", "token_type"}, {}});
    d.push_back({"/analysis/cope/token_ids", torch::tensor(c.token_ids, torch::kLong), {}, {"token_type"}, {}});
    d.push_back({"/analysis/cope/token_counts", torch::tensor(c.token_counts, torch::kLong), {},
                 {"token_type"}, {}});
  }
  if (r.absolute) {
    const auto& a = *r.absolute;
    const std::vector<std::string> dims = {"head", "q_pos", "k_pos"};
    for (const auto& [name, t] : {std::pair{"token_token", a.token_token},
                                  {"token_position", a.token_position},
                                  {"position_token", a.position_token},
                                  {"position_position", a.position_position},
                                  {"bias", a.bias}})
      d.push_back({std::string("/analysis/absolute_terms/") + name, t.to(torch::kCPU), {}, dims, {}});
  }
  const auto ids = torch::tensor(r.ids, torch::kLong).unsqueeze(0);
  write_analysis_hdf5(path, d, {}, ids, r.labels, meta);
}

void write_head_metrics_hdf5(const std::string& path, const HeadMetrics& m,
                             const std::vector<int64_t>& ids, const std::vector<std::string>& labels,
                             const std::vector<std::string>& methods, const ExportMetadata& meta) {
  Datasets d;
  d.push_back({"/analysis/heads/values", m.values, {}, {"layer", "head", "metric"},
               {{"methods", methods}}});
  d.push_back({"/analysis/heads/metrics", {}, head_metric_names(), {"metric"}, {}});
  write_analysis_hdf5(path, d, {}, torch::tensor(ids, torch::kLong).unsqueeze(0), labels, meta);
}

void write_head_metrics_csv(const std::string& path, const HeadMetrics& m) {
  std::ostringstream out;
  out << "layer,head";
  for (const auto& name : head_metric_names()) out << "," << name;
  out << "\n";
  const auto v = m.values.to(torch::kDouble).contiguous();
  for (int64_t l = 0; l < v.size(0); ++l)
    for (int64_t h = 0; h < v.size(1); ++h) {
      out << l << "," << h;
      for (int64_t k = 0; k < v.size(2); ++k) {
        const double x = v[l][h][k].item<double>();
        out << ",";
        if (!std::isnan(x)) out << x;
      }
      out << "\n";
    }
  write_file_atomically(path, out.str());
}

}  // namespace poslens
