#include "analysis/analysis_registry.h"

#include "analysis/needle_sweep.h"
#include "analysis/positional_influence.h"
#include "analysis/value_norms.h"
#include "core/base/error.h"
#include "core/formats/hdf5_reader.h"

namespace poslens {

const std::vector<AnalysisEntry>& analysis_entries() {
  using S = ShownIn;
  static const std::vector<AnalysisEntry> entries = {
      {"probe", kProbeGroup, "RoPE frequency probe: mean attention logit per distance, split by rotary component, "
       "with VAF", true, false, S::Frequencies},
      {"frequencies", kFrequenciesGroup, "One layer's attention scores on the input split by rotary component",
       true, false, S::Frequencies},
      {"compare", kCompareGroup, "Probe VAF across a checkpoint series", false, false, S::Frequencies},
      {"u-shape", kUShapeGroup, "U-shaped distance curves of several checkpoints (last query's logit per key)",
       false, false, S::Analyses},
      {"position-map", kPositionMapGroup, "Position-only attention maps beside the patterns", true, false,
       S::PositionMap},
      {"heads", kHeadsGroup, "Head metrics: sink, previous-token, diagonal, entropy, distance, induction", true,
       false, S::Analyses},
      {"massive-activations", kMassiveActivationsGroup,
       "Massive activations (largest residual entries per layer)", true, true, S::Analyses},
      {"frequency-usage", kFrequencyUsageGroup,
       "Frequency usage (mean ‖q⁽ᶜ⁾‖ per head and rotary component)", true, true, S::Analyses},
      {"divergence", kDivergenceGroup, "Attention divergence against another checkpoint", true, true,
       S::Analyses},
      {"length-loss", kLengthLossGroup, "Length generalisation: loss per position of a text file up to 4·L",
       true, true, S::Analyses},
      {"position-offset", kPositionOffsetGroup,
       "Position offset: every position shifted by Δ (selected head's patterns)", true, true, S::Analyses},
      {"heinsen-states", kHeinsenStatesGroup, "Heinsen's position states, decay probabilities and logits", true,
       true, S::Analyses},
      {"value-norms", kValueNormsGroup, "Value norms per token and kv head: value-state drains beside the sinks",
       true, true, S::Analyses, run_value_norms, read_value_norms},
      {"needle-sweep", kNeedleSweepGroup,
       "Needle sweep: the answer's loss and the attention on a needle hidden at several depths", true, true,
       S::Analyses, run_needle_sweep, read_needle_sweep},
      {"positional-influence", kPositionalInfluenceGroup,
       "Positional influence: how much each position can still move the last token's state, per layer", true,
       true, S::Analyses, run_positional_influence, read_positional_influence},
  };
  return entries;
}

std::string analysis_names(bool (*keep)(const AnalysisEntry&)) {
  std::string text;
  for (const auto& e : analysis_entries())
    if (keep(e)) text += (text.empty() ? "" : ", ") + std::string(e.name);
  return text;
}

const AnalysisEntry& analysis_entry(const std::string& name) {
  for (const auto& e : analysis_entries())
    if (name == e.name) return e;
  throw Error("unknown analysis \"" + name + "\" (" + analysis_names([](const AnalysisEntry&) { return true; }) +
              ")");
}

const AnalysisEntry* analysis_in_file(const Hdf5Reader& file) {
  for (const auto& e : analysis_entries())
    if (file.exists(e.group)) return &e;
  return nullptr;
}

void check_analysis_file_version(const Hdf5Reader& file) {
  const auto version = file.string_attribute("/", "poslens_version");
  if (version.empty()) throw Error(file.path() + ": not a PosLens analysis file (no poslens_version attribute)");
  if (version != POSLENS_VERSION)
    throw Error(file.path() + ": written by PosLens " + version + "; this PosLens (" + POSLENS_VERSION +
                ") reads the files of its own version");
}

}  // namespace poslens
