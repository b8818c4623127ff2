#pragma once
// poslens-cli probe, frequencies and compare: the RoPE frequency analyses (docs/frequencies.md)
// written as HDF5 (/analysis/probe, /analysis/frequencies, /analysis/compare) and, with
// --figure, as the figure the GUI's Frequencies panel draws. Errors are poslens::Error.
#include <cstdint>
#include <string>
#include <vector>

#include "app/cli/commands.h"

namespace poslens::cli {

struct ProbeCommand {
  int64_t length = 0;          ///< T
  std::string samples = "all"; ///< "all" or a count
  uint64_t seed = 0;
  int64_t batch = 0;           ///< 0: automatic
  int64_t bos = -1;            ///< -1: the model's
  int64_t train_length = 0;    ///< L; 0: from the checkpoint
  int64_t extrapolate = 0;     ///< a second probe at this longer T (0: none)
  std::string out;
  std::string figure;
};
/// `probe`: the U-shape probe with its per-component curves and VAF.
void probe(const CommonOptions& common, const ProbeCommand& command);

struct FrequenciesCommand {
  RunOptions input;  ///< text or tokens (captures and top_k unused)
  int layer = 0;
  int head = -1;     ///< -1: every head
  int64_t train_length = 0;
  std::string out;
  std::string figure;
};
/// `frequencies`: the decomposition of one layer's real scores on the input.
void frequencies(const CommonOptions& common, const FrequenciesCommand& command);

struct CompareCommand {
  std::vector<std::string> checkpoints;
  std::string series;  ///< a run folder (its step-* checkpoints) instead of checkpoints
  ProbeCommand probe;
};
/// `compare`: the probe on two or more checkpoints; VAF per component against step.
void compare(const CommonOptions& common, const CompareCommand& command);

}  // namespace poslens::cli
