#pragma once
// Internal to position/: the parameter checks every component recipe shares.
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/position/components.h"
#include "core/position/rope_scaling.h"

namespace poslens {

/// A component's parameters (the JSON object of config.json). Unknown keys are errors: a
/// misspelt option must not silently fall back to its default. Messages start with
/// `position_encoding "<type>"`.
class ComponentParams {
 public:
  /// Throws poslens::Error if the text is not a JSON object or holds a key not in `known`.
  ComponentParams(const PositionComponentSpec& spec, std::set<std::string> known);
  const std::string& where() const { return where_; }
  int64_t integer(const char* key, int64_t fallback) const;
  int64_t required_integer(const char* key) const;
  double number(const char* key, double fallback) const;
  bool flag(const char* key, bool fallback) const;
  /// One of `choices` (the first is the default).
  std::string choice(const char* key, const std::vector<std::string>& choices) const;
  const nlohmann::json& raw() const { return j_; }
  /// Throws unless lo <= value.
  void at_least(const char* key, int64_t value, int64_t lo) const;
  /// "pairing": "half_split" (default) or "interleaved".
  RopePairing pairing() const;
  /// Throws for a non-causal model (Shaw and FIRE are defined for causal attention only).
  void require_causal(const PositionContext& c) const;

 private:
  std::string where_;
  nlohmann::json j_;
};

}  // namespace poslens
