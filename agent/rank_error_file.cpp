#include "agent/rank_error_file.h"

#include <fstream>
#include <sstream>

#include "common/json.h"
#include "protocol/messages.h"

namespace dlaunch {

std::string read_rank_error(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string json(1 << 20, '\0');
  in.read(json.data(), static_cast<std::streamsize>(json.size()));
  json.resize(static_cast<std::size_t>(in.gcount()));
  auto text = json_string_member(json, "py_callstack");
  if (!text || text->empty()) text = json_string_member(json, "message");
  if (!text) return {};
  while (!text->empty() && text->back() == '\n') text->pop_back();
  if (text->size() > proto::kMaxRankError) {
    const std::string cut = "...\n";
    *text = cut + text->substr(text->size() - (proto::kMaxRankError - cut.size()));
  }
  return *text;
}

}  // namespace dlaunch
