#pragma once
// Reading JSON from files PosLens did not write (safetensors headers, index.json, config.json,
// tokenizer files): bounded size, bounded nesting, no repeated keys. One place for those limits.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace poslens {

/// Deepest JSON nesting accepted anywhere; real files need fewer than 10 levels.
inline constexpr int kMaxJsonDepth = 32;
/// Largest accepted JSON side file (config.json, index.json); real ones are at most a few MB.
inline constexpr std::uint64_t kMaxJsonFileBytes = 100'000'000;

/// Parses untrusted JSON text [begin, end). Throws poslens::Error, prefixed "<where>: <what>",
/// when the text nests deeper than kMaxJsonDepth (so a hostile "[[[[..." cannot build a huge
/// tree), repeats a key within one object (which would silently replace the earlier entry), or
/// is not valid UTF-8 JSON. Keys keep the file's order.
nlohmann::ordered_json parse_untrusted_json(const char* begin, const char* end,
                                            const std::string& where, const char* what);

/// parse_untrusted_json with the same checks, objects as std::map (keys sorted): lookups and
/// inserts stay logarithmic in objects of many keys (a tokenizer's 50,000-entry vocabulary),
/// where the ordered form's linear key search takes seconds.
nlohmann::json parse_untrusted_json_sorted(const char* begin, const char* end,
                                           const std::string& where, const char* what);

/// The whole of the regular file `path`, which must be at most `limit` bytes. Throws
/// poslens::Error naming the file for a missing or non-regular file, a larger one, or a short
/// read.
std::string read_small_file(const std::string& path, std::uint64_t limit);

/// read_small_file + parse_untrusted_json_sorted (for config readers).
/// `what` names the file's role in messages ("config.json").
nlohmann::json read_json_file(const std::string& path, const char* what,
                              std::uint64_t limit = kMaxJsonFileBytes);

}  // namespace poslens
