#pragma once
// The body every analysis subcommand shares (massive-activations, frequency-usage, divergence,
// length-loss, position-offset, heinsen-states, heads): load the model and the input and check
// the forward fits before anything runs; write the result as CSV or HDF5 by --out's suffix; the
// figure when --figure was given; say what was written. Each command's own file keeps only what
// is its own: options, the analysis call and its summary lines.
#include <cstdint>
#include <functional>
#include <string>

#include "analysis/analysis_files.h"
#include "analysis/analysis_registry.h"
#include "app/cli/command.h"

namespace poslens::cli {

/// The model and the input an analysis runs on.
struct PreparedAnalysis {
  LoadedModel model;
  AnalysisInput input;  ///< ids and one label per token
};

/// Loads the model (`m`: checkpoint, tokenizer, device, dtype) and the input's ids and labels,
/// then checks that one forward over them and `output_bytes` of output at `out` fit the
/// machine (core/runtime/resources.h) — `what` names the command in that error. Throws
/// poslens::Error (a bad checkpoint, input or file; not enough memory or disk).
PreparedAnalysis prepare_analysis(const std::string& what, const ModelOptions& m, const InputOptions& in,
                                  const std::string& out, int64_t output_bytes = int64_t{1} << 20);

/// True when `out` ends in ".csv" (the result as CSV), false for HDF5.
bool is_csv(const std::string& out);

/// Writes the result to `out`: `csv()` atomically when `out` is a .csv file, else `hdf5(out)`
/// (the analysis's writer, itself atomic). Throws what they throw.
void write_result(const std::string& out, const std::function<std::string()>& csv,
                  const std::function<void(const std::string&)>& hdf5);

/// With `figure` given, `draw(figure)` and "wrote FIGURE"; then "wrote OUT" on stdout.
void finish_figure_and_say(const std::string& figure, const std::function<void(const std::string&)>& draw,
                           const std::string& out);

/// For a model with decoupled RoPE (multi-head latent attention, ModelConfig::latent_attention()):
/// "decoupled RoPE: the components are each head's 8 rotary channels; its 6 no-position channels
/// (qk_nope_head_dim) are not rotated (the remainder)\n", which the RoPE analyses print; empty
/// for other models.
std::string decoupled_rope_note(const ModelConfig& c);

/// The checkpoint's folder or file name, for figure titles.
std::string checkpoint_name(const std::string& checkpoint);

/// The subcommand of a plain analysis (`entry.run` set, analysis/analysis_registry.h):
/// `poslens-cli NAME CHECKPOINT (--text|--tokens|--text-file|--tokens-file) --out F.h5|F.csv
/// [--figure F.png|.pdf|.svg]` — the shared Model and Input options, the result written by
/// --out's suffix, its summary printed, its maps side by side (or its curves) as the figure.
Command plain_analysis_command(const AnalysisEntry& entry);

}  // namespace poslens::cli
