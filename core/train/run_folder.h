#pragma once
// The layout of a training run folder (docs/training.md):
//   train.json              the options the run was started with, and the model config
//   log.jsonl               one JSON object per logged step / evaluation
//   step-000500/            a PosLens model folder (config.json with "training" metadata,
//                           model.safetensors, tokenizer.json) plus optimizer.pt (AdamW state)
//                           and trainer_state.json; written to a temporary folder and renamed
#include <cstdint>
#include <string>
#include <vector>

namespace poslens::train {

/// "step-000500" for 500 (at least six digits).
std::string checkpoint_name(int64_t step);
/// Steps of the complete checkpoints in `run_dir` (folders named step-N holding
/// trainer_state.json), ascending.
std::vector<int64_t> checkpoint_steps(const std::string& run_dir);
/// Removes leftovers of a killed checkpoint write (step-N.tmp-PID folders).
void remove_partial_checkpoints(const std::string& run_dir);
/// Keeps only the log lines whose "step" is at most `step` (rewritten atomically).
void truncate_log(const std::string& log_path, int64_t step);
/// Appends one line to `log_path` and flushes. Throws poslens::Error on an I/O error.
void append_log(const std::string& log_path, const std::string& json_line);
/// Writes `text` to `path` through a temporary file and a rename.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace poslens::train
