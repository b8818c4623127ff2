#include "core/base/json_fields.h"

#include "core/base/error.h"

#include <cstdlib>

namespace poslens::fields {
namespace {
const nlohmann::json* find_key(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return (it == j.end() || it->is_null()) ? nullptr : &*it;
}
}  // namespace

int64_t require_int(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto* v = find_key(j, key);
  if (!v) throw Error(where + ": missing \"" + key + "\"");
  if (!v->is_number_integer())
    throw Error(where + ": \"" + key + "\" must be an integer, got " + v->dump());
  // Sizes and counts: capped so that products of two (n_heads · d_head, 4 · d_model) cannot
  // overflow int64 (fuzz_config_json found such overflows).
  const bool in_range = v->is_number_unsigned() ? v->get<uint64_t>() <= uint64_t{kMaxInteger}
                                                : std::abs(v->get<int64_t>()) <= kMaxInteger;
  if (!in_range)
    throw Error(where + ": \"" + key + "\" is " + v->dump() + ", beyond the limit of " +
                std::to_string(kMaxInteger));
  return v->get<int64_t>();
}

int64_t int_or(const nlohmann::json& j, const char* key, int64_t fallback, const std::string& where) {
  return find_key(j, key) ? require_int(j, key, where) : fallback;
}

double number_or(const nlohmann::json& j, const char* key, double fallback,
                 const std::string& where) {
  const auto* v = find_key(j, key);
  if (!v) return fallback;
  if (!v->is_number()) throw Error(where + ": \"" + key + "\" must be a number, got " + v->dump());
  return v->get<double>();
}

bool bool_or(const nlohmann::json& j, const char* key, bool fallback, const std::string& where) {
  const auto* v = find_key(j, key);
  if (!v) return fallback;
  if (!v->is_boolean()) throw Error(where + ": \"" + key + "\" must be true or false");
  return v->get<bool>();
}

std::string choice_or_first(const nlohmann::json& j, const char* key,
                            const std::vector<std::string>& choices, const std::string& where) {
  const auto* v = find_key(j, key);
  if (!v) return choices.front();
  if (v->is_string())
    for (const auto& c : choices)
      if (v->get<std::string>() == c) return c;
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  throw Error(where + ": \"" + key + "\" must be one of " + list + ", got " + v->dump());
}


int64_t optional_token_id(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return (it != j.end() && it->is_number_integer()) ? it->get<int64_t>() : -1;
}

}  // namespace poslens::fields
