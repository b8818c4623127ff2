#include "core/base/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "core/base/error.h"

namespace poslens {
namespace {

namespace fs = std::filesystem;

/// fsync of a file or folder by path (a folder's fsync makes its entries durable).
void sync_path(const std::string& path, bool folder) {
  const int fd = ::open(path.c_str(), (folder ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open '" + path + "' to sync it: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw Error("cannot sync '" + path + "': " + std::strerror(err));
}

}  // namespace

AtomicOutput::AtomicOutput(std::string target, Kind kind) : target_(std::move(target)), kind_(kind) {
  if (target_.empty()) throw Error("no output path given");
  const fs::path parent = fs::path(target_).parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw Error("cannot write '" + target_ + "': folder '" + parent.string() + "' does not exist");
  if (kind_ == Kind::File && fs::is_directory(target_, ec))
    throw Error("cannot write '" + target_ + "': it is a folder");
  if (kind_ == Kind::Folder && fs::exists(target_, ec))
    throw Error(target_ + " already exists; choose a new folder");
  static std::atomic<unsigned> counter{0};
  temp_ = target_ + ".tmp-" + std::to_string(static_cast<long>(::getpid())) + "-" +
          std::to_string(counter++);
}

AtomicOutput::~AtomicOutput() {
  if (committed_) return;
  std::error_code ignored;
  fs::remove_all(temp_, ignored);
}

void AtomicOutput::commit() {
  try {
    std::error_code ec;
    if (kind_ == Kind::File) {
      if (!fs::is_regular_file(temp_, ec) || fs::file_size(temp_, ec) == 0)
        throw Error("cannot write '" + target_ + "': nothing was written");
      sync_path(temp_, false);
    } else {
      if (!fs::is_directory(temp_, ec)) throw Error("cannot write '" + target_ + "': nothing was written");
      for (const auto& entry : fs::recursive_directory_iterator(temp_))
        sync_path(entry.path().string(), entry.is_directory());
      sync_path(temp_, true);
    }
    if (kind_ == Kind::Folder && fs::exists(target_, ec))
      throw Error(target_ + " appeared while it was written; choose a new folder");
    fs::rename(temp_, target_, ec);
    if (ec) throw Error("cannot write '" + target_ + "': renaming the temporary failed: " + ec.message());
    committed_ = true;
    const fs::path parent = fs::path(target_).parent_path();
    sync_path(parent.empty() ? "." : parent.string(), true);
  } catch (const fs::filesystem_error& e) {
    throw Error("cannot write '" + target_ + "': " + e.what());
  }
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  AtomicOutput out(path);
  {
    std::ofstream file(out.path(), std::ios::binary | std::ios::trunc);
    file << bytes;
    file.close();
    if (!file) throw Error("cannot write '" + path + "'");
  }
  out.commit();
}

}  // namespace poslens
