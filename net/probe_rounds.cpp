#include "net/probe_rounds.h"

#include <algorithm>

namespace dlaunch::net {

ProbeRounds::ProbeRounds(std::size_t nodes, std::size_t candidates,
                         std::size_t connections_in_flight)
    : candidates_(candidates),
      window_(std::max<std::size_t>(1, connections_in_flight)),
      nodes_(nodes) {}

std::vector<ProbeRounds::Request> ProbeRounds::start() {
  const std::size_t n = nodes_.size();
  in_rounds_ = n >= kRoundsFromNodes && candidates_ >= 2;
  if (!in_rounds_) {
    stage_ = Stage::everyone;
    for (std::size_t i = 0; i < n; ++i)
      if (!nodes_[i].lost) queue(i, true);
  } else {
    stage_ = Stage::scouts;
    scouts_ = probe_scouts(n);
    for (auto i : scouts_)
      if (!nodes_[i].lost) queue(i, true);
  }
  if (stage_waiting_ == 0) {
    // Nobody to ask (no node, or every one lost): the stage is over at once.
    Reply unused;  // on_scouts_done only queues; drain() below sends
    if (stage_ == Stage::scouts) {
      on_scouts_done(unused);
    } else {
      complete_ = true;
    }
  }
  return drain();
}

void ProbeRounds::queue(std::size_t node, bool all, bool first) {
  auto& state = all ? nodes_[node].all : nodes_[node].one;
  state = Ask::queued;
  if (nodes_[node].joined) {
    if (first && all) {
      first_.push_back(node);
    } else {
      queue_.emplace_back(node, all);
    }
  }
  ++stage_waiting_;
}

std::vector<ProbeRounds::Request> ProbeRounds::on_joined(std::size_t node) {
  if (node >= nodes_.size() || nodes_[node].joined) return {};
  auto& n = nodes_[node];
  n.joined = true;
  if (n.all == Ask::queued) queue_.emplace_back(node, true);
  if (n.one == Ask::queued) queue_.emplace_back(node, false);
  return drain();
}

bool ProbeRounds::send_if_room(std::size_t node, bool all, std::vector<Request>& out) {
  const std::size_t size = all ? candidates_ : 1;
  if (in_flight_ > 0 && in_flight_ + size > window_) return false;
  in_flight_ += size;
  (all ? nodes_[node].all : nodes_[node].one) = Ask::sent;
  Request request{node, {}};
  if (all) {
    for (std::size_t c = 0; c < candidates_; ++c) request.candidates.push_back(c);
  } else {
    request.candidates.push_back(*scouts_choice_);
  }
  out.push_back(std::move(request));
  return true;
}

// Sends what the window allows, first_ before queue_; a request a fallback
// overtook (or one already sent from first_) is skipped.
std::vector<ProbeRounds::Request> ProbeRounds::drain() {
  std::vector<Request> out;
  while (!first_.empty()) {
    const std::size_t node = first_.front();
    if (nodes_[node].all == Ask::queued && !send_if_room(node, true, out)) return out;
    first_.pop_front();
  }
  while (queue_head_ < queue_.size()) {
    const auto [node, all] = queue_[queue_head_];
    const auto state = all ? nodes_[node].all : nodes_[node].one;
    if (state == Ask::queued && !send_if_room(node, all, out)) break;
    ++queue_head_;
  }
  if (queue_head_ == queue_.size()) {
    queue_.clear();
    queue_head_ = 0;
  }
  return out;
}

std::vector<ProbeOutcome> ProbeRounds::not_tried() const {
  ProbeOutcome outcome;
  outcome.error = "not tried";
  return std::vector<ProbeOutcome>(candidates_, outcome);
}

void ProbeRounds::record(std::size_t node, std::vector<ProbeOutcome> outcomes, bool all) {
  auto& n = nodes_[node];
  if (!n.result) ++reported_;
  n.result = std::move(outcomes);
  n.tried_all = all;
}

ProbeRounds::Reply ProbeRounds::on_report(std::size_t node, std::vector<ProbeOutcome> outcomes) {
  Reply reply;
  if (node >= nodes_.size() || complete_) return reply;
  auto& n = nodes_[node];
  // The scouts' choice alone is one outcome; every candidate is two or more.
  if (n.one == Ask::sent && outcomes.size() == 1 && candidates_ > 1) {
    n.one = Ask::none;
    in_flight_ -= 1;
    if (stage_ == Stage::confirm) {
      const bool reached = outcomes.front().reached;
      auto full = not_tried();
      full[*scouts_choice_] = std::move(outcomes.front());
      record(node, std::move(full), false);
      --stage_waiting_;
      if (!reached) {
        fall_back(reply, node);
      } else if (stage_waiting_ == 0) {
        complete_ = true;
      }
    }
  } else if (n.all == Ask::sent) {
    n.all = Ask::none;
    in_flight_ -= candidates_;
    if (outcomes.size() != candidates_) {
      reply.malformed = true;
      outcomes = not_tried();
      for (auto& o : outcomes) o.error = "no valid answer";
    }
    const bool reached_any =
        std::any_of(outcomes.begin(), outcomes.end(), [](const auto& o) { return o.reached; });
    if (!reached_any && !reply.malformed && !n.retried) {
      // Still counted as waited for: the same request goes out again.
      n.retried = true;
      n.all = Ask::queued;
      if (n.joined) first_.push_back(node);  // its answer may end the probe
      reply.retrying = true;
      reply.next = drain();
      return reply;
    }
    if (!reached_any && in_rounds_) {
      complete_ = true;  // nothing more to ask: the job cannot have a MASTER_ADDR
      reply.reached_nothing = node;
      reply.outcomes = outcomes;
      record(node, std::move(outcomes), true);
      return reply;
    }
    record(node, std::move(outcomes), true);
    on_stage_request_done(reply);
  }
  auto next = drain();
  reply.next.insert(reply.next.end(), std::make_move_iterator(next.begin()),
                    std::make_move_iterator(next.end()));
  return reply;
}

void ProbeRounds::on_stage_request_done(Reply& reply) {
  if (--stage_waiting_ > 0) return;
  if (stage_ == Stage::scouts) {
    on_scouts_done(reply);
  } else {
    complete_ = true;
  }
}

ProbeRounds::Reply ProbeRounds::on_lost(std::size_t node) {
  Reply reply;
  if (node >= nodes_.size() || complete_ || nodes_[node].lost) return reply;
  auto& n = nodes_[node];
  n.lost = true;
  // The request this stage waits for: the scouts' choice while confirming,
  // every candidate otherwise (a confirmation overtaken by a fallback is not).
  const Ask counted = stage_ == Stage::confirm ? n.one : n.all;
  if (n.all == Ask::sent) in_flight_ -= candidates_;
  if (n.one == Ask::sent) in_flight_ -= 1;
  n.all = n.one = Ask::none;  // drain() skips what is still queued
  auto lost = not_tried();
  for (auto& o : lost) o.error = "lost";
  record(node, std::move(lost), true);  // tried_all: a fallback asks it nothing
  if (counted != Ask::none) on_stage_request_done(reply);
  reply.next = drain();
  return reply;
}

void ProbeRounds::on_scouts_done(Reply& reply) {
  for (std::size_t c = 0; c < candidates_ && !scouts_choice_; ++c) {
    const bool all = std::all_of(scouts_.begin(), scouts_.end(), [&](std::size_t i) {
      return nodes_[i].lost || (*nodes_[i].result)[c].reached;
    });
    if (all) scouts_choice_ = c;
  }
  if (!scouts_choice_) {
    // No candidate works even for the scouts: the rule's report needs every
    // node's every outcome.
    fall_back(reply);
    return;
  }
  stage_ = Stage::confirm;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (!nodes_[i].tried_all) queue(i, false);
  if (stage_waiting_ == 0) complete_ = true;
}

void ProbeRounds::fall_back(Reply& reply, std::optional<std::size_t> missed) {
  reply.fell_back = true;
  stage_ = Stage::fallback;
  stage_waiting_ = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    auto& n = nodes_[i];
    if (n.tried_all) continue;
    if (n.one == Ask::queued) n.one = Ask::none;  // overtaken; a sent one is ignored
    if (n.result) {
      n.result.reset();
      --reported_;
    }
    queue(i, true, i == missed);
  }
  if (stage_waiting_ == 0) complete_ = true;
}

std::vector<std::vector<ProbeOutcome>> ProbeRounds::take_outcomes() {
  std::vector<std::vector<ProbeOutcome>> out;
  out.reserve(nodes_.size());
  for (auto& n : nodes_) out.push_back(n.result ? std::move(*n.result) : not_tried());
  return out;
}

}  // namespace dlaunch::net
