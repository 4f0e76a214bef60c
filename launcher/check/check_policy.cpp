#include "launcher/check/check_policy.h"

#include <algorithm>
#include <utility>

#include "common/posix.h"

namespace dlaunch {
namespace {

bool is_v6(const std::string& address) {
  return address.find(':') != std::string::npos;
}

// The first address of `interface_name` of the family of `like`, not link-local.
std::string address_on(const net::Interfaces& interfaces, const std::string& interface_name,
                       const std::string& like) {
  for (const auto& itf : interfaces) {
    if (itf.name != interface_name) continue;
    for (const auto& a : itf.addresses) {
      if (a.ipv6 == is_v6(like) && !net::is_link_local_address(a.address)) return a.address;
    }
  }
  return "";
}

std::string seconds_text(std::chrono::milliseconds ms) {
  return std::to_string((ms.count() + 999) / 1000) + " s";
}

}  // namespace

std::vector<TestAddress> test_addresses(const std::vector<net::Candidate>& candidates,
                                        std::optional<std::size_t> candidate,
                                        const std::vector<const net::Interfaces*>& interfaces,
                                        const std::vector<const net::NodeProbe*>& probes) {
  std::vector<TestAddress> out(interfaces.size());
  std::string master;
  if (candidate && *candidate < candidates.size()) master = candidates[*candidate].address;
  for (std::size_t i = 0; i < interfaces.size(); ++i) {
    if (interfaces[i] == nullptr) continue;
    const net::Interfaces& own = *interfaces[i];
    if (i == 0 && !master.empty()) {
      out[0].address = master;
      if (const auto* itf = net::interface_with_address(own, master)) out[0].interface = itf->name;
      continue;
    }
    if (!master.empty() && probes[i] != nullptr && probes[i]->answered &&
        *candidate < probes[i]->outcomes.size()) {
      const auto& name = probes[i]->outcomes[*candidate].interface;
      const auto address = address_on(own, name, master);
      if (!address.empty()) {
        out[i] = {address, name};
        continue;
      }
    }
    // No route to node 0 known: the host's best address, as if it were node 0.
    net::CandidateSources sources;
    sources.node0_interfaces = own;
    const auto best = net::master_candidates(sources);
    if (!best.empty()) out[i] = {best.front().address, best.front().interface};
  }
  return out;
}

CheckPolicy::CheckPolicy(Config config)
    : config_(std::move(config)), rendezvous_([this] {
        RendezvousState::Config rdzv;
        rdzv.nnodes = static_cast<int>(config_.hosts.size());
        rdzv.job = "check";
        rdzv.hold_for_network = true;  // never assigns: nothing is launched
        for (const auto& h : config_.hosts) rdzv.node_names.push_back(h.name);
        return rdzv;
      }()) {
  nodes_.resize(config_.hosts.size());
  for (const auto& h : config_.hosts) {
    HostCheck row;
    row.name = h.name;
    row.address = h.address;
    row.error = "did not join";
    result_.hosts.push_back(std::move(row));
  }
  if (config_.facts_only) return;
  const int n = static_cast<int>(nodes_.size());
  const auto plan = [this](int from, int to) {
    result_.pairs.push_back({from, to, false, {}, "not tested"});
  };
  if (samples_pairs(config_.matrix_pairs, n)) {
    result_.sampled_strides = sampled_strides(n);
    for (const auto& [a, b] : sampled_pairs(n)) {
      plan(a, b);
      plan(b, a);
    }
    // In find_pair's order, as every pair's loop below gives it.
    std::ranges::sort(result_.pairs, {}, [](const PairCheck& p) {
      return std::pair{p.from, p.to};
    });
    return;
  }
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a != b) plan(a, b);
    }
  }
}

CheckActions CheckPolicy::take() {
  return std::exchange(out_, {});
}

std::optional<int> CheckPolicy::node_of(ConnId conn) const {
  auto it = node_of_conn_.find(conn);
  if (it == node_of_conn_.end()) return std::nullopt;
  return it->second;
}

const std::string& CheckPolicy::node_label(int node) const {
  return config_.hosts[static_cast<std::size_t>(node)].name;
}

// A pair of the rounds, which are made of planned pairs only.
PairCheck& CheckPolicy::pair(int from, int to) {
  return *find_pair(result_, from, to);
}

bool CheckPolicy::up(int node) const {
  const auto& n = nodes_[static_cast<std::size_t>(node)];
  return n.facts_done && !n.down;
}

CheckActions CheckPolicy::start() {
  emit(check_action::ArmTimer{CheckTimer::join, config_.join_timeout});
  if (nodes_.empty()) stop_all();
  return take();
}

CheckActions CheckPolicy::on_join(ConnId conn, const proto::Join& join, std::int64_t now_us) {
  if (phase_ != Phase::joining) {
    emit(check_action::Send{conn, proto::Reject{"the check has moved on without this agent"}});
    emit(check_action::CloseConnection{conn, "joined too late"});
    return take();
  }
  for (auto& o : rendezvous_.on_join(conn, join)) {
    if (const auto* reject = std::get_if<proto::Reject>(&o.message)) {
      log(log::Level::warn, "refused an agent: " + reject->reason);
      emit(check_action::Send{o.to, o.message});
      emit(check_action::CloseConnection{o.to, "rejected"});
    }
  }
  const auto* member = rendezvous_.member(conn);
  if (member == nullptr) return take();
  const int index = member->index;
  auto& node = nodes_[static_cast<std::size_t>(index)];
  if (node.down) {  // given up on already (its agent failed or it was too slow)
    emit(check_action::Send{conn, proto::Stop{1, false, 0, "the check gave up on this host"}});
    return take();
  }
  node_of_conn_[conn] = index;
  node.conn = conn;
  node.probe_port = join.probe_port;
  node.interfaces = join.interfaces;
  node.facts_sent_us = now_us;
  log(log::Level::debug, node_label(index) + " joined; asking for its facts");
  emit(check_action::Send{conn, proto::FactsRequest{}});
  return take();
}

CheckActions CheckPolicy::on_message(ConnId conn, const proto::Message& message,
                                     std::int64_t now_us) {
  const auto index = node_of(conn);
  if (!index || phase_ == Phase::done) return {};
  if (const auto* facts = std::get_if<proto::HostFacts>(&message)) {
    on_facts(*index, *facts, now_us);
  } else if (const auto* report = std::get_if<proto::ProbeReport>(&message)) {
    on_probe_report(*index, *report);
  } else if (const auto* peers = std::get_if<proto::PeerTestReport>(&message)) {
    on_peer_report(*index, *peers);
  } else if (const auto* nccl = std::get_if<proto::NcclReport>(&message)) {
    on_nccl_report(*index, *nccl);
  }
  return take();
}

void CheckPolicy::on_facts(int index, const proto::HostFacts& facts, std::int64_t now_us) {
  auto& node = nodes_[static_cast<std::size_t>(index)];
  if (phase_ != Phase::joining || node.facts_done || node.down) return;
  node.facts_done = true;
  ++settled_;
  auto& row = result_.hosts[static_cast<std::size_t>(index)];
  row.up = true;
  row.error.clear();
  row.facts = facts;
  // The agent read its clock between our send and our receive: halfway is
  // the best guess, and half the round trip the bound.
  const std::int64_t rtt = std::max<std::int64_t>(0, now_us - node.facts_sent_us);
  row.clock_skew_us = facts.wall_clock_us - (node.facts_sent_us + rtt / 2);
  row.clock_uncertainty_us = rtt / 2;
  advance();
}

void CheckPolicy::on_probe_report(int index, const proto::ProbeReport& report) {
  if (phase_ != Phase::probing || !probe_ || !up(index)) return;
  apply_probe_reply(
      probe_->on_report(static_cast<std::size_t>(index), node_label(index), report.outcomes));
}

// MasterProbe asks only hosts that have joined and are not lost: each has a connection.
void CheckPolicy::send_probes(std::vector<MasterProbe::Send> sends) {
  for (auto& send : sends) emit(check_action::Send{*nodes_[send.node].conn, std::move(send.probe)});
}

// A job would fail where the reply says no address is reachable by every
// host; the check reports it and goes on to the matrix.
void CheckPolicy::apply_probe_reply(MasterProbe::Reply reply) {
  for (auto& n : reply.notes) log(n.level, std::move(n.text));
  send_probes(std::move(reply.sends));
  if (reply.unreachable) {
    probe_failure_ = std::move(*reply.unreachable);
    choose_and_plan_matrix();
    return;
  }
  if (probe_->complete()) {
    choose_and_plan_matrix();
    return;
  }
  // Each answer lets the next hosts go: the time runs from the latest one.
  emit(check_action::ArmTimer{CheckTimer::probe,
                              std::chrono::milliseconds(config_.probe_timeout_ms + 5000)});
}

void CheckPolicy::on_peer_report(int index, const proto::PeerTestReport& report) {
  if (phase_ != Phase::testing || report.round != static_cast<std::int32_t>(round_) ||
      !owed_.count(index))
    return;
  owed_.erase(index);
  for (const auto& r : report.results) {
    if (r.node < 0 || r.node >= static_cast<int>(nodes_.size()) || r.node == index) continue;
    auto* p = find_pair(result_, index, r.node);
    if (p == nullptr) continue;  // not a pair this check asked for
    p->tested = true;
    p->result = r;
    p->untested.clear();
  }
  advance();
}

void CheckPolicy::mark_down(int index, const std::string& why) {
  auto& node = nodes_[static_cast<std::size_t>(index)];
  if (node.down) return;
  node.down = true;
  if (!node.facts_done) ++settled_;
  auto& row = result_.hosts[static_cast<std::size_t>(index)];
  row.up = false;
  row.error = why;
  log(log::Level::debug, node_label(index) + " is down: " + why);
  if (phase_ == Phase::probing && probe_) {
    // Waited for no more; the probe may be complete without it (advance()).
    send_probes(probe_->on_lost(static_cast<std::size_t>(index)).sends);
  }
  if (phase_ == Phase::collective && node.nccl_first_rank >= 0) {
    end_nccl(node_label(index) + " went down: " + why);
    return;
  }
  if (owed_.erase(index) > 0) {
    for (const auto& [a, b] : rounds_.empty() ? PairRound{} : rounds_[round_]) {
      if (a == index || b == index) {
        const int other = a == index ? b : a;
        if (!pair(index, other).tested)
          pair(index, other).untested = node_label(index) + " went down";
      }
    }
  }
}

CheckActions CheckPolicy::on_connection_closed(ConnId conn, const std::string& reason) {
  const auto index = node_of(conn);
  if (!index || phase_ == Phase::done) return {};
  auto& node = nodes_[static_cast<std::size_t>(*index)];
  node.conn_closed = true;
  if (phase_ == Phase::stopping) return take();
  mark_down(*index, "lost its agent's connection: " + reason);
  if (!node.agent_gone) emit(check_action::KillAgent{*index});
  advance();
  return take();
}

CheckActions CheckPolicy::on_agent_exited(int index, int exit_code, const std::string& error,
                                          const std::string& stderr_tail) {
  if (phase_ == Phase::done) return {};
  auto& node = nodes_[static_cast<std::size_t>(index)];
  if (!node.agent_gone) ++agents_gone_;
  node.agent_gone = true;
  if (phase_ == Phase::stopping) {
    check_finished();
    return take();
  }
  std::string why = error;
  // The report names the host before its error; transports' errors start
  // with it already.
  if (const std::string named = node_label(index) + ": "; why.starts_with(named))
    why.erase(0, named.size());
  if (why.empty()) {
    why = "its agent exited with code " + std::to_string(exit_code);
    if (!stderr_tail.empty()) why += ": " + stderr_tail;
  }
  mark_down(index, why);
  advance();
  return take();
}

CheckActions CheckPolicy::on_timer(CheckTimer timer) {
  switch (timer) {
    case CheckTimer::join:
      if (phase_ != Phase::joining) break;
      for (std::size_t i = 0; i < nodes_.size(); ++i) {
        auto& n = nodes_[i];
        if (n.facts_done || n.down) continue;
        mark_down(
            static_cast<int>(i),
            (n.conn ? "joined but did not answer within " : "its agent did not join within ") +
                seconds_text(config_.join_timeout) +
                (n.conn ? "" : " (can the host reach this machine's rendezvous port?)"));
        if (!n.agent_gone) emit(check_action::KillAgent{static_cast<int>(i)});
      }
      advance();
      break;
    case CheckTimer::probe:
      if (phase_ != Phase::probing) break;
      // Hosts that did not answer count as reaching nothing.
      choose_and_plan_matrix();
      break;
    case CheckTimer::round:
      if (phase_ != Phase::testing) break;
      end_round("no report within the round's time");
      break;
    case CheckTimer::nccl:
      if (phase_ != Phase::collective) break;
      {
        std::string late;
        for (int node : owed_) late += (late.empty() ? "" : ", ") + node_label(node);
        end_nccl("no answer within " + seconds_text(config_.nccl_timeout) + " from " + late);
      }
      break;
    case CheckTimer::stop:
      if (phase_ != Phase::stopping) break;
      for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (nodes_[i].agent_gone) continue;
        log(log::Level::warn,
            "agent on " + node_label(static_cast<int>(i)) + " did not exit in time; killing it");
        emit(check_action::KillAgent{static_cast<int>(i)});
      }
      phase_ = Phase::done;
      emit(check_action::Finish{});
      break;
  }
  return take();
}

CheckActions CheckPolicy::on_signal(int signal) {
  if (phase_ == Phase::done) return {};
  result_.interrupted = true;
  if (phase_ == Phase::stopping) {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (!nodes_[i].agent_gone) emit(check_action::KillAgent{static_cast<int>(i)});
    }
    phase_ = Phase::done;
    emit(check_action::Finish{});
    return take();
  }
  log(log::Level::warn, "received " + signal_name(signal) + ": stopping the agents");
  if (result_.master_report.empty())
    result_.master_report = "interrupted before MASTER_ADDR was chosen\n";
  stop_all();
  return take();
}

void CheckPolicy::advance() {
  switch (phase_) {
    case Phase::joining:
      if (settled_ < nodes_.size()) return;
      if (config_.facts_only) {
        stop_all();
        return;
      }
      start_probe();
      return;
    case Phase::probing:
      if (probe_ && probe_->complete()) choose_and_plan_matrix();
      return;
    case Phase::testing:
      if (owed_.empty()) next_round();
      return;
    default:
      return;
  }
}

void CheckPolicy::start_probe() {
  phase_ = Phase::probing;
  const int n = static_cast<int>(nodes_.size());
  if (n == 0 || !up(0)) {
    result_.master_report = "MASTER_ADDR: none, node 0 (" + (n ? node_label(0) : std::string("?")) +
                            ") is down, so nothing could be probed\n";
    choose_and_plan_matrix();
    return;
  }
  config_.master_sources.node0_interfaces = nodes_[0].interfaces;
  candidates_ = net::master_candidates(config_.master_sources);
  if (nodes_[0].probe_port == 0 || candidates_.empty()) {
    choose_and_plan_matrix();
    return;
  }
  log(log::Level::debug, "probing " + std::to_string(candidates_.size()) +
                             " candidate MASTER_ADDRs of node 0 from every host");
  probe_.emplace(candidates_, nodes_[0].probe_port, config_.probe_timeout_ms, nodes_.size());
  for (int i = 0; i < n; ++i) {
    if (up(i)) {
      probe_->on_joined(static_cast<std::size_t>(i));
    } else {
      probe_->on_lost(static_cast<std::size_t>(i));
    }
  }
  apply_probe_reply(probe_->start());
}

void CheckPolicy::choose_and_plan_matrix() {
  phase_ = Phase::testing;
  const int n = static_cast<int>(nodes_.size());
  std::vector<std::string> labels;
  std::vector<net::Interfaces> reported;
  for (int i = 0; i < n; ++i) {
    labels.push_back(node_label(i));
    reported.push_back(nodes_[static_cast<std::size_t>(i)].interfaces);
  }
  std::vector<net::NodeProbe> probes = node_probes(probe_, std::move(labels), std::move(reported));
  probe_.reset();
  std::vector<net::NodeProbe> up_probes;
  for (int i = 0; i < n; ++i) {
    if (up(i)) up_probes.push_back(probes[static_cast<std::size_t>(i)]);
  }
  std::optional<std::size_t> tested_candidate;
  if (up(0) && !candidates_.empty()) {
    auto choice = net::choose_master(candidates_, config_.master_sources, up_probes);
    result_.master_report = choice.report;
    if (!probe_failure_.empty()) {
      // Cut short: the others' outcomes are partly "not tried", and what a job
      // would say is this.
      choice.choice.reset();
      result_.master_report = "MASTER_ADDR: none. " + probe_failure_ + "\n";
    }
    if (choice.choice) {
      result_.master_chosen = true;
      result_.master_addr = choice.choice->address;
      result_.master_warnings = choice.choice->warnings;
      tested_candidate = choice.choice->candidate;
    } else {
      // The peers are still tested, at the address most hosts reached.
      std::size_t best = 0, best_count = 0;
      for (std::size_t c = 0; c < candidates_.size(); ++c) {
        std::size_t count = 0;
        for (const auto& p : up_probes) count += p.answered && p.outcomes[c].reached ? 1 : 0;
        if (count > best_count) {
          best = c;
          best_count = count;
        }
      }
      tested_candidate = best;
    }
  } else if (up(0)) {
    result_.master_report = "MASTER_ADDR: none, node 0 (" + node_label(0) +
                            (nodes_[0].probe_port == 0 ? ") could not open a probe port\n"
                                                       : ") reported no usable address\n");
  }
  std::vector<const net::Interfaces*> interfaces(static_cast<std::size_t>(n), nullptr);
  std::vector<const net::NodeProbe*> probe_ptrs(static_cast<std::size_t>(n), nullptr);
  for (int i = 0; i < n; ++i) {
    if (!up(i)) continue;
    interfaces[static_cast<std::size_t>(i)] = &nodes_[static_cast<std::size_t>(i)].interfaces;
    probe_ptrs[static_cast<std::size_t>(i)] = &probes[static_cast<std::size_t>(i)];
  }
  const auto addresses = test_addresses(candidates_, tested_candidate, interfaces, probe_ptrs);
  std::vector<int> testable;
  std::vector<bool> is_testable(static_cast<std::size_t>(n), false);
  for (int i = 0; i < n; ++i) {
    auto& row = result_.hosts[static_cast<std::size_t>(i)];
    row.test_address = addresses[static_cast<std::size_t>(i)].address;
    row.interface = addresses[static_cast<std::size_t>(i)].interface;
    if (up(i) && !row.test_address.empty() && nodes_[static_cast<std::size_t>(i)].probe_port != 0) {
      testable.push_back(i);
      is_testable[static_cast<std::size_t>(i)] = true;
    }
  }
  for (auto& p : result_.pairs) {
    const auto why = [&](int node) -> std::string {
      if (!up(node)) return node_label(node) + " is down";
      if (result_.hosts[static_cast<std::size_t>(node)].test_address.empty())
        return node_label(node) + " has no address to test";
      return node_label(node) + " has no probe port";
    };
    const bool from_ok = is_testable[static_cast<std::size_t>(p.from)];
    const bool to_ok = is_testable[static_cast<std::size_t>(p.to)];
    if (!from_ok) p.untested = why(p.from);
    if (from_ok && !to_ok) p.untested = why(p.to);
  }
  if (result_.sampled_strides.empty()) {
    rounds_ = pair_rounds(testable);
  } else {
    std::vector<std::pair<int, int>> pairs;
    for (const auto& p : result_.pairs) {
      if (p.from < p.to && is_testable[static_cast<std::size_t>(p.from)] &&
          is_testable[static_cast<std::size_t>(p.to)])
        pairs.emplace_back(p.from, p.to);
    }
    rounds_ = disjoint_rounds(pairs);
  }
  result_.duration_ms =
      static_cast<std::int32_t>(round_duration(rounds_.size(), config_.matrix_budget,
                                               config_.shortest_round, config_.longest_round)
                                    .count());
  round_ = 0;
  owed_.clear();
  if (rounds_.empty()) {
    after_matrix();
    return;
  }
  // next_round() starts at round_ without advancing first.
  round_ = static_cast<std::size_t>(-1);
  next_round();
}

void CheckPolicy::next_round() {
  for (;;) {
    ++round_;
    if (round_ >= rounds_.size()) {
      after_matrix();
      return;
    }
    owed_.clear();
    for (const auto& [a, b] : rounds_[round_]) {
      if (!up(a) || !up(b)) {
        for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}})
          pair(x, y).untested = node_label(up(a) ? b : a) + " went down";
        continue;
      }
      for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
        proto::PeerTest test;
        test.round = static_cast<std::int32_t>(round_);
        test.duration_ms = result_.duration_ms;
        test.timeout_ms = config_.connect_timeout_ms;
        const auto& target = result_.hosts[static_cast<std::size_t>(to)];
        test.targets.push_back(
            {to, target.test_address, nodes_[static_cast<std::size_t>(to)].probe_port});
        emit(check_action::Send{*nodes_[static_cast<std::size_t>(from)].conn, std::move(test)});
        owed_.insert(from);
      }
    }
    if (owed_.empty()) continue;
    emit(check_action::ArmTimer{
        CheckTimer::round,
        std::chrono::milliseconds(result_.duration_ms + config_.connect_timeout_ms + 5000)});
    return;
  }
}

void CheckPolicy::end_round(const std::string& why_missing) {
  for (int node : owed_) {
    for (const auto& [a, b] : rounds_[round_]) {
      if (a == node || b == node) pair(node, a == node ? b : a).untested = why_missing;
    }
  }
  owed_.clear();
  next_round();
}

void CheckPolicy::after_matrix() {
  if (config_.nccl && !result_.interrupted) {
    start_nccl();
  } else {
    stop_all();
  }
}

// Every GPU of every host that is up is one rank, numbered in host order.
// The host of rank 0 first creates NCCL's unique id (its bootstrap root),
// then every GPU host runs the test with it.
void CheckPolicy::start_nccl() {
  auto& nccl = result_.nccl;
  nccl.requested = true;
  nccl.iterations = config_.nccl_iterations;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const auto& row = result_.hosts[i];
    if (!up(static_cast<int>(i)) || !row.facts || row.facts->gpus.empty()) continue;
    auto& node = nodes_[i];
    node.nccl_first_rank = nccl.gpus;
    node.nccl_gpus = static_cast<std::int32_t>(row.facts->gpus.size());
    nccl.gpus += node.nccl_gpus;
    ++nccl.hosts;
    if (nccl_root_ < 0) nccl_root_ = static_cast<int>(i);
  }
  if (nccl.gpus == 0) {
    nccl.skipped = "no host that is up has a GPU (its driver's NVML reported none)";
    stop_all();
    return;
  }
  phase_ = Phase::collective;
  owed_ = {nccl_root_};
  emit(check_action::Send{*nodes_[static_cast<std::size_t>(nccl_root_)].conn,
                          nccl_test_for(nccl_root_)});
  emit(check_action::ArmTimer{CheckTimer::nccl, config_.nccl_timeout});
}

proto::NcclTest CheckPolicy::nccl_test_for(int index) const {
  const auto& node = nodes_[static_cast<std::size_t>(index)];
  proto::NcclTest test;
  test.nranks = result_.nccl.gpus;
  test.first_rank = node.nccl_first_rank;
  test.gpus = node.nccl_gpus;
  // The interface a job's ranks on this host would get (exact match).
  const auto& interface = result_.hosts[static_cast<std::size_t>(index)].interface;
  if (!interface.empty()) test.socket_ifname = "=" + interface;
  test.sizes = config_.nccl_sizes;
  test.iterations = config_.nccl_iterations;
  test.warmup = config_.nccl_warmup;
  return test;
}

void CheckPolicy::on_nccl_report(int index, const proto::NcclReport& report) {
  if (phase_ != Phase::collective || owed_.erase(index) == 0) return;
  auto& nccl = result_.nccl;
  if (!report.error.empty()) {
    end_nccl(node_label(index) + ": " + report.error);
    return;
  }
  if (!nccl_id_known_) {
    if (report.unique_id.size() != proto::kNcclUniqueIdBytes) {
      end_nccl(node_label(index) + " answered without an NCCL unique id");
      return;
    }
    nccl_id_known_ = true;
    nccl.version = report.version;
    log(log::Level::debug, "NCCL " + report.version + ": all-reduce across " +
                               std::to_string(nccl.gpus) + " GPUs on " +
                               std::to_string(nccl.hosts) + " hosts");
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i].nccl_first_rank < 0) continue;
      auto test = nccl_test_for(static_cast<int>(i));
      test.unique_id = report.unique_id;
      emit(check_action::Send{*nodes_[i].conn, std::move(test)});
      owed_.insert(static_cast<int>(i));
    }
    return;
  }
  if (report.timings.size() != config_.nccl_sizes.size()) {
    end_nccl(node_label(index) + " reported " + std::to_string(report.timings.size()) + " of " +
             std::to_string(config_.nccl_sizes.size()) + " sizes");
    return;
  }
  // Every rank waits for the slowest in an all-reduce: its time is the test's.
  if (nccl.timings.empty()) {
    nccl.timings = report.timings;
  } else {
    for (std::size_t k = 0; k < nccl.timings.size(); ++k)
      nccl.timings[k].time_ns = std::max(nccl.timings[k].time_ns, report.timings[k].time_ns);
  }
  if (owed_.empty()) end_nccl("");
}

void CheckPolicy::end_nccl(const std::string& error) {
  if (!error.empty()) {
    result_.nccl.error = error;
    result_.nccl.timings.clear();
  }
  owed_.clear();
  stop_all();
}

void CheckPolicy::stop_all() {
  phase_ = Phase::stopping;
  stop_every_node(nodes_, proto::Stop{0, false, 0, "check done"}, UnlinkedNodes::stdin_closed,
                  [this](auto action) { emit(std::move(action)); });
  emit(check_action::ArmTimer{CheckTimer::stop, config_.stop_grace});
  check_finished();
}

void CheckPolicy::check_finished() {
  if (phase_ != Phase::stopping || agents_gone_ < nodes_.size()) return;
  phase_ = Phase::done;
  emit(check_action::Finish{});
}

}  // namespace dlaunch
