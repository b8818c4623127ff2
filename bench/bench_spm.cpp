// Times SentencePieceTokenizer::encode on a text file (best of N runs) and writes the ids, one
// per line, so tools/bench_spm.py can check them against python3-sentencepiece and compare
// speed in the same run.
//   poslens_bench_spm <tokenizer.model> <text file> <ids out> [runs=5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "core/base/error.h"
#include "core/tokenizers/sentencepiece_tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: poslens_bench_spm <tokenizer.model> <text file> <ids out> [runs=5]\n";
    return 2;
  }
  try {
    const auto tok = poslens::SentencePieceTokenizer::read(argv[1]);
    std::ifstream in(argv[2], std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    const int runs = argc > 4 ? std::stoi(argv[4]) : 5;
    double best = 1e30;
    std::vector<int64_t> ids;
    for (int r = 0; r < runs; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      ids = tok->encode(text, false);
      const auto t1 = std::chrono::steady_clock::now();
      best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
    }
    std::ofstream out(argv[3]);
    for (const int64_t id : ids) out << id << '\n';
    std::printf("poslens: %zu bytes -> %zu ids, best of %d: %.4f s (%.1f MB/s)\n", text.size(),
                ids.size(), runs, best, text.size() / best / 1e6);
    return 0;
  } catch (const poslens::Error& e) {
    std::cerr << e.what() << '\n';
    return 1;
  }
}
