#include "core/position/component_params.h"

#include "core/base/error.h"
#include "core/base/json_fields.h"

namespace poslens {

ComponentParams::ComponentParams(const PositionComponentSpec& spec, std::set<std::string> known)
    : where_("position_encoding \"" + spec.type + "\"") {
  try {
    j_ = nlohmann::json::parse(spec.params_json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(where_ + ": parameters are not valid JSON: " + e.what());
  }
  if (!j_.is_object()) throw Error(where_ + ": parameters must be an object");
  known.insert("type");
  for (const auto& [key, value] : j_.items())
    if (!known.count(key)) throw Error(where_ + ": unknown parameter \"" + key + "\"");
}

int64_t ComponentParams::integer(const char* key, int64_t fallback) const {
  return fields::int_or(j_, key, fallback, where_);
}

int64_t ComponentParams::required_integer(const char* key) const {
  return fields::require_int(j_, key, where_);
}

double ComponentParams::number(const char* key, double fallback) const {
  return fields::number_or(j_, key, fallback, where_);
}

bool ComponentParams::flag(const char* key, bool fallback) const {
  return fields::bool_or(j_, key, fallback, where_);
}

std::string ComponentParams::choice(const char* key, const std::vector<std::string>& choices) const {
  return fields::choice_or_first(j_, key, choices, where_);
}

void ComponentParams::at_least(const char* key, int64_t value, int64_t lo) const {
  if (value < lo)
    throw Error(where_ + ": \"" + key + "\" must be >= " + std::to_string(lo) + ", got " +
                std::to_string(value));
}

RopePairing ComponentParams::pairing() const {
  return choice("pairing", {"half_split", "interleaved"}) == "half_split" ? RopePairing::HalfSplit
                                                                          : RopePairing::Interleaved;
}

void ComponentParams::require_causal(const PositionContext& c) const {
  if (!c.causal) throw Error(where_ + ": supported for causal models only");
}

}  // namespace poslens
