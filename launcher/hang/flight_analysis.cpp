#include "launcher/hang/flight_analysis.h"

#include <chrono>

#include "common/captured_command.h"
#include "common/posix.h"
#include "common/text.h"

namespace dlaunch {
namespace {

constexpr std::chrono::seconds kAnalyzerTime{60};
constexpr const char* kModule = "torch.distributed.flight_recorder.fr_trace";

// Lines of the report that say what went wrong, as torchfrtrace words them.
constexpr std::string_view kFindingMarks[] = {
    "not all ranks", "missing ranks",  "collective:",     "mismatch",
    "group info",    "expected ranks", "collective state"};

bool is_finding(std::string_view line) {
  const std::string lower = ascii_lower(line);
  for (const auto mark : kFindingMarks)
    if (lower.find(mark) != std::string::npos) return true;
  return false;
}

}  // namespace

FlightAnalysis analyze_flight_records(const std::string& dir) {
  FlightAnalysis a;
  std::vector<std::string> argv;
  if (!find_on_path("torchfrtrace").empty()) {
    a.tool = "torchfrtrace";
    argv = {"torchfrtrace", "--prefix", kFlightDumpPrefix, dir};
  } else if (!find_on_path("python3").empty()) {
    a.tool = std::string("python3 -m ") + kModule;
    argv = {"python3", "-m", kModule, "--prefix", kFlightDumpPrefix, dir};
  } else {
    a.error = "no torchfrtrace or python3 on this machine's PATH";
    return a;
  }
  const auto run = run_captured(argv, kAnalyzerTime, 256 * 1024);
  a.text = run.out + run.err;
  if (!run.ok()) {
    a.error = a.tool + " failed: " + last_words(run);
    if (a.text.find("No module named") != std::string::npos)
      a.error = "no analyzer here: torchfrtrace is not on PATH and this python3's torch has no " +
                std::string(kModule) + " (torch 2.4 or later)";
    return a;
  }
  a.ran = true;
  return a;
}

std::vector<std::string> flight_findings(const std::string& report, std::size_t max_lines) {
  std::vector<std::string> out;
  for (const auto& line : split_lines(report)) {
    if (out.size() >= max_lines) break;
    const auto text = trim(line);
    if (!text.empty() && is_finding(text)) out.emplace_back(text);
  }
  return out;
}

}  // namespace dlaunch
