#include "core/base/untrusted_json.h"

#include <filesystem>
#include <fstream>
#include <unordered_set>
#include <vector>

#include "core/base/error.h"
#include "core/base/text.h"

namespace poslens {

namespace {

/// The checks of parse_untrusted_json for either object representation.
template <class Json>
Json parse_checked(const char* begin, const char* end, const std::string& where, const char* what) {
  std::vector<std::unordered_set<std::string>> open_objects;  // keys seen per open object
  int depth = 0;
  using event_t = typename Json::parse_event_t;
  auto check = [&](int /*depth*/, event_t event, Json& parsed) -> bool {
    switch (event) {
      case event_t::object_start:
      case event_t::array_start:
        if (++depth > kMaxJsonDepth)
          throw Error(where + ": " + what + " nests deeper than " + std::to_string(kMaxJsonDepth) +
                      " levels");
        if (event == event_t::object_start) open_objects.emplace_back();
        break;
      case event_t::object_end:
        --depth;
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case event_t::array_end:
        --depth;
        break;
      case event_t::key:
        if (!open_objects.empty() && parsed.is_string() &&
            !open_objects.back().insert(parsed.template get_ref<const std::string&>()).second)
          throw Error(where + ": " + what + " has the key " +
                      quoted(parsed.template get_ref<const std::string&>()) +
                      " twice in one object (a key that appears twice would hide the first value)");
        break;
      case event_t::value:
        break;
    }
    return true;
  };
  try {
    return Json::parse(begin, end, check, /*allow_exceptions=*/true);
  } catch (const nlohmann::json::exception& e) {  // one exception type for both forms
    throw Error(where + ": " + what + " is not valid UTF-8 JSON: " + e.what());
  }
}

}  // namespace

nlohmann::ordered_json parse_untrusted_json(const char* begin, const char* end,
                                            const std::string& where, const char* what) {
  return parse_checked<nlohmann::ordered_json>(begin, end, where, what);
}

nlohmann::json parse_untrusted_json_sorted(const char* begin, const char* end,
                                           const std::string& where, const char* what) {
  return parse_checked<nlohmann::json>(begin, end, where, what);
}

std::string read_small_file(const std::string& path, std::uint64_t limit) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(path + ": not found or not a regular file");
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(path + ": cannot read size: " + ec.message());
  if (size > limit)
    throw Error(path + ": " + std::to_string(size) + " bytes, larger than the limit of " +
                std::to_string(limit));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open: " + errno_text());
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::uint64_t>(in.gcount()) != size)
    throw Error(path + ": read " + std::to_string(in.gcount()) + " of " + std::to_string(size) +
                " bytes");
  return text;
}

nlohmann::json read_json_file(const std::string& path, const char* what, std::uint64_t limit) {
  const std::string text = read_small_file(path, limit);
  return parse_untrusted_json_sorted(text.data(), text.data() + text.size(), path, what);
}

}  // namespace poslens
