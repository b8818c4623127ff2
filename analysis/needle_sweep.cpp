#include "analysis/needle_sweep.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>

#include "analysis/analysis_registry.h"
#include "analysis/analysis_views.h"
#include "analysis/csv_text.h"
#include "analysis/next_token_loss.h"
#include "analysis/segment_mass.h"
#include "core/base/error.h"
#include "core/base/text.h"
#include "core/runtime/model_input.h"

namespace poslens {
namespace {

std::string count(int64_t n) { return std::to_string(n); }

std::string short_name(const std::string& path) { return std::filesystem::path(path).filename().string(); }

}  // namespace

const std::vector<std::string>& needle_segment_names() {
  static const std::vector<std::string> names = {"begin", "needle", "context", "end"};
  return names;
}

std::vector<double> evenly_spaced_depths(int64_t k) {
  if (k < 1) throw Error("needle sweep: give at least one depth, got " + count(k));
  if (k == 1) return {0.5};
  std::vector<double> depths;
  for (int64_t i = 0; i < k; ++i) depths.push_back(static_cast<double>(i) / static_cast<double>(k - 1));
  return depths;
}

NeedleInput needle_input(const NeedleSpec& spec, double depth) {
  if (spec.needle.empty()) throw Error("needle sweep: the needle is empty");
  if (spec.answer.empty()) throw Error("needle sweep: the answer is empty (its loss is what is measured)");
  if (!(depth >= 0.0 && depth <= 1.0)) throw Error("needle sweep: depth " + significant(depth) + " is outside [0, 1]");
  const int64_t fixed = spec.fixed_tokens();
  const int64_t available = static_cast<int64_t>(spec.haystack.size());
  const int64_t H = spec.length > 0 ? spec.length - fixed : available;
  if (H < 1)
    throw Error("needle sweep: a length of " + count(spec.length) + " tokens leaves no room for the haystack (" +
                "the needle, query, answer and BOS take " + count(fixed) + ")");
  if (H > available)
    throw Error("needle sweep: the haystack has " + count(available) + " tokens, fewer than the " + count(H) +
                " a length of " + count(spec.length) + " needs (give a longer text or a shorter --length)");
  const auto d = static_cast<int64_t>(std::llround(depth * static_cast<double>(H)));
  NeedleInput in;
  if (spec.bos >= 0) in.ids.push_back(spec.bos);
  const auto hay = spec.haystack.begin();
  in.ids.insert(in.ids.end(), hay, hay + d);
  in.needle_begin = static_cast<int64_t>(in.ids.size());
  in.ids.insert(in.ids.end(), spec.needle.begin(), spec.needle.end());
  in.ids.insert(in.ids.end(), hay + d, hay + H);
  in.query_begin = static_cast<int64_t>(in.ids.size());
  in.ids.insert(in.ids.end(), spec.query.begin(), spec.query.end());
  in.answer_begin = static_cast<int64_t>(in.ids.size());
  in.ids.insert(in.ids.end(), spec.answer.begin(), spec.answer.end());
  return in;
}

NeedleSpec needle_spec(const LoadedModel& model, std::vector<int64_t> ids, const std::string& needle,
                       const std::string& query, const std::string& answer) {
  if (!model.tokenizer)
    throw Error("the needle sweep encodes its needle, query and answer with the model's tokenizer, and this model "
                "has none (" + model.tokenizer_note + ")");
  NeedleSpec spec;
  spec.haystack = std::move(ids);
  spec.bos = model.model->config().bos_token_id;
  if (spec.bos >= 0 && !spec.haystack.empty() && spec.haystack.front() == spec.bos)
    spec.haystack.erase(spec.haystack.begin());
  spec.needle = model.tokenizer->encode(needle, false);
  spec.query = model.tokenizer->encode(query, false);
  spec.answer = model.tokenizer->encode(answer, false);
  return spec;
}

NeedleSweep compute_needle_sweep(const LoadedModel& loaded, const NeedleSpec& spec, const Progress& progress) {
  require_one_stack(loaded, "The needle sweep");
  if (spec.depths.empty()) throw Error("needle sweep: give at least one depth");
  if (spec.begin_tokens < 0) throw Error("needle sweep: begin_tokens must be ≥ 0, got " + count(spec.begin_tokens));
  const auto& model = *loaded.model;
  const auto& c = model.config();
  NeedleSweep s;
  s.depths = spec.depths;
  const auto K = static_cast<int64_t>(spec.depths.size());
  s.needle_begin = torch::zeros({K}, torch::kLong);
  s.loss = torch::zeros({K}, torch::kDouble);
  s.needle_tokens = static_cast<int64_t>(spec.needle.size());
  s.query_tokens = static_cast<int64_t>(spec.query.size());
  s.answer_tokens = static_cast<int64_t>(spec.answer.size());
  s.begin_tokens = spec.begin_tokens;
  for (int64_t l = 0; l < c.n_layers; ++l) s.layer_types.push_back(c.layer_type(l));
  std::vector<at::Tensor> masses;
  c10::InferenceMode inference;
  ForwardOptions options;
  options.logits = LogitsReturned::None;
  for (int64_t k = 0; k < K; ++k) {
    const auto in = needle_input(spec, spec.depths[static_cast<size_t>(k)]);
    const auto T = static_cast<int64_t>(in.ids.size());
    s.length = T;
    const int64_t begin_end = std::min(spec.begin_tokens, in.needle_begin);  // stops at a needle at depth 0
    const std::vector<KeySegment> segments = {
        {"begin", 0, begin_end},
        {"needle", in.needle_begin, in.needle_begin + s.needle_tokens},
        {"context", begin_end, in.query_begin},  // the needle is cut out below
        {"end", in.query_begin, T}};
    const auto tokens = torch::tensor(in.ids, torch::kLong);
    auto sums = torch::zeros({T - 1}, torch::kDouble);
    NextTokenLoss loss(tokens.narrow(0, 1, T - 1), sums);
    SegmentMassSink mass(model, segments, in.answer_begin - 1, T - 1);
    SinkFanout both({&loss, &mass});
    model.forward(tokens.unsqueeze(0), both, progress.part(double(k) / K, 1.0 / K).layers(), options);
    s.loss[k] = sums.narrow(0, in.answer_begin - 1, s.answer_tokens).mean();
    s.needle_begin[k] = in.needle_begin;
    auto m = mass.mass().clone();
    m.select(2, 2) -= m.select(2, 1);  // context: the haystack's span without the needle inside it
    masses.push_back(m);
    progress.step(k + 1, K);
  }
  s.mass = torch::stack(masses);
  return s;
}

void write_needle_sweep_hdf5(const std::string& path, const NeedleSweep& s, const AnalysisInput& input,
                             const std::string& haystack_source, const ExportMetadata& meta) {
  const std::string g = kNeedleSweepGroup;
  const std::vector<Hdf5Dataset> d = {
      {g + "/depths", torch::tensor(s.depths, torch::kDouble), {}, {"depth"}, {}},
      {g + "/needle_begin", s.needle_begin, {}, {"depth"}, {}},
      {g + "/loss", s.loss, {}, {"depth"}, {}},
      {g + "/mass", s.mass, {}, {"depth", "layer", "head", "segment"}, {}},
      {g + "/segments", {}, needle_segment_names(), {"segment"}, {}},
      {g + "/layer_types", {}, s.layer_types, {"layer"}, {}},
  };
  const std::vector<Hdf5Attribute> attrs = {
      {"length", s.length},
      {"needle_tokens", s.needle_tokens},
      {"query_tokens", s.query_tokens},
      {"answer_tokens", s.answer_tokens},
      {"begin_tokens", s.begin_tokens},
      {"haystack", haystack_source},
      {"measure", std::string("loss: mean -ln p(answer token), nats; mass: mean over the answer rows of the "
                              "attention pattern's sum over each segment's keys")}};
  write_analysis_hdf5(path, d, {{g, attrs}}, torch::tensor(input.ids, torch::kLong).unsqueeze(0), input.labels,
                      meta);
}

NeedleSweep read_needle_sweep_hdf5(const Hdf5Reader& file) {
  check_analysis_file_version(file);
  const std::string g = kNeedleSweepGroup;
  NeedleSweep s;
  const auto depths = file.read(g + "/depths").to(torch::kDouble).contiguous();
  s.depths.assign(depths.data_ptr<double>(), depths.data_ptr<double>() + depths.numel());
  s.needle_begin = file.read(g + "/needle_begin").to(torch::kLong);
  s.loss = file.read(g + "/loss").to(torch::kDouble);
  s.mass = file.read(g + "/mass").to(torch::kFloat32);
  s.layer_types = file.read_strings(g + "/layer_types");
  const auto K = depths.numel();
  if (depths.dim() != 1 || s.needle_begin.numel() != K || s.loss.numel() != K || s.mass.dim() != 4 ||
      s.mass.size(0) != K || s.mass.size(3) != static_cast<int64_t>(needle_segment_names().size()) ||
      static_cast<int64_t>(s.layer_types.size()) != s.mass.size(1))
    throw Error(file.path() + ": " + g + " datasets of inconsistent shapes");
  s.length = file.int_attribute(g, "length");
  s.needle_tokens = file.int_attribute(g, "needle_tokens");
  s.query_tokens = file.int_attribute(g, "query_tokens");
  s.answer_tokens = file.int_attribute(g, "answer_tokens");
  s.begin_tokens = file.int_attribute(g, "begin_tokens");
  return s;
}

std::string needle_sweep_csv(const NeedleSweep& s) {
  std::string text = "depth,needle_begin,loss";
  text += ",layer,layer_type,head";
  for (const auto& name : needle_segment_names()) text += "," + name;
  text += "\n";
  const auto m = s.mass.contiguous();
  const int64_t K = m.size(0), L = m.size(1), H = m.size(2), S = m.size(3);
  const float* p = m.data_ptr<float>();
  for (int64_t k = 0; k < K; ++k)
    for (int64_t l = 0; l < L; ++l)
      for (int64_t h = 0; h < H; ++h) {
        text += csv_number(s.depths[static_cast<size_t>(k)]) + "," + count(s.needle_begin[k].item<int64_t>()) + "," +
                csv_number(s.loss[k].item<double>()) + "," + count(l) + "," +
                csv_quoted(s.layer_types[static_cast<size_t>(l)]) + "," + count(h);
        for (int64_t seg = 0; seg < S; ++seg) text += "," + csv_number(p[((k * L + l) * H + h) * S + seg]);
        text += "\n";
      }
  return text;
}

AnalysisResult needle_sweep_result(const NeedleSweep& s, const AnalysisInput& input, const std::string& name,
                                   const std::string& haystack_source) {
  AnalysisResult r;
  r.title = "Needle sweep of " + name;
  const int64_t K = s.mass.size(0), L = s.mass.size(1);
  std::vector<std::string> depth_labels, layer_labels;
  for (double d : s.depths) depth_labels.push_back(significant(d));
  for (int64_t l = 0; l < L; ++l) layer_labels.push_back("L" + count(l) + " " + s.layer_types[static_cast<size_t>(l)]);
  const auto head_mean = s.mass.mean(2);  // [depth, layer, segment]
  auto needle = tensor_heatmap(head_mean.select(2, 1), depth_labels, layer_labels,
                               name + "  mass on the needle from the answer rows (head mean)", "mass");
  needle.row_axis = "needle depth";
  needle.col_axis = "layer";  // a Value map: its data range, so that masses of a few % show
  auto segments = tensor_heatmap(head_mean.mean(0), layer_labels, needle_segment_names(),
                                 name + "  mass per segment (mean over depths and heads)", "mass");
  segments.row_axis = "layer";
  segments.col_axis = "segment";
  segments.kind = HeatmapKind::Probability;
  r.maps = {needle, segments};
  r.curves.title = name + "  answer loss against needle depth (T = " + count(s.length) + ")";
  r.curves.x_label = "needle depth (0: right after the start, 1: right before the query)";
  r.curves.y_label = "answer loss (nats)";
  r.curves.x = s.depths;
  r.curves.names = {"answer loss"};
  const auto loss = s.loss.contiguous();
  r.curves.y = {std::vector<double>(loss.data_ptr<double>(), loss.data_ptr<double>() + K)};
  const int64_t best = loss.argmin().item<int64_t>(), worst = loss.argmax().item<int64_t>();
  const auto per_layer = head_mean.select(2, 1).mean(0);  // [layer]
  const int64_t looking = per_layer.argmax().item<int64_t>();
  r.summary = count(K) + " depths at T = " + count(s.length) + " (haystack " + haystack_source + "); answer loss " +
              significant(loss[best].item<double>()) + " nats at depth " + significant(s.depths[static_cast<size_t>(best)]) + " to " +
              significant(loss[worst].item<double>()) + " at depth " + significant(s.depths[static_cast<size_t>(worst)]) +
              "; layer " + count(looking) + " (" + s.layer_types[static_cast<size_t>(looking)] +
              ") puts the most mass on the needle, " + significant(per_layer[looking].item<double>()) + " on average";
  r.csv = needle_sweep_csv(s);
  r.write_hdf5 = [s, input, haystack_source](const std::string& path, const ExportMetadata& meta) {
    write_needle_sweep_hdf5(path, s, input, haystack_source, meta);
  };
  return r;
}

AnalysisResult run_needle_sweep(const LoadedModel& model, const AnalysisInput& input, const Progress& progress) {
  auto spec = needle_spec(model, input.ids, kPassKeyNeedle, kPassKeyQuery, kPassKeyAnswer);
  spec.depths = evenly_spaced_depths(11);
  const auto s = compute_needle_sweep(model, spec, progress);
  AnalysisInput first;
  first.ids = needle_input(spec, spec.depths.front()).ids;
  first.labels = token_labels(model, first.ids);
  return needle_sweep_result(s, first, short_name(model.path), "the input");
}

AnalysisResult read_needle_sweep(const Hdf5Reader& file) {
  const auto s = read_needle_sweep_hdf5(file);
  AnalysisInput input;
  if (file.exists("/tokens/ids")) {
    const auto ids = file.read("/tokens/ids").flatten().contiguous();
    input.ids.assign(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
  }
  input.labels = read_token_labels(file);
  return needle_sweep_result(s, input, short_name(file.string_attribute("/", "checkpoint")),
                             file.string_attribute(kNeedleSweepGroup, "haystack"));
}

}  // namespace poslens
