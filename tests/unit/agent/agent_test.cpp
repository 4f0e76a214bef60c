// The real Agent (agent.cpp: its rendezvous client, rank supervisor, signals
// and timers) on a thread of its own, against a real RendezvousServer on
// loopback that the test plays as the coordinator. Its ranks are real
// processes (/bin/sh).
#include "agent/agent.h"

#include <doctest/doctest.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "protocol/auth.h"
#include "rendezvous/server.h"

using namespace dlaunch;

namespace {

// What each rank prints, and its exit code: rank R exits with code R.
const char* const kRank =
    "echo \"rank $RANK of $WORLD_SIZE local $LOCAL_RANK at $MASTER_ADDR:$MASTER_PORT\"; "
    "exit $RANK";

// One agent started as a coordinator would (its launch spec), and the
// coordinator's side of the rendezvous. The test says what the coordinator
// answers to the agent's Join and to each message; the agent's exit code is
// known once its thread ends.
class OneAgent {
 public:
  using OnMessage = std::function<void(OneAgent&, const proto::Message&)>;

  OneAgent(std::vector<std::string> argv, int nproc, OnMessage on_message)
      : secret_(auth::random_bytes(32)), on_message_(std::move(on_message)) {
    // The agent's own log (its thread): kept, not printed.
    log::set_sink([this](log::Level, const std::string& text) {
      std::lock_guard lock(log_mutex_);
      log_.push_back(text);
    });
    RendezvousServer::Callbacks callbacks;
    callbacks.on_join = [this](ConnId conn, const proto::Join& join) {
      conn_ = conn;
      joined = join;
      on_message_(*this, join);
    };
    callbacks.on_message = [this](ConnId, proto::Message&& message) {
      received.push_back(message);
      on_message_(*this, message);
    };
    callbacks.on_close = [this](ConnId, const std::string& reason) {
      closed = reason;
      io_.stop();
    };
    server_.emplace(io_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0), secret_,
                    std::move(callbacks), RendezvousServer::Options{});
    spec_.secret = secret_;
    spec_.rdzv_host = "127.0.0.1";
    spec_.rdzv_port = server_->port();
    spec_.node_rank = 0;
    spec_.nproc = nproc;
    spec_.nnodes = 1;
    spec_.host_name = "unit-host";
    spec_.argv = std::move(argv);
    spec_.grace_s = 1;
  }

  // Runs the agent until its connection closes (the test's own guard: 60 s),
  // then waits for its thread to end: its exit code.
  int run() {
    int code = -1;
    std::thread agent([this, &code] { code = run_agent(spec_, -1, -1); });
    io_.run_for(std::chrono::seconds(60));
    agent.join();
    return code;
  }
  ~OneAgent() { log::set_sink({}); }
  OneAgent(const OneAgent&) = delete;
  OneAgent& operator=(const OneAgent&) = delete;

  void send(const proto::Message& message) { server_->send(conn_, message); }
  // Whether the agent logged a line that starts with `start`.
  bool logged(const std::string& start) {
    std::lock_guard lock(log_mutex_);
    for (const auto& line : log_)
      if (line.starts_with(start)) return true;
    return false;
  }
  // Drops the agent's connection, as a coordinator that died would.
  void vanish() {
    server_->stop();
    io_.stop();
  }

  // One node of `nproc` ranks: the Assign of round 0.
  static proto::Assign assign(int nproc) {
    proto::Assign a;
    a.job = "unit";
    a.nnodes = 1;
    a.local_world_size = nproc;
    a.world_size = nproc;
    a.master_addr = "127.0.0.1";
    a.master_port = 29999;
    return a;
  }

  std::optional<proto::Join> joined;
  std::vector<proto::Message> received;  // after the Join, in order
  std::optional<std::string> closed;     // why the agent's connection closed
  pid_t rank_pid = 0;                    // one_sleeping_rank's rank, once it said it started

  template <class M>
  std::vector<M> received_of() const {
    std::vector<M> found;
    for (const auto& m : received) {
      if (const auto* one = std::get_if<M>(&m)) found.push_back(*one);
    }
    return found;
  }
  // Rank `rank`'s lines, joined.
  std::string output_of(int rank) const {
    std::string text;
    for (const auto& line : received_of<proto::LogLine>())
      if (line.rank == rank) text += line.text + "\n";
    return text;
  }

 private:
  asio::io_context io_;
  std::string secret_;
  OnMessage on_message_;
  LaunchSpec spec_;
  std::optional<RendezvousServer> server_;
  ConnId conn_ = 0;
  std::mutex log_mutex_;
  std::vector<std::string> log_;
};

// One rank that says "started" and would then sleep a minute; once it has
// started, the coordinator does `then`.
OneAgent one_sleeping_rank(std::function<void(OneAgent&)> then) {
  return OneAgent({"/bin/sh", "-c", "echo started $$; exec sleep 60"}, 1,
                  [then](OneAgent& a, const proto::Message& m) {
                    if (std::holds_alternative<proto::Join>(m)) a.send(OneAgent::assign(1));
                    if (const auto* line = std::get_if<proto::LogLine>(&m);
                        line && line->text.starts_with("started ")) {
                      a.rank_pid = static_cast<pid_t>(std::stoi(line->text.substr(8)));
                      then(a);
                    }
                  });
}

// Whether the process `pid` is gone (no such process: reaped, not a zombie).
bool process_gone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

TEST_CASE("agent: joins, runs its ranks with their environment, reports each exit, then stops") {
  OneAgent one({"/bin/sh", "-c", kRank}, 2, [](OneAgent& a, const proto::Message& m) {
    if (std::holds_alternative<proto::Join>(m)) a.send(OneAgent::assign(2));
    if (std::holds_alternative<proto::AgentDone>(m)) a.send(proto::Stop{3, false, -1, "done"});
  });
  CHECK(one.run() == 3);  // the job's result, as the Stop gave it
  REQUIRE(one.joined.has_value());
  CHECK(one.joined->node_rank == 0);
  CHECK(one.joined->nproc == 2);
  CHECK(one.joined->nnodes == 1);
  CHECK(one.output_of(0) == "rank 0 of 2 local 0 at 127.0.0.1:29999\n");
  CHECK(one.output_of(1) == "rank 1 of 2 local 1 at 127.0.0.1:29999\n");
  std::map<int, int> codes;
  for (const auto& exit : one.received_of<proto::RankExit>()) codes[exit.rank] = exit.exit_code;
  CHECK(codes == std::map<int, int>{{0, 0}, {1, 1}});
  const auto done = one.received_of<proto::AgentDone>();
  REQUIRE(done.size() == 1);
  CHECK(done[0].round == 0);
  // Each rank's exit came after its output, and AgentDone after both exits.
  std::map<int, std::size_t> printed_at, exited_at;
  for (std::size_t i = 0; i < one.received.size(); ++i) {
    if (const auto* line = std::get_if<proto::LogLine>(&one.received[i]))
      printed_at.emplace(line->rank, i);
    if (const auto* exit = std::get_if<proto::RankExit>(&one.received[i]))
      exited_at.emplace(exit->rank, i);
  }
  for (int rank : {0, 1}) {
    REQUIRE(printed_at.count(rank) == 1);
    REQUIRE(exited_at.count(rank) == 1);
    CHECK(printed_at[rank] < exited_at[rank]);
  }
  REQUIRE_FALSE(one.received.empty());
  CHECK(std::holds_alternative<proto::AgentDone>(one.received.back()));
  CHECK(one.closed.has_value());
}

TEST_CASE("agent: a Stop with grace 0 ends ranks that would run on, and the agent exits") {
  OneAgent one = one_sleeping_rank([](OneAgent& a) {
    a.send(proto::Stop{130, false, 0, "interrupted"});
  });
  CHECK(one.run() == 130);  // the Stop's code
  const auto exits = one.received_of<proto::RankExit>();
  REQUIRE(exits.size() == 1);
  CHECK(exits[0].signal != 0);  // killed, not exited on its own
  REQUIRE(one.rank_pid > 0);
  CHECK(process_gone(one.rank_pid));
}

TEST_CASE("agent: when the coordinator vanishes it ends its ranks by itself and exits non-zero") {
  OneAgent one = one_sleeping_rank([](OneAgent& a) { a.vanish(); });
  CHECK(one.run() != 0);
  CHECK(one.received_of<proto::RankExit>().empty());  // nobody was left to tell
  CHECK(one.logged("lost the coordinator: "));
  // Its rank, `sleep 60`, was ended and reaped by the agent before it exited.
  REQUIRE(one.rank_pid > 0);
  CHECK(process_gone(one.rank_pid));
}
