#pragma once
// HDF5 files of the RoPE frequency analyses (docs/hdf5-layout.md "/analysis/probe",
// "/analysis/frequencies", "/analysis/compare"): what `poslens-cli probe`, `frequencies` and
// `compare` write, with the exact dataset names other tools read, and their readers (what the
// GUI opens). Atomic, like every export.
#include <string>

#include "analysis/compare.h"
#include "analysis/probe.h"
#include "analysis/text_decomposition.h"
#include "core/formats/hdf5_export.h"
#include "core/formats/hdf5_reader.h"

namespace poslens {

/// `/analysis/probe/`: scores, scores_std [layer, head, key_pos]; components [layer, head,
/// component, key_pos]; remainder, position_terms [layer, head, key_pos] where present;
/// vaf [layer, component]; vaf_per_head [layer, head, component]; theta float64 [component];
/// activated uint8 [component]; tokens int64 [sample]. Attributes T, n_samples, L, pairing,
/// bos_id, kept_components, seed, sampling ("all" or "random"). With `extrapolation` (the
/// probe at a longer T, same tokens) the same layout again under `/analysis/probe_extrapolation/`.
/// Throws poslens::Error as write_analysis_hdf5 does.
void write_probe_hdf5(const std::string& path, const ProbeResult& probe, uint64_t seed,
                      bool every_token, const ExportMetadata& meta,
                      const ProbeResult* extrapolation = nullptr);

/// `/analysis/frequencies/`: components [head, component, q_pos, k_pos], scores, remainder,
/// position_terms [head, q_pos, k_pos], theta, activated; attributes layer, head (-1: all),
/// L, pairing, kept_components; `/tokens` as `run` writes them.
void write_frequencies_hdf5(const std::string& path, const TextDecomposition& d,
                            const ExportMetadata& meta);

/// `/analysis/compare/`: vaf float32 [checkpoint, layer, component]; checkpoints (strings)
/// and steps int64 [checkpoint] (-1 unknown); scores [checkpoint, layer, head, key_pos];
/// components [checkpoint, layer, component, key_pos] (head means); theta, activated;
/// attributes T, n_samples, L, pairing. `meta` describes the first checkpoint.
void write_compare_hdf5(const std::string& path, const CompareResult& compare,
                        const ExportMetadata& meta);

/// Reads what write_probe_hdf5 wrote under `/analysis/probe` (not the extrapolation group):
/// every dataset and attribute of ProbeResult; vaf_per_head, remainder, position_terms and
/// scores_std stay undefined where the file has none. Throws poslens::Error naming the file for
/// a file of another version (check_analysis_file_version), a missing dataset or datasets of
/// inconsistent shapes (layers, heads, components, keys).
ProbeResult read_probe_hdf5(const Hdf5Reader& file);

/// Reads what write_frequencies_hdf5 wrote: the decomposition and its input (`/tokens` ids and
/// labels, empty when the file has none). Throws poslens::Error as read_probe_hdf5 does.
TextDecomposition read_frequencies_hdf5(const Hdf5Reader& file);

/// Reads what write_compare_hdf5 wrote. The file keeps head means of the components, so each
/// of `probes` holds one "head": scores [layer, 1, key_pos] (the head mean), components
/// [layer, 1, component, key_pos], vaf [layer, component] = that checkpoint's row of `vaf`,
/// theta/activated and the group's T, n_samples, L and pairing. weights_sha256 is empty for a
/// file without digests. Throws poslens::Error as read_probe_hdf5 does, and for fewer than one
/// checkpoint or lists of different lengths.
CompareResult read_compare_hdf5(const Hdf5Reader& file);

}  // namespace poslens
