#pragma once
// Typed, checked reads of one key of a JSON object from an untrusted file (config.json, a
// position component's parameters). A JSON null counts as absent. Every error names `where`
// (the file or component) and the key.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace poslens::fields {

/// Largest magnitude require_int and int_or accept (2^31 − 1): they read sizes and counts.
inline constexpr int64_t kMaxInteger = 2147483647;
/// A required integer; Error "<where>: missing \"hidden_size\"", "... must be an integer" or
/// "... beyond the limit" (|value| > kMaxInteger).
int64_t require_int(const nlohmann::json& j, const char* key, const std::string& where);
/// An integer, or `fallback` when absent; Error when present and not an integer.
int64_t int_or(const nlohmann::json& j, const char* key, int64_t fallback, const std::string& where);
/// A number, or `fallback` when absent; Error when present and not a number.
double number_or(const nlohmann::json& j, const char* key, double fallback, const std::string& where);
/// A boolean, or `fallback` when absent; Error when present and not true/false.
bool bool_or(const nlohmann::json& j, const char* key, bool fallback, const std::string& where);
/// One of `choices` (the first when absent); Error naming the key and the allowed values.
std::string choice_or_first(const nlohmann::json& j, const char* key,
                            const std::vector<std::string>& choices, const std::string& where);
/// An integer token id, or -1 when the key is absent, null or not an integer.
int64_t optional_token_id(const nlohmann::json& j, const char* key);

}  // namespace poslens::fields
