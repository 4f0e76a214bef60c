#include "launcher/fleet/master_probe.h"

#include <iterator>

namespace dlaunch {
namespace {

proto::Probe probe_of(const std::vector<net::Candidate>& candidates, std::int32_t port,
                      std::int32_t timeout_ms) {
  proto::Probe probe;
  probe.port = port;
  probe.timeout_ms = timeout_ms;
  for (const auto& c : candidates) probe.addresses.push_back(c.address);
  return probe;
}

}  // namespace

MasterProbe::MasterProbe(std::vector<net::Candidate> candidates, std::int32_t port,
                         std::int32_t timeout_ms, std::size_t nodes,
                         std::size_t connections_in_flight)
    : candidates_(std::move(candidates)),
      probe_(probe_of(candidates_, port, timeout_ms)),
      rounds_(nodes, candidates_.size(), connections_in_flight) {}

std::vector<MasterProbe::Send> MasterProbe::sends(
    const std::vector<net::ProbeRounds::Request>& requests) const {
  std::vector<Send> out;
  out.reserve(requests.size());
  for (const auto& request : requests) {
    Send send{request.node, probe_};
    if (request.candidates.size() != candidates_.size()) {
      send.probe.addresses.clear();
      for (auto c : request.candidates) send.probe.addresses.push_back(candidates_[c].address);
    }
    out.push_back(std::move(send));
  }
  return out;
}

MasterProbe::Reply MasterProbe::start() {
  Reply reply;
  reply.sends = sends(rounds_.start());
  if (rounds_.in_rounds()) {
    reply.notes.push_back(
        {log::Level::debug, "probing in rounds: " + std::to_string(net::ProbeRounds::kScouts) +
                                " scout nodes try every address, then the others try the first "
                                "every scout reached"});
  }
  return reply;
}

std::vector<MasterProbe::Send> MasterProbe::on_joined(std::size_t node) {
  return sends(rounds_.on_joined(node));
}

MasterProbe::Reply MasterProbe::on_report(std::size_t node, const std::string& label,
                                          std::vector<net::ProbeOutcome> outcomes) {
  const std::size_t count = outcomes.size();
  auto answer = rounds_.on_report(node, std::move(outcomes));
  Reply reply;
  reply.sends = sends(answer.next);
  if (answer.malformed) {
    reply.notes.push_back({log::Level::warn, label + " answered the probe with " +
                                                 std::to_string(count) +
                                                 " results for a different number of addresses; "
                                                 "counted as reaching none"});
  }
  if (answer.retrying) {
    reply.notes.push_back(
        {log::Level::info, label + " reached none of node 0's addresses; it tries them once more"});
  }
  if (answer.reached_nothing) {
    std::string why = "no MASTER_ADDR can be reached by every node: " + label +
                      " reached none of node 0's addresses, twice:";
    for (std::size_t c = 0; c < answer.outcomes.size() && c < candidates_.size(); ++c) {
      why += "\n  " + candidates_[c].address + ": " +
             (answer.outcomes[c].error.empty() ? "not reached" : answer.outcomes[c].error);
    }
    why +=
        "\n(check its firewall and routes towards node 0, or name an address every node "
        "reaches with --master-addr)";
    reply.unreachable = std::move(why);
  }
  if (answer.fell_back) {
    const auto choice = rounds_.scouts_choice();
    reply.notes.push_back(
        {log::Level::info,
         choice ? label + " did not reach " + candidates_[*choice].address +
                      ", which every scout reached: every node now tries every address"
                : std::string("no address of node 0 was reached by every scout: every node now "
                              "tries every address")});
  }
  return reply;
}

MasterProbe::Reply MasterProbe::on_lost(std::size_t node) {
  Reply reply;
  reply.sends = sends(rounds_.on_lost(node).next);
  return reply;
}

std::vector<net::NodeProbe> MasterProbe::take_probes(std::vector<std::string> labels,
                                                     std::vector<net::Interfaces> interfaces) {
  auto outcomes = rounds_.take_outcomes();
  std::vector<net::NodeProbe> probes;
  probes.reserve(outcomes.size());
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    // A node that never reported (the probe was cut short) did not answer.
    std::optional<std::vector<net::ProbeOutcome>> reported;
    if (rounds_.reported(i)) reported = std::move(outcomes[i]);
    probes.push_back(
        net::node_probe(i < labels.size() ? std::move(labels[i]) : std::string(),
                        i < interfaces.size() ? std::move(interfaces[i]) : net::Interfaces{},
                        std::move(reported), candidates_.size()));
  }
  return probes;
}

std::vector<net::NodeProbe> node_probes(std::optional<MasterProbe>& probe,
                                        std::vector<std::string> labels,
                                        std::vector<net::Interfaces> interfaces) {
  if (probe) return probe->take_probes(std::move(labels), std::move(interfaces));
  std::vector<net::NodeProbe> probes;
  probes.reserve(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i)
    probes.push_back(net::node_probe(
        std::move(labels[i]), i < interfaces.size() ? std::move(interfaces[i]) : net::Interfaces{},
        std::nullopt, 0));
  return probes;
}

}  // namespace dlaunch
