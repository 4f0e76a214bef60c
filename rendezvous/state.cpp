#include "rendezvous/state.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "common/utf8.h"

namespace dlaunch {

RendezvousState::RendezvousState(Config config)
    : config_(std::move(config)),
      members_(static_cast<std::size_t>(config_.nnodes)),
      master_addr_(config_.master_addr) {
  std::vector<int> everyone(members_.size());
  for (std::size_t i = 0; i < everyone.size(); ++i) everyone[i] = static_cast<int>(i);
  node_rank_of_.assign(members_.size(), -1);
  set_roster(std::move(everyone));
}

void RendezvousState::set_roster(std::vector<int> roster) {
  for (int index : roster_) node_rank_of_[static_cast<std::size_t>(index)] = -1;
  roster_ = std::move(roster);
  for (std::size_t rank = 0; rank < roster_.size(); ++rank)
    node_rank_of_[static_cast<std::size_t>(roster_[rank])] = static_cast<int>(rank);
}

bool RendezvousState::roster_joined() const {
  return std::all_of(roster_.begin(), roster_.end(), [this](int index) {
    return members_[static_cast<std::size_t>(index)].has_value();
  });
}

std::vector<Outbound> RendezvousState::on_join(ConnId conn, const proto::Join& join) {
  auto reject = [&](std::string reason) {
    return std::vector<Outbound>{{conn, proto::Reject{std::move(reason)}}};
  };
  const bool late = assigned_ || restart_pending_ || round_ > 0;
  if (late && !config_.admit_late) return reject("the job has already started");
  if (join.nnodes != 0 && join.nnodes != config_.nnodes) {
    return reject("this node was started with --nnodes " + std::to_string(join.nnodes) +
                  ", but node 0 runs the job with --nnodes " + std::to_string(config_.nnodes) +
                  "; start every node with the same --nnodes");
  }
  if (member(conn) != nullptr) return reject("this connection has already joined");
  if (!printable_utf8(join.host))
    return reject("host name \"" + escape_unprintable(join.host) +
                  "\" is not printable UTF-8 text");
  if (join.nproc > kMaxNproc) {
    return reject(join.host + " asked for " + std::to_string(join.nproc) +
                  " ranks; a node runs at most " + std::to_string(kMaxNproc));
  }
  if (joined_ranks_ + join.nproc > kMaxWorldSize) {
    return reject(join.host + "'s " + std::to_string(join.nproc) +
                  " ranks would make the job more than " + std::to_string(kMaxWorldSize) +
                  " ranks");
  }
  // A node started without --node-rank (torchrun's same line on every node)
  // takes the first place free after node 0's.
  int index = join.node_rank;
  if (index == kAnyNodeRank && config_.node_names.empty()) {
    for (std::size_t i = 1; i < members_.size() && index < 0; ++i) {
      if (!members_[i]) index = static_cast<int>(i);
    }
    if (index < 0) {
      return reject("all " + std::to_string(config_.nnodes) + " places of the job (--nnodes " +
                    std::to_string(config_.nnodes) + ") are taken");
    }
  }
  if (index < 0 || index >= config_.nnodes) {
    return reject("node rank " + std::to_string(join.node_rank) + " is outside 0.." +
                  std::to_string(config_.nnodes - 1) + " (--nnodes " +
                  std::to_string(config_.nnodes) + ")");
  }
  auto& slot = members_[static_cast<std::size_t>(index)];
  if (slot) {
    return reject("node rank " + std::to_string(index) + " is already taken by host " + slot->host);
  }
  if (!config_.node_names.empty() &&
      config_.node_names[static_cast<std::size_t>(index)] != join.host) {
    return reject("node rank " + std::to_string(index) + " belongs to host " +
                  config_.node_names[static_cast<std::size_t>(index)] + ", not " + join.host);
  }
  slot = Member{conn, index, join.nproc, join.host, join.master_port, true};
  node_of_conn_[conn] = index;
  ++joined_;
  joined_ranks_ += join.nproc;
  // A late node runs nothing this round (done, as a spare is): a later
  // roster may take it.
  if (late) return {};
  if (joined_ < config_.nnodes || config_.hold_for_network) return {};
  return assign_all();
}

std::vector<Outbound> RendezvousState::assign_with_network(
    std::string master_addr, std::vector<std::string> interface_by_node) {
  if (!roster_joined() || assigned_ || round_ != 0) return {};
  set_network(std::move(master_addr), std::move(interface_by_node));
  return assign_all();
}

void RendezvousState::set_network(std::string master_addr,
                                  std::vector<std::string> interface_by_node) {
  master_addr_ = std::move(master_addr);
  interface_by_node_ = std::move(interface_by_node);
  interface_by_node_.resize(members_.size());
}

void RendezvousState::on_leave(ConnId conn) {
  auto it = node_of_conn_.find(conn);
  if (it == node_of_conn_.end()) return;
  auto& m = members_[static_cast<std::size_t>(it->second)];
  if (assigned_ || restart_pending_) {
    // Gone for good: its ranks are gone with it, and a round no longer waits.
    if (!m->done) --running_;
    m->done = true;
    m->conn = 0;
  } else {
    joined_ranks_ -= m->nproc;
    m.reset();
    --joined_;
  }
  node_of_conn_.erase(it);
}

std::vector<Outbound> RendezvousState::on_agent_done(ConnId conn, const proto::AgentDone& done) {
  auto it = node_of_conn_.find(conn);
  if (it != node_of_conn_.end() && done.round == round_) {
    auto& m = members_[static_cast<std::size_t>(it->second)];
    if (!m->done) --running_;
    m->done = true;
    if (done.next_master_port != 0) m->master_port = done.next_master_port;
  }
  if (restart_pending_ && all_done()) {
    restart_pending_ = false;
    ++round_;
    return assign_all();
  }
  return {};
}

std::vector<Outbound> RendezvousState::begin_restart() {
  if (!assigned_) return {};
  assigned_ = false;
  restart_pending_ = true;
  if (all_done()) {
    restart_pending_ = false;
    ++round_;
    return assign_all();
  }
  return {};
}

bool RendezvousState::all_done() const {
  return running_ == 0;
}

const RendezvousState::Member* RendezvousState::member(ConnId conn) const {
  auto it = node_of_conn_.find(conn);
  if (it == node_of_conn_.end()) return nullptr;
  const auto& m = members_[static_cast<std::size_t>(it->second)];
  return m ? &*m : nullptr;
}

int RendezvousState::rank_offset(int node_rank) const {
  return offsets_.empty() ? 0 : offsets_[static_cast<std::size_t>(node_rank)];
}

int RendezvousState::rank_offset_of(int index) const {
  const int node_rank = node_rank_of(index);
  if (node_rank < 0 || offsets_.empty()) return -1;
  return rank_offset(node_rank);
}

bool RendezvousState::owns_rank(ConnId conn, int rank) const {
  return local_rank_of(conn, rank).has_value();
}

std::optional<int> RendezvousState::local_rank_of(ConnId conn, int rank) const {
  const Member* m = member(conn);
  if (m == nullptr) return std::nullopt;
  const int first = rank_offset_of(m->index);
  if (first < 0 || rank < first || rank >= first + m->nproc) return std::nullopt;
  return rank - first;
}

const RendezvousState::Member* RendezvousState::member_of_rank(int rank) const {
  if (!assigned_ || rank < 0 || rank >= world_size_) return nullptr;
  // Offsets are ascending: the last node starting at or below `rank` holds it.
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), rank);
  const auto node = static_cast<std::size_t>(std::distance(offsets_.begin(), it) - 1);
  const auto& m = members_[static_cast<std::size_t>(roster_[node])];
  return m ? &*m : nullptr;
}

std::vector<Outbound> RendezvousState::assign_all() {
  // Offsets frozen with the roster: a member lost in this round keeps its
  // ranks' numbers until the next assignment.
  offsets_.assign(roster_.size(), 0);
  int total = 0;
  for (std::size_t rank = 0; rank < roster_.size(); ++rank) {
    offsets_[rank] = total;
    total += members_[static_cast<std::size_t>(roster_[rank])]->nproc;
  }
  world_size_ = total;
  master_port_ = config_.fixed_master_port != 0
                     ? config_.fixed_master_port
                     : members_[static_cast<std::size_t>(roster_.front())]->master_port;
  assigned_ = true;
  std::vector<Outbound> out;
  out.reserve(roster_.size());
  running_ = roster_.size();
  for (std::size_t rank = 0; rank < roster_.size(); ++rank) {
    auto& m = *members_[static_cast<std::size_t>(roster_[rank])];
    m.done = false;
    proto::Assign a;
    a.job = config_.job;
    a.round = round_;
    a.max_restarts = config_.max_restarts;
    a.node_rank = static_cast<std::int32_t>(rank);
    a.nnodes = static_cast<std::int32_t>(roster_.size());
    a.rank_offset = offsets_[rank];
    a.local_world_size = m.nproc;
    a.world_size = world_size_;
    a.master_addr = master_addr_;
    a.master_port = master_port_;
    if (!interface_by_node_.empty())
      a.socket_ifname = interface_by_node_[static_cast<std::size_t>(m.index)];
    out.push_back({m.conn, a});
  }
  return out;
}

}  // namespace dlaunch
