#pragma once
// The HDF5 and CSV files of the massive-activation, frequency-usage and pattern-divergence
// analyses, written here once so the CLI and the GUI write the same bytes (layout in
// docs/analyses.md). Every file is atomic (AtomicOutput): the previous file or none, never half.
#include <string>
#include <vector>

#include "analysis/frequency_usage.h"
#include "analysis/heinsen_states.h"
#include "analysis/length_generalisation.h"
#include "analysis/massive_activations.h"
#include "analysis/pattern_divergence.h"
#include "core/formats/hdf5_export.h"

namespace poslens {

/// The input an analysis ran on: ids and one label per token (token_labels()).
struct AnalysisInput {
  std::vector<int64_t> ids;
  std::vector<std::string> labels;
};

/// `/analysis/massive_activations/{top_values, top_positions, top_dims, massive}` [layer, k],
/// `median` [layer], attributes `criterion`, `hook`; `/tokens`. Throws poslens::Error.
void write_massive_activations_hdf5(const std::string& path, const MassiveActivations& m,
                                    const AnalysisInput& input, const ExportMetadata& meta);
/// `layer,rank,value,abs,position,token,dim,median,ratio,massive`, one row per entry.
std::string massive_activations_csv(const MassiveActivations& m, const std::vector<std::string>& labels);

/// `/analysis/frequency_usage/{q_norm [layer, head, component], k_norm [layer, kv_head,
/// component], q_layer_mean, k_layer_mean [layer, component], theta [component]}`, attributes
/// `pairing`, `rotary_dim`, `kept_components`, `attention_factor`; `/tokens`.
void write_frequency_usage_hdf5(const std::string& path, const FrequencyUsage& u,
                                const AnalysisInput& input, const ExportMetadata& meta);
/// `layer,head,component,theta,q_norm,k_norm` (k_norm of the head's kv head).
std::string frequency_usage_csv(const FrequencyUsage& u);

/// `/analysis/divergence/{per_head [layer, head], per_query [layer, q_pos]}` (nats), attributes
/// `first_checkpoint`, `second_checkpoint`, `measure` "jensen-shannon (nats)"; `/tokens`; root
/// metadata of the first model with `second_model_config` and `second_weights_sha256`.
void write_divergence_hdf5(const std::string& path, const PatternDivergence& d, const AnalysisInput& input,
                           const ExportMetadata& first, const ExportMetadata& second);
/// `layer,head,js_divergence`.
std::string divergence_csv(const PatternDivergence& d);

/// `/analysis/length_loss/{loss [curve, position] (nats), curves (names), windows [curve]}`,
/// attributes `L` (training length), `T` (window length), `text` (where the text came from).
void write_length_loss_hdf5(const std::string& path, const std::vector<LossCurve>& curves, int64_t L,
                            const std::string& text_source, const ExportMetadata& meta);
/// `position,<one column per curve>`.
std::string length_loss_csv(const std::vector<LossCurve>& curves);

/// `/analysis/heinsen/{state, decay, logits}` float64 [pos, feature]; `/tokens`.
void write_heinsen_states_hdf5(const std::string& path, const HeinsenStates& s, const AnalysisInput& input,
                               const ExportMetadata& meta);
/// `position,token,feature,state,decay,logit`.
std::string heinsen_states_csv(const HeinsenStates& s, const std::vector<std::string>& labels);

/// `/analysis/position_offset/{per_head [layer, head], per_query [layer, q_pos]}` (JS between
/// Δ = 0 and Δ, nats), `pattern`, `shifted` (the head's pooled maps), attributes `offset`,
/// `layer`, `head`; `/tokens`.
void write_position_offset_hdf5(const std::string& path, const OffsetEffect& e, const AnalysisInput& input,
                                const ExportMetadata& meta);

}  // namespace poslens
