// A whole `dlaunch check` run by the real CheckRunner (the one FleetRunner, its
// AgentFleet and PolicyTimers, CheckPolicy, the dispatch of every event and
// action) over fakes, as fake_job.h runs a job: agents started on a
// FakeTransport, a rendezvous service whose connections are the fake agents',
// and a frozen clock that only the test moves (advance).
//
// Each fake agent does what a check-mode agent (agent/agent.cpp) does, on the
// points the tests rely on: it reads its launch spec, joins with its
// interfaces and probe port, answers FactsRequest at once with its facts and
// its clock, connects to each Probe address and PeerTest target (through the
// network below: a connection either reaches the target's listener, is
// refused, or times out at the message's timeout), holds the bulk transfer
// for the test's duration, runs the NCCL test (rank 0's host makes the unique
// id first), and ends at a Stop (with its exit code), a Reject (2), its stdin
// closing or its connection lost (1): connection closed first, then its
// process. A kill ends it with 137. A test scripts what goes wrong per host
// (Host) and which hosts cannot reach which (Setup::blocked), and reads back
// what the user would see (the CheckResult, the log) and what each agent was
// told or had done to it.
//
// One FakeCheck at a time: the FrozenTestClock it holds does not nest.
//
// The network: host N has eth0, a management address (198.19.1.N/30) that
// only N itself reaches, and ensN, a region address (198.18.1.(10+N)/16) that
// every host reaches unless the pair is blocked.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <asio.hpp>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "launcher/check/check_runner.h"
#include "launcher/transport/fake_transport.h"
#include "protocol/launch_spec.h"
#include "protocol/messages.h"

namespace dlaunch::testing {

class FakeCheck {
 public:
  using ms = std::chrono::milliseconds;

  // One host's agent. By default a healthy one.
  struct Host {
    // The transport cannot start the agent and reports this exit code with
    // `start_error` (255 and "h1: cannot connect: refused" as SSH would).
    std::optional<int> start_fails_with = std::nullopt;
    std::string start_error = {};
    // When it joins after its start; nullopt: never (it cannot reach the rendezvous).
    std::optional<ms> joins_after = ms{0};
    bool answers_facts = true;
    bool answers_probe = true;
    bool answers_peer_tests = true;
    // false: a wedged agent, which a Stop, a Reject or its stdin closing does not end.
    bool ends_when_told = true;
    // false: a kill's end never comes back (its SSH session hangs).
    bool ends_when_killed = true;
    // Its process exits this long after it closed its connection (draining).
    ms exits_after_close{0};
    std::chrono::microseconds clock_ahead{0};  // its time of day against this machine's
    std::vector<proto::GpuFact> gpus = {};
    // --nccl
    std::string nccl_version = "2.27.3";
    std::string nccl_error = {};                  // the all-reduce fails here with this
    std::vector<std::int64_t> nccl_time_ns = {};  // per size (default: 1,000 ns each)
    ms nccl_takes{0};                             // the all-reduce's time here
    bool answers_nccl = true;                     // false: it hangs in NCCL
  };

  struct Setup {
    int hosts = 3;
    bool facts_only = false;
    bool nccl = false;
    std::vector<std::int64_t> nccl_sizes = {8, 1024};
    ms stop_grace{5000};
    std::map<int, Host> script = {};  // hosts not named: healthy
    // (from, to): `from`'s connections to any address of `to` are dropped.
    std::set<std::pair<int, int>> blocked = {};
  };

  // What happened, in order: what the runner sent each agent (sent; dropped:
  // to a connection already closed), and what reached the runner (joined,
  // answered, closed, exited), then the run's end (finished).
  struct Event {
    enum class Kind { sent, dropped, joined, answered, closed, exited, finished };
    Kind kind = Kind::sent;
    int node = -1;
    proto::Message message = {};  // sent, dropped, joined (the Join), answered
    int exit_code = 0;            // exited
    ms at{0};
    // This machine's time of day around the runner's handling of it (joined, answered).
    std::int64_t wall_before_us = 0;
    std::int64_t wall_after_us = 0;
  };

  explicit FakeCheck(Setup setup)
      : setup_(std::move(setup)),
        transports_([] { return std::unique_ptr<Transport>(); },
                    [this] { return std::unique_ptr<Transport>(new Remote(*this)); }) {
    log::set_level(log::Level::debug);
    log::set_sink([this](log::Level level, const std::string& text) {
      static const char* const kLevels[] = {"debug", "info", "warn", "error"};
      logs.push_back(std::string(kLevels[static_cast<int>(level)]) + ": " + text);
    });
    for (int n = 0; n < setup_.hosts; ++n) {
      const auto it = setup_.script.find(n);
      hosts_.push_back(it == setup_.script.end() ? Host{} : it->second);
      owner_[management_address(n)] = {n, true};
      owner_[region_address(n)] = {n, false};
    }
    agents_.resize(static_cast<std::size_t>(setup_.hosts));
    runner_.emplace(io_, settings(), transports_);
  }
  ~FakeCheck() {
    runner_.reset();
    log::set_sink({});
    log::set_level(log::Level::warn);
  }
  FakeCheck(const FakeCheck&) = delete;
  FakeCheck& operator=(const FakeCheck&) = delete;

  static std::string name(int node) { return "h" + std::to_string(node); }
  static std::string management_address(int node) {
    return "198.19." + std::to_string(1 + node / 250) + "." + std::to_string(node % 250);
  }
  static std::string region_address(int node) {
    return "198.18." + std::to_string(1 + (node + 10) / 250) + "." +
           std::to_string((node + 10) % 250);
  }
  static std::int32_t probe_port(int node) { return 40000 + node; }
  // The unique id a host's GPU helper makes when asked (rank 0's host).
  static std::string nccl_unique_id(int node) {
    return std::string(proto::kNcclUniqueIdBytes, static_cast<char>('a' + node % 26));
  }

  // --- what happens -------------------------------------------------------
  // Everything an event causes runs before the call returns, the runner's
  // timers already due included.

  // The runner starts: it starts every host's agent and applies the policy's
  // start(). CheckRunner::run() runs until the check ends; a stop posted first
  // makes it return once started, and the test drives the loop from there.
  void start() {
    asio::post(io_, [this] { io_.stop(); });
    REQUIRE(runner_->run());
    REQUIRE(service_ != nullptr);
    REQUIRE(transport_.started() == static_cast<std::size_t>(setup_.hosts));
    io_.restart();
    settle();
  }

  // Moves the clock by `by`, stopping at each moment an agent does something
  // on its own (answers after a transfer's time, joins late), so that events
  // come in the order of their times. The runner's timers are not visible
  // here: one armed on the way counts from the moment it was armed only if
  // the test advances to that moment first.
  void advance(ms by) {
    const ms until = now_ + by;
    for (;;) {
      ms next = until;
      if (!later_.empty() && later_.begin()->first < until)
        next = std::max(now_, later_.begin()->first);
      move_to(next);
      if (next == until) return;
    }
  }
  // Advances until no agent has anything in hand: every answer it was
  // working on (a transfer, a probe, an NCCL test, a late join) has come,
  // and whatever those led to.
  void advance_until_agents_idle() {
    while (!later_.empty()) advance(std::max(ms{0}, later_.rbegin()->first - now_));
  }

  // The agent's connection breaks (a reset): the runner sees it closed for
  // `reason`, and the agent, having lost its coordinator, exits 1.
  void connection_lost(int node, const std::string& reason) {
    service_->drop(node, reason);
    lost_coordinator(node);
    settle();
  }

  // --- what came out ------------------------------------------------------

  std::vector<std::string> logs;  // "warn: ..." as the launcher's log shows them

  const CheckResult& result() const { return runner_->result(); }
  // The policy's Finish: the runner stopped its service and its loop.
  bool finished() const { return service_ != nullptr && service_->stopped; }
  ms now() const { return now_; }
  const std::vector<Event>& events() const { return events_; }
  // What the transport did to a host's agent: stdin_closed, kills, exited.
  const FakeTransport::Agent& agent(int node) const {
    return transport_.agent(static_cast<std::size_t>(node));
  }
  std::set<int> stdin_closed() const {
    std::set<int> nodes;
    for (int n = 0; n < setup_.hosts; ++n) {
      if (agent(n).stdin_closed) nodes.insert(n);
    }
    return nodes;
  }
  // Messages of one kind that reached a host's agent, oldest first.
  template <class M>
  std::vector<M> received_of(int node) const {
    std::vector<M> found;
    for (const auto& e : events_) {
      if (e.kind != Event::Kind::sent || e.node != node) continue;
      if (const auto* m = std::get_if<M>(&e.message)) found.push_back(*m);
    }
    return found;
  }
  // How many messages of one kind reached the agents.
  template <class M>
  int count_sent() const {
    int n = 0;
    for (const auto& e : events_)
      n += e.kind == Event::Kind::sent && std::holds_alternative<M>(e.message) ? 1 : 0;
    return n;
  }
  // The messages of one kind that reached the agents since the last call for
  // that kind, in order, with the host each went to.
  template <class M>
  std::vector<std::pair<int, M>> take_sent() {
    auto& seen = seen_[proto::Message(M{}).index()];
    std::vector<std::pair<int, M>> found;
    for (; seen < events_.size(); ++seen) {
      const auto& e = events_[seen];
      if (e.kind != Event::Kind::sent) continue;
      if (const auto* m = std::get_if<M>(&e.message)) found.emplace_back(e.node, *m);
    }
    return found;
  }
  // The same, by host, each host at most once.
  template <class M>
  std::map<int, M> take_sent_by_node() {
    std::map<int, M> found;
    for (auto& [node, m] : take_sent<M>()) CHECK(found.emplace(node, std::move(m)).second);
    return found;
  }
  // The most probe connections that were open at once towards node 0's listener.
  std::size_t most_probe_connections() const { return most_probe_connections_; }
  bool has_log(const std::string& line) const {
    return std::find(logs.begin(), logs.end(), line) != logs.end();
  }

 private:
  static ConnId conn(int node) { return 700 + static_cast<ConnId>(node); }
  static int node_of(ConnId id) { return static_cast<int>(id - 700); }
  static std::int64_t wall_now_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  // The agents' connections, as the rendezvous server holds them.
  class Service : public RendezvousService {
   public:
    Service(FakeCheck& check, Callbacks callbacks)
        : check_(check), callbacks_(std::move(callbacks)) {}

    bool stopped = false;

    // The agent connects and joins; then it may be sent messages.
    void join(int node, proto::Join message) {
      asio::post(check_.io_, [this, node, message = std::move(message)] {
        if (stopped) return;
        open_.insert(node);
        const auto i = check_.record({Event::Kind::joined, node, message});
        callbacks_.on_join(conn(node), message);
        check_.events_[i].wall_after_us = wall_now_us();
      });
    }
    // The agent sends `message`; it reaches the runner if its connection is still open.
    void deliver(int node, proto::Message message) {
      asio::post(check_.io_, [this, node, message = std::move(message)]() mutable {
        if (stopped || !open_.count(node)) return;
        const auto i = check_.record({Event::Kind::answered, node, message});
        callbacks_.on_message(conn(node), std::move(message));
        check_.events_[i].wall_after_us = wall_now_us();
      });
    }
    // The connection closes from the agent's side, or breaks.
    void drop(int node, const std::string& reason) {
      asio::post(check_.io_, [this, node, reason] {
        if (stopped || open_.erase(node) == 0) return;
        check_.record({Event::Kind::closed, node});
        callbacks_.on_close(conn(node), reason);
      });
    }

    std::uint16_t port() const override { return 29400; }
    void send(ConnId id, const proto::Message& message) override {
      if (stopped) return;
      const int node = node_of(id);
      if (!open_.count(node)) {
        check_.record({Event::Kind::dropped, node, message});
        return;
      }
      check_.record({Event::Kind::sent, node, message});
      check_.agent_receives(node, message);
    }
    // After what is queued: the agent reads its end as its coordinator gone.
    void close(ConnId id, const std::string& reason) override {
      const int node = node_of(id);
      drop(node, reason);
      asio::post(check_.io_, [this, node] { check_.lost_coordinator(node); });
    }
    bool output_full(ConnId) const override { return false; }
    void on_output_space(ConnId, std::function<void()>) override {}
    void set_reading_paused(bool) override {}
    void stop() override {
      if (stopped) return;
      stopped = true;
      check_.record({Event::Kind::finished});
    }

   private:
    FakeCheck& check_;
    Callbacks callbacks_;
    std::set<int> open_;
  };

  // What the transport does to an agent reaches the fake agent too.
  class Handle : public AgentHandle {
   public:
    Handle(FakeCheck& check, int node, std::unique_ptr<AgentHandle> inner)
        : check_(check), node_(node), inner_(std::move(inner)) {}
    void close_stdin() override {
      inner_->close_stdin();
      asio::post(check_.io_, [&check = check_, node = node_] { check.lost_coordinator(node); });
    }
    void kill() override {
      inner_->kill();
      asio::post(check_.io_, [&check = check_, node = node_] { check.killed(node); });
    }

   private:
    FakeCheck& check_;
    int node_;
    std::unique_ptr<AgentHandle> inner_;
  };

  // The remote transport, which the runner's AgentTransports owns: the
  // test's FakeTransport, its agents booted as fakes.
  class Remote : public Transport {
   public:
    explicit Remote(FakeCheck& check) : check_(check) {}
    std::unique_ptr<AgentHandle> start(const HostEntry& host, const AgentLaunch& launch,
                                       AgentEvents events) override {
      const int node = static_cast<int>(check_.transport_.started());
      auto inner = check_.transport_.start(host, launch, std::move(events));
      asio::post(check_.io_, [&check = check_, node] { check.boot(node); });
      return std::make_unique<Handle>(check_, node, std::move(inner));
    }

   private:
    FakeCheck& check_;
  };

  struct Agent {
    bool running = false;  // started and not ended: it answers, its listener accepts
    std::optional<LaunchSpec> spec;
    std::optional<int> final_code;  // a final Stop's
  };
  struct Owner {
    int node = 0;
    bool management = false;
  };
  struct Reach {
    bool reached = false;
    std::string error;  // "timed out", "refused"
  };

  CheckRunner::Settings settings() {
    CheckRunner::Settings s;
    Plan& plan = s.plan;
    plan.mode = Mode::hosts;
    plan.job = "check";
    plan.nnodes = setup_.hosts;
    plan.rdzv_bind = "127.0.0.1";
    for (int n = 0; n < setup_.hosts; ++n) {
      PlannedNode planned;
      planned.node_rank = n;
      planned.host.name = name(n);
      planned.host.address = management_address(n);
      planned.local = false;
      plan.nodes.push_back(planned);
      s.policy.hosts.push_back({planned.host.name, planned.host.address});
    }
    if (setup_.hosts > 0) plan.node0_address = management_address(0);
    s.policy.master_sources.node0_address = plan.node0_address;
    s.policy.facts_only = setup_.facts_only;
    s.policy.nccl = setup_.nccl;
    s.policy.nccl_sizes = setup_.nccl_sizes;
    s.policy.stop_grace = setup_.stop_grace;
    s.service = [this](RendezvousService::Callbacks callbacks) {
      auto service = std::make_unique<Service>(*this, std::move(callbacks));
      service_ = service.get();
      return std::unique_ptr<RendezvousService>(std::move(service));
    };
    return s;
  }

  std::size_t record(Event e) {
    e.at = now_;
    e.wall_before_us = e.wall_after_us = wall_now_us();
    events_.push_back(std::move(e));
    return events_.size() - 1;
  }

  // `action` after `delay` on the test's clock (at once: posted, in order).
  void later(ms delay, std::function<void()> action) {
    if (delay.count() <= 0) {
      asio::post(io_, std::move(action));
      return;
    }
    later_.emplace(now_ + delay, std::move(action));
  }

  // --- the fake agents ----------------------------------------------------

  const Host& host(int node) const { return hosts_[static_cast<std::size_t>(node)]; }
  Agent& state(int node) { return agents_[static_cast<std::size_t>(node)]; }

  void boot(int node) {
    const Host& h = host(node);
    if (h.start_fails_with) {
      process_ends(node, *h.start_fails_with, h.start_error);
      return;
    }
    // Its launch spec, as it reads it on stdin: "DLSP", the length, the fields.
    const std::string stream = transport_.stdin_of(static_cast<std::size_t>(node));
    REQUIRE(stream.size() >= 8);
    auto spec = decode_launch_spec_body(std::string_view(stream).substr(8));
    REQUIRE(spec);
    CHECK(spec->check);  // a check agent: it starts no rank
    CHECK(spec->node_rank == node);
    auto& a = state(node);
    a.spec = std::move(*spec);
    a.running = true;
    if (h.joins_after) later(*h.joins_after, [this, node] { join(node); });
  }

  net::Interfaces interfaces(int node) const {
    return {{"lo", net::InterfaceKind::loopback, 65536, true, {{"127.0.0.1", 8, false}}},
            {"eth0", net::InterfaceKind::veth, 1500, true, {{management_address(node), 30, false}}},
            {"ens" + std::to_string(node),
             net::InterfaceKind::physical,
             1500,
             true,
             {{region_address(node), 16, false}}}};
  }

  void join(int node) {
    auto& a = state(node);
    if (!a.running) return;
    const Host& h = host(node);
    proto::Join message;
    message.node_rank = a.spec->node_rank;
    message.nproc = std::max(1, a.spec->nproc);
    message.gpus = static_cast<std::int32_t>(h.gpus.size());
    message.host = a.spec->host_name;
    message.probe_port = probe_port(node);
    message.master_port = message.probe_port;
    message.interfaces = interfaces(node);
    message.pid = 9000 + node;
    message.nnodes = a.spec->nnodes;
    message.machine_id = "machine-" + std::to_string(node);
    service_->join(node, std::move(message));
  }

  // Sends `message` to the runner after `delay`, if it is still running then.
  void answer(int node, proto::Message message, ms delay = ms{0}) {
    later(delay, [this, node, message = std::move(message)]() mutable {
      if (state(node).running) service_->deliver(node, std::move(message));
    });
  }

  void agent_receives(int node, const proto::Message& message) {
    auto& a = state(node);
    const Host& h = host(node);
    if (!a.running) return;
    if (std::holds_alternative<proto::FactsRequest>(message)) {
      if (!h.answers_facts) return;
      // Collected before it joined; its clock read as it answers.
      proto::HostFacts facts;
      facts.agent_version = "test";
      facts.cpus = 4;
      facts.gpus = h.gpus;
      if (!h.gpus.empty()) facts.driver_version = "550.54.15";
      facts.shm_size = 1LL << 30;
      facts.python_version = "3.11.2";
      facts.torch_version = "2.4.0";
      facts.arch = "x86_64";
      facts.wall_clock_us = wall_now_us() + h.clock_ahead.count();
      answer(node, std::move(facts));
    } else if (const auto* probe = std::get_if<proto::Probe>(&message)) {
      if (h.answers_probe) answer_probe(node, *probe);
    } else if (const auto* test = std::get_if<proto::PeerTest>(&message)) {
      if (h.answers_peer_tests) answer_peer_test(node, *test);
    } else if (const auto* nccl = std::get_if<proto::NcclTest>(&message)) {
      answer_nccl(node, *nccl);
    } else if (const auto* stop = std::get_if<proto::Stop>(&message)) {
      if (stop->restart || !h.ends_when_told) return;
      a.final_code = stop->exit_code;
      ends(node, stop->exit_code);
    } else if (std::holds_alternative<proto::Reject>(message)) {
      if (h.ends_when_told) ends(node, 2);
    }
  }

  // Whether `from`'s connection to `address`:`port` reaches a listener.
  Reach reach(int from, const std::string& address, std::int32_t port) const {
    const auto it = owner_.find(address);
    if (it == owner_.end()) return {false, "timed out"};
    const int to = it->second.node;
    if (setup_.blocked.count({from, to}) || (it->second.management && to != from))
      return {false, "timed out"};
    if (!agents_[static_cast<std::size_t>(to)].running || port != probe_port(to))
      return {false, "refused"};
    return {true, ""};
  }

  static std::optional<std::uint32_t> ipv4(const std::string& text) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    char tail = 0;
    if (std::sscanf(text.c_str(), "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4 || a > 255 ||
        b > 255 || c > 255 || d > 255)
      return std::nullopt;
    return (a << 24) | (b << 16) | (c << 8) | d;
  }

  // The interface of `node` a connection to `address` leaves by: the one
  // holding it, else the one on its subnet, else the default route's (eth0).
  std::string route(int node, const std::string& address) const {
    const auto to = ipv4(address);
    const auto own = interfaces(node);
    for (const auto& itf : own) {
      for (const auto& a : itf.addresses) {
        if (a.address == address) return itf.name;
      }
    }
    for (const auto& itf : own) {
      if (itf.kind == net::InterfaceKind::loopback) continue;
      for (const auto& a : itf.addresses) {
        const auto mine = ipv4(a.address);
        if (!to || !mine || a.prefix == 0) continue;
        const std::uint32_t mask = a.prefix >= 32 ? ~0u : ~(~0u >> a.prefix);
        if ((*to & mask) == (*mine & mask)) return itf.name;
      }
    }
    return "eth0";
  }

  // agent/prober.cpp: every address at once; once one answered, the others
  // get half a second more; with none answered, the report waits for the
  // probe's timeout.
  void answer_probe(int node, const proto::Probe& probe) {
    const std::size_t connections = probe.addresses.size();
    probe_connections_ += connections;
    most_probe_connections_ = std::max(most_probe_connections_, probe_connections_);
    proto::ProbeReport report;
    bool any_reached = false, any_timed_out = false;
    for (const auto& address : probe.addresses) {
      const Reach r = reach(node, address, probe.port);
      any_reached = any_reached || r.reached;
      any_timed_out = any_timed_out || r.error == "timed out";
      report.outcomes.push_back({r.reached, r.reached ? 300 : 0, route(node, address), r.error});
    }
    ms delay{0};
    if (any_reached && any_timed_out) {
      delay = ms{500};
      for (auto& o : report.outcomes) {
        if (o.error == "timed out") o.error = "no answer (another address answered)";
      }
    } else if (any_timed_out) {
      delay = ms{probe.timeout_ms};
    }
    later(delay, [this, node, connections, report = std::move(report)]() mutable {
      probe_connections_ -= connections;
      if (state(node).running) service_->deliver(node, std::move(report));
    });
  }

  // agent/peer_bench.cpp: every target at once, each written to for the
  // test's duration (1.25 GB/s here); a target not reached by the connect
  // timeout is reported then.
  void answer_peer_test(int node, const proto::PeerTest& test) {
    proto::PeerTestReport report;
    report.round = test.round;
    ms delay{0};
    for (const auto& target : test.targets) {
      const Reach r = reach(node, target.address, target.port);
      proto::PeerResult result;
      result.node = target.node;
      result.reached = r.reached;
      result.error = r.error;
      if (r.reached) {
        result.rtt_us = 500;
        result.bytes = 1'250'000ULL * static_cast<std::uint64_t>(test.duration_ms);
        result.elapsed_us = std::int64_t{test.duration_ms} * 1000;
        delay = std::max(delay, ms{test.duration_ms});
      } else if (r.error == "timed out") {
        delay = std::max(delay, ms{test.timeout_ms});
      }
      report.results.push_back(std::move(result));
    }
    answer(node, std::move(report), delay);
  }

  // agent/nccl_allreduce.cpp: without a unique id, the GPU helper makes one
  // (this host holds rank 0); with one, this host's GPUs run the all-reduce.
  void answer_nccl(int node, const proto::NcclTest& test) {
    const Host& h = host(node);
    proto::NcclReport report;
    report.version = h.nccl_version;
    if (test.unique_id.empty()) {
      report.unique_id = nccl_unique_id(node);
      answer(node, std::move(report));
      return;
    }
    if (!h.answers_nccl) return;
    if (test.gpus <= 0 || test.gpus > static_cast<std::int32_t>(h.gpus.size())) {
      report.error = "cudaSetDevice: invalid device ordinal";
    } else if (!h.nccl_error.empty()) {
      report.error = h.nccl_error;
    } else {
      for (std::size_t k = 0; k < test.sizes.size(); ++k)
        report.timings.push_back(
            {test.sizes[k], k < h.nccl_time_ns.size() ? h.nccl_time_ns[k] : 1000});
    }
    const ms takes = report.error.empty() ? h.nccl_takes : ms{0};
    answer(node, std::move(report), takes);
  }

  // It finishes: its connection closes, then its process exits with `code`.
  void ends(int node, int code) {
    auto& a = state(node);
    if (!a.running) return;
    a.running = false;
    service_->drop(node, "connection closed by peer");
    later(host(node).exits_after_close, [this, node, code] { process_ends(node, code); });
  }
  // Its stdin closed or its connection gone (agent_state.cpp's
  // CoordinatorLost): exit 1, or a final Stop's code.
  void lost_coordinator(int node) {
    if (!host(node).ends_when_told) return;
    ends(node, state(node).final_code.value_or(1));
  }
  void killed(int node) {
    if (!host(node).ends_when_killed || agent(node).exited) return;
    state(node).running = false;
    service_->drop(node, "Connection reset by peer");
    asio::post(io_, [this, node] { process_ends(node, 128 + SIGKILL); });
  }
  // The transport reports the end of its process.
  void process_ends(int node, int code, const std::string& error = "") {
    state(node).running = false;
    if (agent(node).exited) return;
    record({Event::Kind::exited, node, {}, code});
    transport_.exit(static_cast<std::size_t>(node), code, error);
  }

  // --- the loop -----------------------------------------------------------

  void move_to(ms t) {
    if (t > now_) {
      advance_test_clock(t - now_);
      now_ = t;
    }
    settle();
  }

  // Runs what is due, the agents' doings and the runner's handlers and
  // timers, until nothing more is, as the event loop would before it sleeps.
  void settle() {
    for (int pass = 0;; ++pass) {
      REQUIRE(pass < 1'000'000);
      std::size_t ran = 0;
      while (!later_.empty() && later_.begin()->first <= now_) {
        auto action = std::move(later_.begin()->second);
        later_.erase(later_.begin());
        action();
        ++ran;
      }
      if (!io_.stopped()) ran += io_.poll();
      if (!io_.stopped()) ran += fire_due_timers();
      if (ran == 0) return;
    }
  }

  // The runner's timers due on the test's clock fire when the event loop
  // next looks (within a millisecond, common/clock.h). A timer of ours due
  // now is taken from the same queue with every timer due already, so once it
  // has fired, so have they. Returns how many other handlers ran.
  std::size_t fire_due_timers() {
    auto fired = std::make_shared<bool>(false);
    Timer sentinel(io_);
    sentinel.expires_at(SteadyClock::now());
    sentinel.async_wait([fired](const asio::error_code& ec) { *fired = !ec; });
    std::size_t ran = 0;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!*fired && !io_.stopped()) {
      REQUIRE(std::chrono::steady_clock::now() < give_up);
      ran += io_.run_one_for(std::chrono::milliseconds(5));
    }
    return *fired ? ran - 1 : ran;
  }

  Setup setup_;
  std::vector<Host> hosts_;
  std::map<std::string, Owner> owner_;  // every host's addresses
  FrozenTestClock clock_;
  asio::io_context io_;
  // The runner's loop never runs out of work between the test's events.
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  // Its agents play what a kill does themselves (ends_when_killed: the
  // connection drops, then the process ends), so the transport's does not land.
  FakeTransport transport_{/*kills_land=*/false};
  AgentTransports transports_;
  std::vector<Agent> agents_;
  Service* service_ = nullptr;  // made by the runner's start
  std::optional<CheckRunner> runner_;
  std::vector<Event> events_;
  std::map<std::size_t, std::size_t> seen_;         // take_sent's place, per message kind
  std::multimap<ms, std::function<void()>> later_;  // the agents' doings to come, by time
  std::size_t probe_connections_ = 0;
  std::size_t most_probe_connections_ = 0;
  ms now_{0};
};

}  // namespace dlaunch::testing
