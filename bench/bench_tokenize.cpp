// Encode speed of HfTokenizer on one text: `poslens_bench_tokenize TOKENIZER.json TEXT_FILE
// ROUNDS` prints the median seconds of ROUNDS encodes (after one warm-up, which also fills the
// BPE word cache, as HF's own warm-up does) and the number of ids. scripts/bench_tokenize.sh
// runs it beside tools/bench_tokenize_reference.py (HF's Rust tokenizers, PyPI's binding).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/untrusted_json.h"
#include "core/tokenizers/hf_tokenizer.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s TOKENIZER.json TEXT_FILE ROUNDS\n", argv[0]);
    return 2;
  }
  try {
    const auto tokenizer = poslens::HfTokenizer::read(argv[1]);
    const std::string text = poslens::read_small_file(argv[2], 1ull << 30);
    const int rounds = std::max(1, std::atoi(argv[3]));
    size_t ids = tokenizer.encode(text, true).size();  // warm-up
    std::vector<double> seconds;
    for (int r = 0; r < rounds; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      ids = tokenizer.encode(text, true).size();
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(seconds.begin(), seconds.end());
    std::printf("{\"impl\": \"poslens\", \"median_s\": %.6f, \"ids\": %zu, \"bytes\": %zu}\n",
                seconds[seconds.size() / 2], ids, text.size());
  } catch (const poslens::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
