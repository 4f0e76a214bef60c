#include "launcher/output/terminal_filter.h"

namespace dlaunch {

bool TerminalFilter::shows(int rank, int local_rank, proto::Stream stream) const {
  if (!ranks.empty() && !ranks.contains(rank)) return false;
  if (!local_ranks.empty() && !local_ranks.contains(local_rank)) return false;
  const auto it = hidden_streams_by_local_rank.find(local_rank);
  const int hidden = it != hidden_streams_by_local_rank.end() ? it->second : hidden_streams;
  const int bit = stream == proto::Stream::err ? 2 : 1;
  return (hidden & bit) == 0;
}

}  // namespace dlaunch
