#include "launcher/hang/stacks_gathering.h"

#include <algorithm>

namespace dlaunch {

StacksGathering::StacksGathering(int id, std::vector<Asked> asked)
    : id_(id), asked_(std::move(asked)) {
  for (const auto& a : asked_) {
    waiting_.insert(a.conn);
    by_conn_[a.conn] = &a;
  }
}

bool StacksGathering::on_report(ConnId conn, const proto::StacksReport& report) {
  if (report.id != id_ || !waiting_.contains(conn)) return false;
  if (report.rank < 0) {
    waiting_.erase(conn);
    return complete();
  }
  const auto& ranks = by_conn_.at(conn)->ranks;
  if (std::find(ranks.begin(), ranks.end(), report.rank) != ranks.end())
    reports_[report.rank] = report;
  return false;
}

bool StacksGathering::on_gone(ConnId conn) {
  if (waiting_.erase(conn) == 0) return false;
  lost_.insert(conn);
  return complete();
}

std::vector<RankStack> StacksGathering::stacks() const {
  std::vector<RankStack> out;
  for (const auto& a : asked_) {
    for (int rank : a.ranks) {
      RankStack s;
      s.rank = rank;
      s.host = a.host;
      const auto it = reports_.find(rank);
      s.answered = it != reports_.end();
      if (s.answered) s.report = it->second;
      s.host_lost = !s.answered && (lost_.contains(a.conn) || waiting_.contains(a.conn));
      out.push_back(std::move(s));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const RankStack& x, const RankStack& y) { return x.rank < y.rank; });
  return out;
}

}  // namespace dlaunch
