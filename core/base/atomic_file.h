#pragma once
// One way to write an output (an interrupted export never leaves a half-written
// file): under a temporary name beside the target, fsynced, then renamed onto it. Until
// commit() the target keeps its previous content (or stays absent); a writer that throws, is
// cancelled or is killed leaves at most the temporary, which the destructor removes when it
// runs and whose name (<target>.tmp-<pid>-<n>) says what it was. Every file PosLens writes
// goes through here: HDF5 exports and analyses, safetensors, model and run folders, CSV,
// figures.
#include <string>

namespace poslens {

class AtomicOutput {
 public:
  enum class Kind { File, Folder };

  /// Prepares to write `target`. Throws poslens::Error (naming the target) when the target is
  /// empty, its folder does not exist, it is a folder where a file is wanted, or (Folder) it
  /// already exists. Nothing is created yet: write to path(), then commit().
  explicit AtomicOutput(std::string target, Kind kind = Kind::File);
  /// Removes the temporary unless committed.
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  /// Where to write: the temporary file or folder (its folder is the target's).
  const std::string& path() const { return temp_; }
  const std::string& target() const { return target_; }

  /// Flushes the temporary to disk (a folder: every file in it), renames it onto the target
  /// (replacing a file; a folder target must still be absent) and syncs the parent folder.
  /// Throws poslens::Error naming the target when the temporary is missing or empty (a file
  /// writer that wrote nothing), or a sync or the rename fails; the temporary is removed then.
  void commit();

 private:
  std::string target_, temp_;
  Kind kind_;
  bool committed_ = false;
};

/// Writes `bytes` to `path` through an AtomicOutput. Throws poslens::Error naming `path`.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace poslens
