// The rendezvous state machine: agents join with their index in the host list
// (the node rank they were started with) and a rank count; the round's roster
// says which of them run ranks, in node-rank order (all of them, unless the
// job has spares or a MIN:MAX node count: launcher/fleet/membership.h). When
// the roster has joined it hands each member its assignment (contiguous global
// ranks in node-rank order, one MASTER_ADDR/PORT for all). Restart rounds wait
// for every member to report its ranks stopped (or to be lost), then assign
// the roster of the next round with the round number incremented and a fresh
// port. No sockets here: messages in, messages out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/messages.h"

namespace dlaunch {

using ConnId = std::uint64_t;

struct Outbound {
  ConnId to = 0;
  proto::Message message;
};

class RendezvousState {
 public:
  struct Config {
    int nnodes = 1;  // agents that join: every host, spares included
    std::string job;
    int max_restarts = 0;
    std::string master_addr;
    int fixed_master_port = 0;            // 0: the port node 0 found free
    std::vector<std::string> node_names;  // expected host name per node rank; empty: any
    // Once everyone joined, wait for assign_with_network() instead of
    // assigning at once: the caller first probes which MASTER_ADDR works.
    bool hold_for_network = false;
    // An elastic job: a node that joins after the ranks were assigned is
    // taken as a member that runs nothing until a later roster names it
    // (otherwise it is refused: the job has started).
    bool admit_late = false;
  };

  struct Member {
    ConnId conn = 0;
    std::int32_t index = 0;  // in the host list: the node rank its agent joined with
    std::int32_t nproc = 0;
    std::string host;
    std::int32_t master_port = 0;
    bool done = true;  // runs no ranks: reported AgentDone, or not assigned this round
  };

  // Join.node_rank of a manual-mode node that takes the first free place.
  static constexpr std::int32_t kAnyNodeRank = -1;
  // Ranks one node may run, and the whole job: a Join that claims more is
  // refused, so that rank numbers stay far from int32's end and one agent
  // cannot make node 0 open a log file for each of a million ranks.
  static constexpr std::int32_t kMaxNproc = 4096;
  static constexpr std::int64_t kMaxWorldSize = std::int64_t{1} << 24;

  explicit RendezvousState(Config config);

  // An authenticated agent's Join. Rejects a node rank out of range, taken, or
  // not matching the plan's host name; assigns everyone once the last arrives.
  std::vector<Outbound> on_join(ConnId conn, const proto::Join& join);
  // A connection closed. Before assignment its slot is freed for a retry;
  // after, the member is gone for good: a round no longer waits for it.
  void on_leave(ConnId conn);
  // The hosts (by index) that run ranks, in node-rank order, from the next
  // assignment on; every host until this is called.
  void set_roster(std::vector<int> roster);
  // An agent's ranks have all exited for the current round.
  std::vector<Outbound> on_agent_done(ConnId conn, const proto::AgentDone& done);
  // With hold_for_network: the probed MASTER_ADDR and each host's interface
  // towards it (by host index; empty: unknown). Assigns the roster once it has
  // joined, and later rounds keep the choice until it is made again.
  std::vector<Outbound> assign_with_network(std::string master_addr,
                                            std::vector<std::string> interface_by_node);
  // A new choice for the rounds to come (node 0 changed hands).
  void set_network(std::string master_addr, std::vector<std::string> interface_by_node);
  // Starts the next round: assignments go out once every member reports done.
  std::vector<Outbound> begin_restart();

  bool assigned() const { return assigned_; }
  // Ranks were assigned at least once (members' `done` means something).
  bool started() const { return assigned_ || restart_pending_ || round_ > 0; }
  bool all_joined() const { return joined_ == config_.nnodes; }
  bool roster_joined() const;
  const std::vector<int>& roster() const { return roster_; }
  int nnodes() const { return static_cast<int>(roster_.size()); }
  // The node rank of the host at `index` this round; -1 when it runs no ranks.
  int node_rank_of(int index) const { return node_rank_of_[static_cast<std::size_t>(index)]; }
  const std::string& master_addr() const { return master_addr_; }
  bool all_done() const;
  int joined() const { return joined_; }
  int round() const { return round_; }
  int world_size() const { return world_size_; }
  int master_port() const { return master_port_; }
  const Config& config() const { return config_; }
  const std::vector<std::optional<Member>>& members() const { return members_; }
  const Member* member(ConnId conn) const;
  // Whether global rank `rank` belongs to the agent on `conn` (peers' rank
  // numbers are checked against the assignment, never trusted).
  bool owns_rank(ConnId conn, int rank) const;
  // `rank`'s place among its node's ranks (LOCAL_RANK), when conn's agent owns it.
  std::optional<int> local_rank_of(ConnId conn, int rank) const;
  // The member holding a global rank, if assigned.
  const Member* member_of_rank(int rank) const;
  int rank_offset(int node_rank) const;
  // The first global rank of the host at `index`; -1 when it runs none.
  int rank_offset_of(int index) const;

 private:
  std::vector<Outbound> assign_all();

  Config config_;
  std::vector<std::optional<Member>> members_;  // by host index
  std::vector<int> roster_;                     // host index by node rank
  std::vector<int> node_rank_of_;               // by host index; -1: not in the roster
  std::size_t running_ = 0;                     // members without `done`: all_done() without a scan
  int joined_ = 0;
  std::int64_t joined_ranks_ = 0;  // the nproc of every member joined
  bool assigned_ = false;
  bool restart_pending_ = false;
  int round_ = 0;
  int world_size_ = 0;
  int master_port_ = 0;
  std::string master_addr_;
  std::vector<std::string> interface_by_node_;
  std::vector<int> offsets_;
  std::unordered_map<ConnId, std::int32_t> node_of_conn_;
};

}  // namespace dlaunch
