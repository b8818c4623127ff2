#pragma once
// The HDF5 and CSV files of the massive-activation, frequency-usage, divergence, length-loss,
// position-offset and Heinsen-state analyses, written here once so the CLI and the GUI write the
// same bytes (layout in docs/analyses.md), and read back here (the GUI's Open analysis…). Every
// file is atomic (AtomicOutput): the previous file or none, never half. Each reader first checks
// the file's PosLens version (check_analysis_file_version), then the shapes it reads, and throws
// poslens::Error naming the file when either does not fit; an unreadable or truncated file fails
// in Hdf5Reader with its message.
#include <string>
#include <vector>

#include "analysis/frequency_usage.h"
#include "analysis/heinsen_states.h"
#include "analysis/length_loss.h"
#include "analysis/position_offset.h"
#include "analysis/massive_activations.h"
#include "analysis/divergence.h"
#include "core/formats/hdf5_export.h"
#include "core/formats/hdf5_reader.h"

namespace poslens {

/// The input an analysis ran on: ids and one label per token (token_labels()).
struct AnalysisInput {
  std::vector<int64_t> ids;
  std::vector<std::string> labels;
};

/// A file's token labels (/tokens/text of the first sequence), empty when it has none.
std::vector<std::string> read_token_labels(const Hdf5Reader& file);

/// `/analysis/massive_activations/{top_values, top_positions, top_dims, massive}` [layer, k],
/// `median` [layer], `means` [d_model] (attribute `layer`; only when a layer has massive
/// entries: MassiveActivations::means), attributes `criterion`, `hook`; `/tokens`. Throws
/// poslens::Error.
void write_massive_activations_hdf5(const std::string& path, const MassiveActivations& m,
                                    const AnalysisInput& input, const ExportMetadata& meta);
/// `layer,rank,value,abs,position,token,dim,median,ratio,massive`, one row per entry.
std::string massive_activations_csv(const MassiveActivations& m, const std::vector<std::string>& labels);
/// What write_massive_activations_hdf5 wrote.
MassiveActivations read_massive_activations_hdf5(const Hdf5Reader& file);

/// `/analysis/frequency_usage/{q_norm [layer, head, component], k_norm [layer, kv_head,
/// component], q_layer_mean, k_layer_mean [layer, component], theta [component]}`, attributes
/// `pairing`, `rotary_dim`, `kept_components`, `attention_factor`; `/tokens`.
void write_frequency_usage_hdf5(const std::string& path, const FrequencyUsage& u,
                                const AnalysisInput& input, const ExportMetadata& meta);
/// `layer,head,component,theta,q_norm,k_norm` (k_norm of the head's kv head).
std::string frequency_usage_csv(const FrequencyUsage& u);
/// What write_frequency_usage_hdf5 wrote: q_norm, k_norm, rotary theta, rotary_dim and
/// kept_components, L (the layer means are recomputed from the norms).
FrequencyUsage read_frequency_usage_hdf5(const Hdf5Reader& file);

/// `/analysis/divergence/{per_head [layer, head], per_query [layer, q_pos]}` (nats), attributes
/// `first_checkpoint`, `second_checkpoint`, `measure` "jensen-shannon (nats)"; `/tokens`; root
/// metadata of the first model with `second_model_config` and `second_weights_sha256`.
void write_divergence_hdf5(const std::string& path, const PatternDivergence& d, const AnalysisInput& input,
                           const ExportMetadata& first, const ExportMetadata& second);
/// `layer,head,js_divergence`.
std::string divergence_csv(const PatternDivergence& d);
/// What write_divergence_hdf5 wrote, and the second checkpoint it named.
struct DivergenceFile {
  PatternDivergence divergence;
  std::string second_checkpoint;
};
DivergenceFile read_divergence_hdf5(const Hdf5Reader& file);

/// `/analysis/length_loss/{loss [curve, position] (nats), curves (names), windows [curve]}`,
/// attributes `L` (training length), `T` (window length), `text` (where the text came from).
void write_length_loss_hdf5(const std::string& path, const std::vector<LossCurve>& curves, int64_t L,
                            const std::string& text_source, const ExportMetadata& meta);
/// `position,<one column per curve>`.
std::string length_loss_csv(const std::vector<LossCurve>& curves);
/// What write_length_loss_hdf5 wrote: the curves (float64 loss) and L.
struct LengthLossFile {
  std::vector<LossCurve> curves;
  int64_t L = 0;
};
LengthLossFile read_length_loss_hdf5(const Hdf5Reader& file);

/// `/analysis/heinsen/{state, decay, logits}` float64 [pos, feature]; `/tokens`.
void write_heinsen_states_hdf5(const std::string& path, const HeinsenStates& s, const AnalysisInput& input,
                               const ExportMetadata& meta);
/// `position,token,feature,state,decay,logit`.
std::string heinsen_states_csv(const HeinsenStates& s, const std::vector<std::string>& labels);
/// What write_heinsen_states_hdf5 wrote.
HeinsenStates read_heinsen_states_hdf5(const Hdf5Reader& file);

/// `/analysis/position_offset/{per_head [layer, head], per_query [layer, q_pos]}` (JS between
/// Δ = 0 and Δ, nats), `pattern`, `shifted` (the head's pooled maps), attributes `offset`,
/// `layer`, `head`; `/tokens`.
void write_position_offset_hdf5(const std::string& path, const OffsetEffect& e, const AnalysisInput& input,
                                const ExportMetadata& meta);
/// What write_position_offset_hdf5 wrote (pattern and shifted as float32).
OffsetEffect read_position_offset_hdf5(const Hdf5Reader& file);

}  // namespace poslens
