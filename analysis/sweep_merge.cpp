#include "analysis/sweep_merge.h"

#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include "analysis/analysis_registry.h"
#include "analysis/checkpoint_series.h"
#include "analysis/frequency_export.h"
#include "core/base/error.h"
#include "core/formats/hdf5_export.h"
#include "core/formats/hdf5_reader.h"

namespace poslens {
namespace {

std::string item_group(size_t i) {
  char name[32];
  std::snprintf(name, sizeof name, "/items/%04zu", i);
  return name;
}

/// The step of a checkpoint from its step-NNNNNN folder (or its parent's), as compare does
/// without a training record; -1 otherwise.
int64_t step_of(const std::string& checkpoint) {
  std::filesystem::path p(checkpoint);
  if (p.filename().empty()) p = p.parent_path();
  const int64_t own = step_from_name(p.filename().string());
  return own >= 0 ? own : step_from_name(p.parent_path().filename().string());
}

/// The probe series of the items, as /analysis/compare (frequency_export.cpp's layout).
void add_series(Hdf5Writer& file, const std::vector<MergeItem>& items) {
  const std::string g = kCompareGroup;
  std::vector<at::Tensor> vaf, scores, components;
  std::vector<std::string> names, digests;
  std::vector<int64_t> steps;
  std::optional<ProbeResult> first;
  for (const auto& item : items) {
    const Hdf5Reader in(item.file);
    auto p = read_probe_hdf5(in);
    if (first && p.vaf.sizes() != first->vaf.sizes())
      throw Error(item.file + ": its probe has another shape than the first item's (layers × components)");
    vaf.push_back(p.vaf);
    scores.push_back(p.scores);
    components.push_back(p.components.mean(1));
    names.push_back(item.checkpoint);
    digests.push_back(in.string_attribute("/", "weights_sha256"));
    steps.push_back(step_of(item.checkpoint));
    if (!first) first = std::move(p);
  }
  file.add({g + "/vaf", torch::stack(vaf), {}, {"checkpoint", "layer", "component"}, {}});
  file.add({g + "/checkpoints", {}, names, {"checkpoint"}, {}});
  file.add({g + "/weights_sha256", {}, digests, {"checkpoint"}, {}});
  file.add({g + "/steps", torch::tensor(steps, torch::kLong), {}, {"checkpoint"}, {}});
  file.add({g + "/scores", torch::stack(scores), {}, {"checkpoint", "layer", "head", "key_pos"}, {}});
  file.add({g + "/components", torch::stack(components), {}, {"checkpoint", "layer", "component", "key_pos"}, {}});
  file.add({g + "/theta", first->theta, {}, {"component"}, {}});
  file.add({g + "/activated", first->activated, {}, {"component"}, {}});
  // The first probe's settings, as compare writes them (T, samples, L, pairing, HoPE's cut).
  file.group_attributes(g, {{"merged_from", std::string("a sweep of ") + std::to_string(items.size()) + " probes"},
                            {"T", first->T},
                            {"n_samples", first->n_samples},
                            {"L", first->L},
                            {"kept_components", first->kept_components},
                            {"pairing", first->pairing}});
}

}  // namespace

void merge_sweep(const std::vector<MergeItem>& items, const std::string& out) {
  if (items.empty()) throw Error("merge: the sweep has no items");
  for (const auto& item : items)
    if (!std::filesystem::is_regular_file(item.file))
      throw Error("merge: " + item.file + " is missing (run the sweep again: it skips items already done)");
  ExportMetadata meta;
  meta.tool_version = POSLENS_VERSION;
  meta.checkpoint = "merged sweep of " + std::to_string(items.size()) + " items";
  Hdf5Writer file(out, meta);
  bool all_probes = true;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& item = items[i];
    const auto group = item_group(i);
    file.copy_file(item.file, group);
    file.group_attributes(group, {{"analysis", item.analysis},
                                  {"item_checkpoint", item.checkpoint},
                                  {"options", item.options},
                                  {"step", step_of(item.checkpoint)}});
    all_probes = all_probes && item.analysis == "probe";
  }
  if (all_probes) add_series(file, items);
  file.commit();
}

}  // namespace poslens
