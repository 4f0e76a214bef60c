#include "net/choice.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace dlaunch::net {
namespace {

// Warnings beyond this many are counted, not listed: a fleet of identical
// hosts would otherwise print the same line thousands of times.
constexpr std::size_t kMaxWarnings = 10;
constexpr std::size_t kMaxHostsPerLine = 5;

const ProbeOutcome* outcome(const NodeProbe& node, std::size_t c) {
  if (!node.answered || c >= node.outcomes.size()) return nullptr;
  return &node.outcomes[c];
}

bool reached(const NodeProbe& node, std::size_t c) {
  const auto* o = outcome(node, c);
  return o != nullptr && o->reached;
}

std::string milliseconds(std::int32_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", static_cast<double>(us) / 1000.0);
  return text;
}

std::string cell(const NodeProbe& node, std::size_t c) {
  if (!node.answered) return "no answer";
  const auto* o = outcome(node, c);
  if (o == nullptr) return "not probed";
  if (o->reached) return "ok " + milliseconds(o->rtt_us);
  return o->error.empty() ? std::string("not reached") : o->error;
}

// One table: a row per node, a column per candidate.
void table(std::ostringstream& out, const std::vector<Candidate>& candidates,
           const std::vector<NodeProbe>& nodes, const std::vector<std::size_t>& rows,
           std::size_t hidden, const char* hidden_what) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header{"node", "host"};
  for (const auto& c : candidates) header.push_back(c.address);
  cells.push_back(header);
  for (auto i : rows) {
    std::vector<std::string> row{std::to_string(i), nodes[i].label};
    for (std::size_t c = 0; c < candidates.size(); ++c) row.push_back(cell(nodes[i], c));
    cells.push_back(std::move(row));
  }
  std::vector<std::size_t> width(header.size(), 0);
  for (const auto& row : cells) {
    for (std::size_t k = 0; k < row.size(); ++k) width[k] = std::max(width[k], row[k].size());
  }
  for (const auto& row : cells) {
    std::string line = " ";
    for (std::size_t k = 0; k < row.size(); ++k) {
      line += " " + row[k];
      if (k + 1 < row.size()) line.append(width[k] - row[k].size() + 1, ' ');
    }
    out << line << "\n";
  }
  if (hidden > 0) out << "  ... and " << hidden << " more " << hidden_what << "\n";
}

void candidate_lines(std::ostringstream& out, const std::vector<Candidate>& candidates,
                     const CandidateSources& sources, const std::vector<NodeProbe>& nodes,
                     std::optional<std::size_t> chosen) {
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    std::size_t count = 0;
    std::vector<std::string> missing;
    for (const auto& node : nodes) {
      if (reached(node, c)) {
        ++count;
      } else if (missing.size() <= kMaxHostsPerLine) {
        missing.push_back(node.label + " (" + cell(node, c) + ")");
      }
    }
    out << "  " << c + 1 << ". " << candidates[c].address << ", "
        << describe(candidates[c], sources) << ": reached by " << count << "/" << nodes.size()
        << " nodes";
    if (chosen && *chosen == c) out << "  <- chosen";
    out << "\n";
    if (missing.empty()) continue;
    out << "     not reached from ";
    for (std::size_t k = 0; k < missing.size() && k < kMaxHostsPerLine; ++k)
      out << (k ? ", " : "") << missing[k];
    const std::size_t rest = nodes.size() - count;
    if (rest > kMaxHostsPerLine) out << " and " << rest - kMaxHostsPerLine << " more";
    out << "\n";
  }
}

std::vector<std::string> route_warnings(const std::string& master,
                                        const std::vector<NodeProbe>& nodes,
                                        const std::vector<std::string>& interface_by_node) {
  std::vector<const NetInterface*> used(nodes.size(), nullptr);
  bool all_loopback = true;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& itf : nodes[i].interfaces) {
      if (itf.name == interface_by_node[i]) used[i] = &itf;
    }
    all_loopback = all_loopback && used[i] && used[i]->kind == InterfaceKind::loopback;
  }
  std::vector<std::string> out;
  std::size_t more = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NetInterface* itf = used[i];
    if (itf == nullptr) continue;
    std::string text;
    const std::string where = "host " + nodes[i].label + ": the route to MASTER_ADDR " + master +
                              " leaves by " + itf->name;
    if (itf->kind == InterfaceKind::loopback && !all_loopback) {
      text = where + ", a loopback interface, while other nodes are other machines";
    } else if (itf->kind == InterfaceKind::virtual_) {
      text = where +
             ", a virtual interface (container or VM bridge): NCCL and Gloo will use it; "
             "set `interface` for this host in the hosts file if that is wrong";
    } else if (itf->kind == InterfaceKind::tunnel && itf->mtu > 0 && itf->mtu < 1500) {
      text =
          where + ", a tunnel with MTU " + std::to_string(itf->mtu) +
          ": if collectives stall on large messages, the path drops big packets (let ICMP "
          "'fragmentation needed' through or clamp the TCP MSS on the tunnel); NCCL_IB_DISABLE=1 "
          "keeps NCCL on sockets, and NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4 help on "
          "long links";
    }
    if (text.empty()) continue;
    if (out.size() < kMaxWarnings) {
      out.push_back(std::move(text));
    } else {
      ++more;
    }
  }
  if (more > 0)
    out.push_back("and " + std::to_string(more) + " more hosts with a route like the ones above");
  return out;
}

}  // namespace

NodeProbe node_probe(std::string label, Interfaces interfaces,
                     std::optional<std::vector<ProbeOutcome>> outcomes, std::size_t candidates) {
  NodeProbe p;
  p.label = std::move(label);
  p.interfaces = std::move(interfaces);
  p.answered = outcomes.has_value() && outcomes->size() == candidates;
  if (p.answered) p.outcomes = std::move(*outcomes);
  return p;
}

ChoiceResult choose_master(const std::vector<Candidate>& candidates,
                           const CandidateSources& sources, const std::vector<NodeProbe>& nodes) {
  ChoiceResult result;
  std::optional<std::size_t> chosen;
  for (std::size_t c = 0; c < candidates.size() && !chosen; ++c) {
    const bool all =
        std::all_of(nodes.begin(), nodes.end(), [c](const NodeProbe& n) { return reached(n, c); });
    if (all) chosen = c;
  }
  std::ostringstream out;
  const std::string node0 = nodes.empty() ? std::string("?") : nodes.front().label;
  if (chosen) {
    MasterChoice choice;
    choice.candidate = *chosen;
    choice.address = candidates[*chosen].address;
    for (const auto& node : nodes)
      choice.interface_by_node.push_back(outcome(node, *chosen)->interface);
    choice.warnings = route_warnings(choice.address, nodes, choice.interface_by_node);
    out << "MASTER_ADDR " << choice.address << ": the first of node 0's addresses that every node "
        << "reached (" << describe(candidates[*chosen], sources) << ")\n";
    candidate_lines(out, candidates, sources, nodes, chosen);
    std::vector<std::size_t> rows;
    for (std::size_t i = 0; i < nodes.size() && rows.size() < kMaxReportRows; ++i)
      rows.push_back(i);
    table(out, candidates, nodes, rows, nodes.size() - rows.size(), "nodes");
    out << "  interfaces:";
    for (std::size_t i = 0; i < nodes.size() && i < kMaxReportRows; ++i) {
      const auto& name = choice.interface_by_node[i];
      out << " " << nodes[i].label << "=" << (name.empty() ? "?" : name);
    }
    if (nodes.size() > kMaxReportRows) out << " ...";
    out << "\n";
    result.choice = std::move(choice);
  } else {
    out << "no address of node 0 (" << node0 << ") was reached by every node, so no rank was "
        << "started.\n";
    if (candidates.empty()) out << "  node 0 reported no usable address\n";
    candidate_lines(out, candidates, sources, nodes, std::nullopt);
    std::vector<std::size_t> rows;
    std::size_t failing = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      bool all = true;
      for (std::size_t c = 0; c < candidates.size(); ++c) all = all && reached(nodes[i], c);
      if (all) continue;
      ++failing;
      if (rows.size() < kMaxReportRows) rows.push_back(i);
    }
    table(out, candidates, nodes, rows, failing - rows.size(), "nodes that missed a candidate");
    out << "Every node must open TCP connections to node 0 (MASTER_PORT and the ports "
           "torch.distributed uses): fix the route or firewall, or set `master_address` under "
           "[rendezvous] in the hosts file (--master-addr) to an address of node 0 that every node "
           "reaches.";
  }
  result.report = out.str();
  return result;
}

}  // namespace dlaunch::net
