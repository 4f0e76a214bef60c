// A whole job run by the real Coordinator (its AgentFleet, PolicyTimers,
// dispatch of every event, log sink, sync streams, checkpoint relay and job
// record) over fakes: agents on a FakeTransport, a rendezvous service whose
// connections the test plays (FakeAgentService), and a frozen clock that only
// fire_next_timer moves. A test plays the agents, the ranks and the user
// (signals, `dlaunch stop --grace`), and reads back what the user would see
// (the printed lines, the exit code) and what each agent was told.
#pragma once

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "launcher/job/coordinator.h"
#include "launcher/job/job_recorder.h"
#include "launcher/transport/fake_transport.h"
#include "tests/unit/launcher/fleet/fake_agent_service.h"
#include "tests/unit/scratch_dir.h"

namespace dlaunch::testing {

class FakeJob {
 public:
  struct Setup {
    int nodes = 3;
    int nproc = 2;  // ranks per node
    int max_restarts = 0;
    int grace_s = 10;
    int rdzv_timeout_s = 600;
    bool verbose = false;
    std::set<int> ranks_filter = {};
    // Probe MASTER_ADDR as a job over several machines does. Node 0 is listed
    // by 198.19.0.2 (a management address) and also has 198.18.1.10 on ens5;
    // node N's interface is ethN.
    bool probe = false;
    bool sync = false;               // --sync: the assignment waits for every node's SyncDone
    std::set<int> behind_jump = {};  // nodes reached through a jump host, without via = "ssh"
    // Elastic: hosts marked spare, --nnodes MIN:MAX (0: every host not spare).
    std::set<int> spares = {};
    std::size_t min_nodes = 0;
    std::size_t max_nodes = 0;
    bool carry_checkpoint = false;                               // --checkpoint-dir
    std::optional<std::chrono::milliseconds> hang_timeout = {};  // --hang-timeout
  };
  using ms = std::chrono::milliseconds;

  explicit FakeJob(Setup setup)
      : setup_(setup),
        terminal_{::open((scratch_.path() + "/terminal").c_str(),
                         O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)},
        transports_([] { return std::unique_ptr<Transport>(); },
                    [this] { return std::unique_ptr<Transport>(new LentTransport(transport)); }),
        sink_(sink_settings()) {
    REQUIRE(terminal_.fd >= 0);
    log::set_level(log::Level::debug);
    log::set_sink([this](log::Level level, const std::string& text) {
      static const char* const kLevels[] = {"debug", "info", "warn", "error"};
      logs.push_back(std::string(kLevels[static_cast<int>(level)]) + ": " + text);
    });
    coordinator_.emplace(io_, coordinator_settings(), transports_, sink_);
  }
  ~FakeJob() {
    coordinator_.reset();
    log::set_sink({});
    log::set_level(log::Level::warn);
  }
  FakeJob(const FakeJob&) = delete;
  FakeJob& operator=(const FakeJob&) = delete;

  static ConnId conn(int node) { return FakeAgentService::conn(node); }
  static std::string host(int node) { return "host" + std::to_string(node); }
  int node_of_rank(int rank) const { return rank / setup_.nproc; }
  int world_size() const { return setup_.nodes * setup_.nproc; }

  // --- what happens -------------------------------------------------------
  // Each event reaches the coordinator as from its socket or its agents'
  // processes, and everything it causes runs before the call returns, timers
  // already due included.

  // The coordinator starts: it listens, starts every node's agent, then the policy.
  void start() {
    REQUIRE(coordinator_->start());
    settle();
  }
  // `machine_id` and `gpus` as the agent reports them (default: unknown, none).
  void join(int node, const std::string& machine_id = "", int gpus = 0) {
    proto::Join join;
    join.node_rank = node;
    join.machine_id = machine_id;
    join.gpus = gpus;
    join.nproc = setup_.nproc;
    join.host = host(node);
    join.master_port = 29500 + node;
    join.probe_port = 29500 + node;
    join.pid = 7000 + node;
    if (node == 0) {
      join.interfaces = {
          {"mgmt0", net::InterfaceKind::veth, 1500, true, {{"198.19.0.2", 30, false}}},
          {"ens5", net::InterfaceKind::physical, 1500, true, {{"198.18.1.10", 24, false}}}};
    } else {
      join.interfaces = {{"eth" + std::to_string(node),
                          net::InterfaceKind::veth,
                          1500,
                          true,
                          {{"198.18.2." + std::to_string(node), 24, false}}}};
    }
    agents_->join_as(node, std::move(join));
    settle();
  }
  // A node's answer to the Probe it received: `reached` per candidate.
  void probe_report(int node, const std::vector<bool>& reached) {
    proto::ProbeReport report;
    for (bool r : reached) {
      report.outcomes.push_back({r, r ? 400 : 0,
                                 r ? (node == 0 ? "ens5" : "eth" + std::to_string(node)) : "",
                                 r ? "" : "timed out"});
    }
    sends(node, report);
  }
  // The node's --sync ended (`error` empty: it succeeded).
  void sync_done(int node, const std::string& error = "") {
    proto::SyncDone done;
    done.files_written = 3;
    done.bytes_received = 100;
    done.error = error;
    sends(node, done);
  }
  void join_all() {
    for (int node = 0; node < setup_.nodes; ++node) join(node);
  }
  // Node `node`'s agent sends `message` (what no helper here says yet).
  void agent_sends(int node, proto::Message message) { sends(node, std::move(message)); }
  // A rank prints a line: its agent sends it (the failure summary keeps it).
  void rank_prints(int rank, const std::string& text) {
    proto::LogLine line;
    line.rank = rank;
    line.text = text;
    sends(node_of_rank(rank), line);
  }
  // Rank 0's agent sends a whole checkpoint file (--checkpoint-dir).
  void rank0_saves_checkpoint(int node, const std::string& path, const std::string& data) {
    proto::FileChunk chunk;
    chunk.path = path;
    chunk.data = data;
    chunk.set = proto::FileSet::checkpoint;
    chunk.restart = true;  // a new version, from its first byte
    chunk.complete = true;
    sends(node, chunk);
  }
  void rank_exits(int rank, int code, int signal = 0) {
    rank_exits_on(node_of_rank(rank), rank, code, signal);
  }
  // As reported by `node`'s agent, which need not hold the rank.
  void rank_exits_on(int node, int rank, int code, int signal = 0) {
    proto::RankExit exit;
    exit.rank = rank;
    exit.exit_code = code;
    exit.signal = signal;
    sends(node, exit);
  }
  void all_ranks_exit(int code) {
    for (int rank = 0; rank < world_size(); ++rank) rank_exits(rank, code);
  }
  // The node's ranks have all exited this round.
  void agent_done(int node) {
    proto::AgentDone done;
    done.round = policy().rendezvous().round();
    done.next_master_port = 31000 + node;
    sends(node, done);
  }
  void all_agents_done() {
    for (int node = 0; node < setup_.nodes; ++node) agent_done(node);
  }
  void connection_lost(int node, const std::string& reason) {
    closed_.insert(node);
    agents_->lose(conn(node), reason);
    settle();
  }
  void agent_writes_stderr(int node, const std::string& bytes) {
    transport.write_stderr(static_cast<std::size_t>(node), bytes);
    settle();
  }
  void agent_exits(int node, int code, const std::string& error = "") {
    transport.exit(static_cast<std::size_t>(node), code, error);
    settle();
  }
  // An agent that was told to stop does: its connection closes, its process exits.
  void agent_stops(int node) {
    if (!closed_.contains(node) && policy().node_of(conn(node)))
      connection_lost(node, "connection closed");
    agent_exits(node, 0);
  }
  void all_agents_stop() {
    for (int node = 0; node < setup_.nodes; ++node) agent_stops(node);
  }
  // SIGINT or SIGTERM; `grace_s`: as `dlaunch stop --grace` leaves it.
  void signal(int signal, std::optional<int> grace_s = std::nullopt) {
    if (grace_s) REQUIRE(write_stop_request(job_dir(), *grace_s));
    coordinator_->on_signal(signal);
    settle();
  }

  // Moves the clock to the earliest armed timer and lets it fire.
  // Moves the clock by `by` and runs what came due, the coordinator's timers
  // outside the policy's (the hang watch's) included.
  void advance(std::chrono::milliseconds by) {
    advance_test_clock(by);
    now_ += by;
    // Asio looks at a test clock's timers when its own kernel timer (at most
    // a millisecond away, clock.h) wakes it: a few milliseconds of running.
    for (int i = 0; i < 10 && !io_.stopped(); ++i) io_.run_for(std::chrono::milliseconds(2));
    settle();
  }

  std::optional<JobTimer> fire_next_timer() {
    const auto next = next_armed();
    if (!next) return std::nullopt;
    const auto [timer, left] = *next;
    advance_test_clock(left);
    now_ += left;
    run_until_fired(timer);
    settle();
    return timer;
  }

  // --- what came out ------------------------------------------------------

  FakeTransport transport;
  std::optional<int> exit_code;          // set when the job finished
  std::vector<std::string> logs;         // "warn: ..." as the launcher's log shows them
  std::vector<ConnId> closed_by_server;  // connections the coordinator closed
  std::vector<int> sync_started;         // nodes the coordinator began to offer --sync files

  const JobPolicy& policy() const { return coordinator_->policy(); }
  // The restart round the rank log files are now written for.
  int log_round() const { return sink_.round(); }
  ms now() const { return now_; }
  // How long until `timer` fires, if it is armed.
  std::optional<ms> armed(JobTimer timer) const { return coordinator_->timers().time_left(timer); }
  // Everything printed on stderr since the last call, byte for byte.
  std::string printed() {
    sink_.terminal().drain();
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = ::pread(terminal_.fd, buf, sizeof buf, printed_until_)) > 0) {
      text.append(buf, static_cast<std::size_t>(n));
      printed_until_ += n;
    }
    return text;
  }
  const std::vector<proto::Message>& received(int node) { return inbox_[conn(node)]; }
  // Messages of one kind that a node received, oldest first.
  template <class M>
  std::vector<M> received_of(int node) {
    std::vector<M> found;
    for (const auto& m : received(node)) {
      if (const auto* one = std::get_if<M>(&m)) found.push_back(*one);
    }
    return found;
  }
  void forget_received() { inbox_.clear(); }
  bool has_log(const std::string& line) const {
    for (const auto& l : logs) {
      if (l == line) return true;
    }
    return false;
  }
  std::string job_dir() const { return scratch_.path() + "/job"; }

 private:
  // The remote transport of the coordinator's AgentTransports, which owns it:
  // the test's FakeTransport.
  class LentTransport : public Transport {
   public:
    explicit LentTransport(FakeTransport& fake) : fake_(fake) {}
    std::unique_ptr<AgentHandle> start(const HostEntry& host, const AgentLaunch& launch,
                                       AgentEvents events) override {
      return fake_.start(host, launch, std::move(events));
    }

   private:
    FakeTransport& fake_;
  };

  // The agents' connections: what the coordinator sends is kept per node.
  class Agents : public FakeAgentService {
   public:
    Agents(asio::io_context& io, Callbacks callbacks, FakeJob& job)
        : FakeAgentService(io, std::move(callbacks)), job_(job) {}
    void close(ConnId id, const std::string& reason) override {
      job_.closed_by_server.push_back(id);
      job_.closed_.insert(node(id));
      FakeAgentService::close(id, reason);
    }

   protected:
    void on_send(ConnId id, const proto::Message& message) override {
      job_.inbox_[id].push_back(message);
      if (const auto* offer = std::get_if<proto::SyncOffer>(&message); offer && offer->first == 0)
        job_.sync_started.push_back(node(id));
    }

   private:
    FakeJob& job_;
  };

  LogSink::Settings sink_settings() {
    LogSink::Settings s;
    s.job_dir = job_dir();
    s.quiet = true;  // the ranks' lines stay in their files
    s.terminal.out_fd = terminal_.fd;
    s.terminal.err_fd = terminal_.fd;
    return s;
  }

  Coordinator::Settings coordinator_settings() {
    std::filesystem::create_directories(job_dir());
    Coordinator::Settings s;
    Plan& plan = s.plan;
    plan.mode = Mode::hosts;
    plan.job = "job";
    plan.nnodes = setup_.nodes;
    plan.rdzv_bind = "127.0.0.1";
    plan.master_addr = "10.0.0.1";
    plan.node0_address = "198.19.0.2";
    plan.probe_master = setup_.probe;
    plan.command = {"train"};
    for (int n = 0; n < setup_.nodes; ++n) {
      PlannedNode planned;
      planned.node_rank = n;
      planned.host.name = host(n);
      planned.host.address = "198.19.0." + std::to_string(2 + n);
      planned.host.spare = setup_.spares.contains(n);
      if (setup_.behind_jump.contains(n)) planned.host.jump = "bastion";
      planned.local = false;
      planned.nproc = setup_.nproc;
      plan.nodes.push_back(planned);
    }
    Options& o = s.options;
    o.max_restarts = setup_.max_restarts;
    o.grace_s = setup_.grace_s;
    o.rdzv_timeout_s = setup_.rdzv_timeout_s;
    o.verbose = setup_.verbose ? 1 : 0;
    o.ranks_filter = setup_.ranks_filter;
    o.min_nodes = setup_.min_nodes;
    o.max_nodes = setup_.max_nodes;
    if (setup_.sync) {
      o.sync_dir = scratch_.path() + "/sync";
      std::filesystem::create_directories(o.sync_dir);
      s.sync = std::make_shared<const SyncManifest>(SyncManifest{.root = o.sync_dir});
    }
    if (setup_.carry_checkpoint) o.checkpoint_dir = "checkpoints";
    o.hang_timeout = setup_.hang_timeout;
    s.job_dir = job_dir();
    s.record.name = plan.job;
    s.service = [this](RendezvousService::Callbacks callbacks) {
      auto service = std::make_unique<Agents>(io_, std::move(callbacks), *this);
      agents_ = service.get();
      return std::unique_ptr<RendezvousService>(std::move(service));
    };
    return s;
  }

  void sends(int node, proto::Message message) {
    agents_->answer(conn(node), std::move(message));
    settle();
  }

  // Runs what is ready, then the timers already due, as the event loop would
  // before it sleeps; notes when the job finished.
  void settle() {
    io_.poll();
    while (const auto next = next_armed()) {
      if (next->second.count() > 0) break;
      run_until_fired(next->first);
      io_.poll();
    }
    if (!exit_code && policy().finished()) exit_code = coordinator_->finish();
  }

  // The armed timer that fires first, and how long until it does.
  std::optional<std::pair<JobTimer, ms>> next_armed() const {
    std::optional<std::pair<JobTimer, ms>> next;
    for (std::size_t i = 0; i < kJobTimers; ++i) {
      const auto timer = static_cast<JobTimer>(i);
      if (const auto left = armed(timer); left && (!next || *left < next->second))
        next.emplace(timer, *left);
    }
    return next;
  }

  // The timer is due on the test's clock: the event loop sees it within a
  // millisecond (common/clock.h). Another timer due with it may cancel it.
  void run_until_fired(JobTimer timer) {
    const auto before = coordinator_->timers().expiries(timer);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    auto due = [&] {
      const auto left = armed(timer);
      return left && left->count() <= 0;
    };
    while (coordinator_->timers().expiries(timer) == before && due() && !io_.stopped()) {
      REQUIRE(std::chrono::steady_clock::now() < give_up);
      io_.run_one_for(std::chrono::milliseconds(5));
    }
  }

  Setup setup_;
  ScratchDir scratch_;
  FrozenTestClock clock_;
  // The console's stderr (and stdout); closed after the sink, whose writer
  // drains into it as it goes.
  struct File {
    int fd = -1;
    ~File() {
      if (fd >= 0) ::close(fd);
    }
  } terminal_;
  asio::io_context io_;
  AgentTransports transports_;
  LogSink sink_;
  Agents* agents_ = nullptr;  // made by the coordinator's start()
  std::optional<Coordinator> coordinator_;
  std::map<ConnId, std::vector<proto::Message>> inbox_;
  std::set<int> closed_;  // nodes whose connection closed
  ms now_{0};
  off_t printed_until_ = 0;
};

}  // namespace dlaunch::testing
