#include "core/base/untrusted_json.h"

#include <filesystem>
#include <fstream>
#include <unordered_set>
#include <vector>

#include "core/base/error.h"
#include "core/base/text.h"

namespace poslens {

nlohmann::ordered_json parse_untrusted_json(const char* begin, const char* end,
                                            const std::string& where, const char* what) {
  using ojson = nlohmann::ordered_json;
  std::vector<std::unordered_set<std::string>> open_objects;  // keys seen per open object
  int depth = 0;
  auto check = [&](int /*depth*/, ojson::parse_event_t event, ojson& parsed) -> bool {
    switch (event) {
      case ojson::parse_event_t::object_start:
      case ojson::parse_event_t::array_start:
        if (++depth > kMaxJsonDepth)
          throw Error(where + ": " + what + " nests deeper than " + std::to_string(kMaxJsonDepth) +
                      " levels");
        if (event == ojson::parse_event_t::object_start) open_objects.emplace_back();
        break;
      case ojson::parse_event_t::object_end:
        --depth;
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case ojson::parse_event_t::array_end:
        --depth;
        break;
      case ojson::parse_event_t::key:
        if (!open_objects.empty() && parsed.is_string() &&
            !open_objects.back().insert(parsed.get_ref<const std::string&>()).second)
          throw Error(where + ": " + what + " has the key " +
                      quoted(parsed.get_ref<const std::string&>()) + " twice in one object");
        break;
      case ojson::parse_event_t::value:
        break;
    }
    return true;
  };
  try {
    return ojson::parse(begin, end, check, /*allow_exceptions=*/true);
  } catch (const ojson::exception& e) {
    throw Error(where + ": " + what + " is not valid UTF-8 JSON: " + e.what());
  }
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
  // Validated with the limits first; the plain parse of the same bytes then cannot fail.
  parse_untrusted_json(text.data(), text.data() + text.size(), path, what);
  return nlohmann::json::parse(text);
}

}  // namespace poslens
