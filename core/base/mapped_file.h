#pragma once
// A whole file mapped read-only into memory: how checkpoint readers look at untrusted files
// without copying them (safetensors, llama2.c).
#include <cstddef>
#include <memory>
#include <string>

namespace poslens {

/// A read-only private mapping (MAP_PRIVATE, PROT_READ) of a whole regular file, unmapped when
/// the last owner goes: tensors that alias it hold a shared_ptr, so they outlive the reader.
/// An empty file has size() 0 and no mapping.
class MappedFile {
 public:
  /// Opens and maps `path`. Throws poslens::Error "<path>: cannot open: <errno text>", "...:
  /// not a regular file" (a FIFO or folder: opened non-blocking, so it never hangs) or "...:
  /// cannot memory-map: ...".
  static std::shared_ptr<const MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* bytes() const { return static_cast<const unsigned char*>(addr_); }
  std::size_t size() const { return size_; }
  /// Lets the kernel drop the pages wholly inside [offset, offset + length) from memory (they
  /// are read again from the file if touched): a reader that has copied a tensor out calls it,
  /// so loading a checkpoint does not hold the file and the copies at once.
  void drop_pages(std::size_t offset, std::size_t length) const;

 private:
  MappedFile() = default;
  void* addr_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace poslens
