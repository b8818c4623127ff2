#include "app/cli/sweep_manifest.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "analysis/analysis_registry.h"
#include "analysis/checkpoint_series.h"
#include "core/base/error.h"
#include "core/base/untrusted_json.h"

namespace poslens::cli {
namespace {

namespace fs = std::filesystem;

/// `path` made absolute against the manifest's folder.
std::string resolved(const fs::path& base, const std::string& path) {
  const fs::path p(path);
  return fs::absolute(p.is_absolute() ? p : base / p).lexically_normal().string();
}

}  // namespace

const std::vector<std::string>& sweep_analyses() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> list;
    for (const auto& entry : analysis_entries())
      if (entry.sweep) list.push_back(entry.name);
    list.push_back("run");  // a forward keeping captures (run --capture … --out)
    return list;
  }();
  return names;
}

std::vector<SweepItem> read_sweep_manifest(const std::string& path) {
  const auto json = read_json_file(path, "sweep manifest", 16u << 20);
  const fs::path base = fs::absolute(path).parent_path();
  const auto fail = [&](size_t i, const std::string& what) -> Error {
    return Error(path + ": item " + std::to_string(i) + ": " + what);
  };
  if (!json.is_object() || !json.contains("items") || !json["items"].is_array())
    throw Error(path + ": a sweep manifest is an object with an \"items\" list");
  std::vector<SweepItem> items;
  const auto& list = json["items"];
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& entry = list[i];
    if (!entry.is_object()) throw fail(i, "must be an object");
    for (const auto& [key, value] : entry.items())
      if (key != "checkpoint" && key != "series" && key != "analysis" && key != "options")
        throw fail(i, "unknown key \"" + key + "\" (checkpoint, series, analysis, options)");
    if (!entry.contains("analysis") || !entry["analysis"].is_string()) throw fail(i, "needs \"analysis\"");
    SweepItem item;
    item.analysis = entry["analysis"].get<std::string>();
    const auto& known = sweep_analyses();
    if (std::find(known.begin(), known.end(), item.analysis) == known.end()) {
      std::string list_text;
      for (const auto& k : known) list_text += (list_text.empty() ? "" : ", ") + k;
      throw fail(i, "unknown analysis \"" + item.analysis + "\" (" + list_text + ")");
    }
    if (entry.contains("options")) {
      if (!entry["options"].is_array()) throw fail(i, "\"options\" must be a list of strings");
      for (const auto& o : entry["options"]) {
        if (!o.is_string()) throw fail(i, "\"options\" must be a list of strings");
        const auto text = o.get<std::string>();
        if (text == "--out" || text.rfind("--out=", 0) == 0)
          throw fail(i, "sets --out; the sweep names each item's output itself");
        item.options.push_back(text);
      }
    }
    const bool one = entry.contains("checkpoint"), series = entry.contains("series");
    if (one == series) throw fail(i, "needs exactly one of \"checkpoint\" and \"series\"");
    const auto& where = entry[one ? "checkpoint" : "series"];
    if (!where.is_string()) throw fail(i, "the checkpoint or series must be a path");
    const auto target = resolved(base, where.get<std::string>());
    std::error_code ec;
    if (!fs::exists(target, ec)) throw fail(i, target + ": no such file or folder");
    if (one) {
      item.checkpoint = target;
      items.push_back(item);
    } else {
      for (const auto& checkpoint : series_checkpoints(target)) {
        item.checkpoint = resolved(base, checkpoint);
        items.push_back(item);
      }
    }
  }
  if (items.empty()) throw Error(path + ": the manifest lists no items");
  return items;
}

std::string sweep_manifest_json(const std::vector<SweepItem>& items) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& item : items)
    list.push_back({{"checkpoint", item.checkpoint}, {"analysis", item.analysis}, {"options", item.options}});
  return nlohmann::ordered_json{{"items", list}}.dump(2) + "\n";
}

std::string sweep_item_output(const std::string& dir, int64_t index) {
  char name[32];
  std::snprintf(name, sizeof name, "item-%04lld.h5", static_cast<long long>(index));
  return (fs::path(dir) / "items" / name).string();
}

}  // namespace poslens::cli
