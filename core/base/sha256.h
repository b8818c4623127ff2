#pragma once
// SHA-256 of files (OpenSSL's libcrypto, EVP interface), so every analysis file can say which
// weights it was made from: Pythia's step branches have served identical weights under
// different step names (EleutherAI/pythia issue #205), and a digest shows it.
#include <string>
#include <vector>

namespace poslens {

/// Lower-case hex SHA-256 of the bytes of `paths` read one after the other — of one file, what
/// `sha256sum FILE` prints; of several, what `cat FILE… | sha256sum` prints. Reads in 1 MiB
/// pieces. Throws poslens::Error naming the file that cannot be opened or read.
std::string sha256_of_files(const std::vector<std::string>& paths);

}  // namespace poslens
