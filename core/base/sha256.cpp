#include "core/base/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/base/error.h"

namespace poslens {
namespace {

/// fclose as a deleter type (decltype(&std::fclose) drops glibc's attributes: gcc 14 warns).
struct CloseFile {
  void operator()(FILE* file) const { std::fclose(file); }
};

}  // namespace

std::string sha256_of_files(const std::vector<std::string>& paths) {
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw Error("SHA-256: OpenSSL could not start a digest");
  std::vector<unsigned char> buffer(size_t{1} << 20);
  for (const auto& path : paths) {
    const std::unique_ptr<FILE, CloseFile> file(std::fopen(path.c_str(), "rb"));
    if (!file) throw Error(path + ": cannot open for its SHA-256 (" + std::strerror(errno) + ")");
    size_t n;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), file.get())) > 0)
      EVP_DigestUpdate(ctx.get(), buffer.data(), n);
    if (std::ferror(file.get())) throw Error(path + ": read failed while computing its SHA-256");
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
  static const char hex[] = "0123456789abcdef";
  std::string text;
  for (unsigned int i = 0; i < length; ++i) {
    text += hex[digest[i] >> 4];
    text += hex[digest[i] & 15];
  }
  return text;
}

}  // namespace poslens
