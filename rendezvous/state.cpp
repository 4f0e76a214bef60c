#include "rendezvous/state.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace dlaunch {

RendezvousState::RendezvousState(Config config)
    : config_(std::move(config)),
      members_(static_cast<std::size_t>(config_.nnodes)),
      master_addr_(config_.master_addr) {}

std::vector<Outbound> RendezvousState::on_join(ConnId conn, const proto::Join& join) {
  auto reject = [&](std::string reason) {
    return std::vector<Outbound>{{conn, proto::Reject{std::move(reason)}}};
  };
  if (assigned_ || restart_pending_) return reject("the job has already started");
  if (join.nnodes != 0 && join.nnodes != config_.nnodes) {
    return reject("this node was started with --nnodes " + std::to_string(join.nnodes) +
                  ", but node 0 runs the job with --nnodes " + std::to_string(config_.nnodes) +
                  "; start every node with the same --nnodes");
  }
  if (join.node_rank < 0 || join.node_rank >= config_.nnodes) {
    return reject("node rank " + std::to_string(join.node_rank) + " is outside 0.." +
                  std::to_string(config_.nnodes - 1) + " (--nnodes " +
                  std::to_string(config_.nnodes) + ")");
  }
  if (member(conn) != nullptr) return reject("this connection has already joined");
  auto& slot = members_[static_cast<std::size_t>(join.node_rank)];
  if (slot) {
    return reject("node rank " + std::to_string(join.node_rank) + " is already taken by host " +
                  slot->host);
  }
  if (!config_.node_names.empty() &&
      config_.node_names[static_cast<std::size_t>(join.node_rank)] != join.host) {
    return reject("node rank " + std::to_string(join.node_rank) + " belongs to host " +
                  config_.node_names[static_cast<std::size_t>(join.node_rank)] + ", not " +
                  join.host);
  }
  slot = Member{conn, join.node_rank, join.nproc, join.host, join.master_port, false};
  node_of_conn_[conn] = join.node_rank;
  ++joined_;
  if (joined_ < config_.nnodes || config_.hold_for_network) return {};
  return assign_all();
}

std::vector<Outbound> RendezvousState::assign_with_network(
    std::string master_addr, std::vector<std::string> interface_by_node) {
  if (!all_joined() || assigned_ || round_ != 0) return {};
  master_addr_ = std::move(master_addr);
  interface_by_node_ = std::move(interface_by_node);
  interface_by_node_.resize(members_.size());
  return assign_all();
}

void RendezvousState::on_leave(ConnId conn) {
  if (assigned_ || restart_pending_) return;
  auto it = node_of_conn_.find(conn);
  if (it == node_of_conn_.end()) return;
  members_[static_cast<std::size_t>(it->second)].reset();
  node_of_conn_.erase(it);
  --joined_;
}

std::vector<Outbound> RendezvousState::on_agent_done(ConnId conn, const proto::AgentDone& done) {
  auto it = node_of_conn_.find(conn);
  if (it != node_of_conn_.end() && done.round == round_) {
    auto& m = members_[static_cast<std::size_t>(it->second)];
    if (!m->done) ++done_count_;
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
  return done_count_ == members_.size();
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

bool RendezvousState::owns_rank(ConnId conn, int rank) const {
  const Member* m = member(conn);
  if (m == nullptr || offsets_.empty()) return false;
  const int first = rank_offset(m->node_rank);
  return rank >= first && rank < first + m->nproc;
}

const RendezvousState::Member* RendezvousState::member_of_rank(int rank) const {
  if (!assigned_ || rank < 0 || rank >= world_size_) return nullptr;
  // Offsets are ascending: the last node starting at or below `rank` holds it.
  auto it = std::upper_bound(offsets_.begin(), offsets_.end(), rank);
  const auto node = static_cast<std::size_t>(std::distance(offsets_.begin(), it) - 1);
  const auto& m = members_[node];
  return m ? &*m : nullptr;
}

std::vector<Outbound> RendezvousState::assign_all() {
  offsets_.assign(members_.size(), 0);
  int total = 0;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    offsets_[i] = total;
    total += members_[i]->nproc;
  }
  world_size_ = total;
  master_port_ =
      config_.fixed_master_port != 0 ? config_.fixed_master_port : members_[0]->master_port;
  assigned_ = true;
  std::vector<Outbound> out;
  out.reserve(members_.size());
  done_count_ = 0;
  for (auto& m : members_) {
    m->done = false;
    proto::Assign a;
    a.job = config_.job;
    a.round = round_;
    a.max_restarts = config_.max_restarts;
    a.node_rank = m->node_rank;
    a.nnodes = config_.nnodes;
    a.rank_offset = offsets_[static_cast<std::size_t>(m->node_rank)];
    a.local_world_size = m->nproc;
    a.world_size = world_size_;
    a.master_addr = master_addr_;
    a.master_port = master_port_;
    if (!interface_by_node_.empty())
      a.socket_ifname = interface_by_node_[static_cast<std::size_t>(m->node_rank)];
    out.push_back({m->conn, a});
  }
  return out;
}

}  // namespace dlaunch
