#include "launcher/config/container_options.h"

#include <cctype>
#include <cstdint>

namespace dlaunch {

Result<void> check_mount(std::string_view text) {
  const std::string given = "--mount " + std::string(text);
  std::string_view rest = text;
  if (rest.ends_with(":ro") || rest.ends_with(":rw")) rest.remove_suffix(3);
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos)
    return fail(given + ": expected SRC:DST or SRC:DST:ro (e.g. /data/imagenet:/data:ro)");
  const auto source = rest.substr(0, colon);
  const auto target = rest.substr(colon + 1);
  if (!source.starts_with('/') || !target.starts_with('/'))
    return fail(given +
                ": both paths must be absolute (the same path names a different place on "
                "each host otherwise)");
  if (target.find(':') != std::string_view::npos)
    return fail(given + ": only :ro or :rw may follow DST");
  if (text.find(',') != std::string_view::npos)
    return fail(given + ": a path may not hold a comma");
  return {};
}

Result<void> check_shm_size(std::string_view text) {
  const std::string given = "--shm-size " + std::string(text);
  std::size_t digits = 0;
  std::uint64_t number = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
    if (number > (UINT64_MAX - 9) / 10) return fail(given + ": too large");
    number = number * 10 + static_cast<std::uint64_t>(text[digits] - '0');
    ++digits;
  }
  const auto unit = text.substr(digits);
  std::uint64_t scale = 0;
  if (unit.empty() || unit == "b" || unit == "B") scale = 1;
  if (unit == "k" || unit == "K") scale = 1ULL << 10;
  if (unit == "m" || unit == "M") scale = 1ULL << 20;
  if (unit == "g" || unit == "G") scale = 1ULL << 30;
  if (digits == 0 || scale == 0)
    return fail(given + ": expected a size like 16g, 512m or 1073741824 (units b, k, m, g)");
  if (number > UINT64_MAX / scale) return fail(given + ": too large");
  if (number * scale < (1ULL << 20))
    return fail(given + ": below 1m (PyTorch's data loaders die with SIGBUS on a small /dev/shm)");
  return {};
}

}  // namespace dlaunch
