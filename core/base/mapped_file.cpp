#include "core/base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <limits>

#include "core/base/error.h"
#include "core/base/text.h"

namespace poslens {

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not hang; it is rejected below as not a regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(path + ": cannot open: " + errno_text());
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }  // the mapping keeps the file alive
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(path + ": cannot stat: " + errno_text());
  if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file");
  const auto size = static_cast<unsigned long long>(st.st_size);
  if (size > std::numeric_limits<std::size_t>::max())
    throw Error(path + ": file too large to map on this host");
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->size_ = static_cast<std::size_t>(size);
  if (file->size_ == 0) return file;
  void* addr = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) throw Error(path + ": cannot memory-map: " + errno_text());
  file->addr_ = addr;
  return file;
}

void MappedFile::drop_pages(std::size_t offset, std::size_t length) const {
  if (addr_ == nullptr || offset >= size_) return;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t end = std::min(size_, offset + length);
  const std::size_t first = (offset + page - 1) / page * page, last = end / page * page;
  if (last > first)  // advice only: a failure changes nothing but memory use
    ::madvise(static_cast<char*>(addr_) + first, last - first, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (addr_ != nullptr) ::munmap(addr_, size_);
}

}  // namespace poslens
