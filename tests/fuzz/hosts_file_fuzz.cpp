// libFuzzer target: the TOML hosts-file loader. Invariants: no crash or
// sanitizer report; a failure always comes with at least one diagnostic, and
// every diagnostic names the file.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "launcher/config/hosts_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto result = dlaunch::parse_hosts_file(text, "fuzz.toml");
  if (auto* diagnostics = std::get_if<std::vector<dlaunch::Diagnostic>>(&result)) {
    if (diagnostics->empty()) std::abort();
    for (const auto& d : *diagnostics) {
      if (d.file != "fuzz.toml" || d.message.empty()) std::abort();
    }
  } else {
    for (const auto& host : std::get<dlaunch::HostsFile>(result).hosts) {
      if (host.address.empty()) std::abort();
    }
  }
  return 0;
}
