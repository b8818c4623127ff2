#pragma once
// Every analysis PosLens computes, in one table: its name (the poslens-cli subcommand, the
// sweep manifest's "analysis", the Analyses panel's key), the one spelling of its HDF5 group,
// a line saying what it computes, and which faces it has. The CLI's command list, the sweep
// manifest's list, the Analyses panel's choices and the GUI's file readers are made from it.
// An analysis with its own options and views binds each face by name (a test checks that every
// entry is bound); a plain one (one model, one input, no options) gives `run` and `read`, and
// every face is generic (docs/architecture.md "Where to add").
#include <string>
#include <vector>

namespace poslens {

class Hdf5Reader;
class Progress;
struct AnalysisInput;
struct AnalysisResult;
struct LoadedModel;

/// The HDF5 groups of the analyses' files (docs/hdf5-layout.md): writers and readers use these.
inline constexpr char kProbeGroup[] = "/analysis/probe";
inline constexpr char kProbeExtrapolationGroup[] = "/analysis/probe_extrapolation";
inline constexpr char kFrequenciesGroup[] = "/analysis/frequencies";
inline constexpr char kCompareGroup[] = "/analysis/compare";
inline constexpr char kUShapeGroup[] = "/analysis/u_shape";
inline constexpr char kPositionMapGroup[] = "/analysis/position_map";
inline constexpr char kHeadsGroup[] = "/analysis/heads";
inline constexpr char kMassiveActivationsGroup[] = "/analysis/massive_activations";
inline constexpr char kFrequencyUsageGroup[] = "/analysis/frequency_usage";
inline constexpr char kDivergenceGroup[] = "/analysis/divergence";
inline constexpr char kLengthLossGroup[] = "/analysis/length_loss";
inline constexpr char kPositionOffsetGroup[] = "/analysis/position_offset";
inline constexpr char kHeinsenStatesGroup[] = "/analysis/heinsen";
inline constexpr char kValueNormsGroup[] = "/analysis/value_norms";
inline constexpr char kNeedleSweepGroup[] = "/analysis/needle_sweep";

/// Which GUI panel shows an analysis's file (File ▸ Open analysis…).
enum class ShownIn { Frequencies, PositionMap, Analyses };

struct AnalysisEntry {
  const char* name;   ///< "frequency-usage": the subcommand, sweep item and panel key
  const char* group;  ///< its HDF5 group, one of the k…Group constants above
  const char* title;  ///< what it computes, one line (the panel's choice, the CLI's help)
  bool sweep;         ///< a sweep manifest may name it (it runs on one checkpoint)
  bool panel_run;     ///< the Analyses panel runs it on the open model and input
  ShownIn shown_in;   ///< the panel that shows its file
  /// A plain analysis: runs it on `input` (a batch of one) of `model`; the generic CLI
  /// command, sweep item, panel job and view use it (analysis/analysis_result.h). Throws
  /// poslens::Error, poslens::Cancelled. nullptr: the analysis binds its own faces.
  AnalysisResult (*run)(const LoadedModel& model, const AnalysisInput& input, const Progress& progress) = nullptr;
  /// A plain analysis's file read back as the same result (its reader, beside its writer).
  AnalysisResult (*read)(const Hdf5Reader& file) = nullptr;
};

/// Every analysis, in the order --help and the Analyses panel list them.
const std::vector<AnalysisEntry>& analysis_entries();

/// The entry named `name`. Throws poslens::Error "unknown analysis \"x\" (probe, …)".
const AnalysisEntry& analysis_entry(const std::string& name);

/// The analysis whose group `file` holds (the first in table order), or nullptr: what a file
/// the CLI wrote is. A file holds one analysis (a probe file may add /analysis/probe_extrapolation).
const AnalysisEntry* analysis_in_file(const Hdf5Reader& file);

/// The names of the entries `keep` accepts, comma-separated in table order ("a, b, c").
std::string analysis_names(bool (*keep)(const AnalysisEntry&));

/// Throws poslens::Error unless `file` was written by this PosLens version (root attribute
/// `poslens_version`): "<path>: written by PosLens 0.4.0; this PosLens (0.5.0) reads the files
/// of its own version", or "<path>: not a PosLens analysis file" without the attribute.
void check_analysis_file_version(const Hdf5Reader& file);

}  // namespace poslens
