#include "net/candidates.h"

#include <algorithm>

#include "common/address.h"

namespace dlaunch::net {
namespace {

void add(std::vector<Candidate>& out, Candidate c) {
  if (c.address.empty() || out.size() >= kMaxCandidates) return;
  const bool listed = std::any_of(out.begin(), out.end(),
                                  [&](const Candidate& o) { return o.address == c.address; });
  if (!listed) out.push_back(std::move(c));
}

}  // namespace

std::vector<Candidate> master_candidates(const CandidateSources& s) {
  std::vector<Candidate> out;
  add(out, {s.configured, CandidateSource::configured, "", InterfaceKind::other});
  const bool useless_elsewhere =
      dlaunch::is_loopback_address(s.node0_address) || is_link_local_address(s.node0_address);
  if (s.all_nodes_local || !useless_elsewhere)
    add(out, {s.node0_address, CandidateSource::hosts_file, "", InterfaceKind::other});

  struct Found {
    const NetInterface* interface;
    const InterfaceAddress* address;
  };
  std::vector<Found> found;
  for (const auto& i : s.node0_interfaces) {
    if (!i.up) continue;
    if (i.kind == InterfaceKind::loopback && !s.all_nodes_local) continue;
    for (const auto& a : i.addresses) {
      if (!is_link_local_address(a.address)) found.push_back({&i, &a});
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const Found& x, const Found& y) {
    if (x.interface->kind != y.interface->kind) return x.interface->kind < y.interface->kind;
    return !x.address->ipv6 && y.address->ipv6;
  });
  for (const auto& f : found)
    add(out,
        {f.address->address, CandidateSource::interface, f.interface->name, f.interface->kind});
  return out;
}

std::string describe(const Candidate& c, const CandidateSources& s) {
  switch (c.source) {
    case CandidateSource::configured:
      return s.configured_by.empty() ? std::string("the configured master address")
                                     : s.configured_by;
    case CandidateSource::hosts_file:
      return "node 0's address in the hosts file";
    case CandidateSource::interface:
      return "node 0's interface " + c.interface + " (" + std::string(to_string(c.kind)) + ")";
  }
  return "";
}

}  // namespace dlaunch::net
