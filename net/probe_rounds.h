// Which nodes try which of node 0's candidate MASTER_ADDRs, and when.
//
// The rule (net/choice.h) takes the first candidate that every node reached,
// so every node must try the one chosen. A small job asks every node to try
// every candidate at once. A big job would open nodes x candidates
// connections to node 0's probe listener (30,000 for 10,000 nodes and three
// addresses), so it goes in rounds: a few scouts spread over the node list
// try every candidate, then the other nodes try only the first candidate that
// every scout reached. If one of them misses it, every node that tried only
// that one tries them all, and the rule sees every outcome as in a small job:
// the result never depends on the rounds, only the time does.
//
// Connections in flight stay within a window (node 0's accept queue), and
// each report lets the next nodes go. A node that reaches none of the
// candidates is asked once more; in rounds, a second miss ends the probe. A node is asked only once
// it has joined (on_joined): the probe can start as soon as node 0 has, and runs while the last
// nodes of a big job are still arriving; a stage waits for the requests of nodes not yet joined as
// for any other. A node that is lost (its agent gone, or down before the probe began) is waited
// for no more: its outcomes read "lost", and the scouts' choice is made without it.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <vector>

#include "net/choice.h"
#include "net/probe_scouts.h"

namespace dlaunch::net {

class ProbeRounds {
 public:
  // Rounds are used from this many nodes on (and two or more candidates).
  static constexpr std::size_t kRoundsFromNodes = kProbeRoundsFromNodes;
  // Scouts: this many nodes spread evenly over the node list, node 0 and the
  // last node among them (net/probe_scouts.h).
  static constexpr std::size_t kScouts = kProbeScouts;

  struct Request {
    std::size_t node = 0;
    std::vector<std::size_t> candidates;  // indexes into the candidates, in order
  };
  struct Reply {
    std::vector<Request> next;  // send these now
    bool malformed = false;     // the report had a number of outcomes nobody asked for
    bool fell_back = false;     // a node missed the scouts' choice: every node tries everything
    // The node reached none of the candidates and is asked once more (a
    // lost SYN, a host slow for a moment).
    bool retrying = false;
    // In rounds: the node reached none of the candidates twice. No candidate
    // can then be reached by every node, so the job fails now, naming it,
    // instead of sending every node to every address first (at 20,000 nodes
    // and 8 addresses, 160,000 connections for a result known already).
    // `outcomes` is its second answer.
    std::optional<std::size_t> reached_nothing;
    std::vector<ProbeOutcome> outcomes;
  };

  ProbeRounds(std::size_t nodes, std::size_t candidates, std::size_t connections_in_flight);

  std::vector<Request> start();
  // The node has joined: what it was or will be asked goes out from now on.
  // Before start() it only marks the node; after it, returns what to send now.
  std::vector<Request> on_joined(std::size_t node);
  // A node's report: one outcome per candidate it was asked to try, in the
  // request's order. A report nobody is waiting for changes nothing.
  Reply on_report(std::size_t node, std::vector<ProbeOutcome> outcomes);
  // The node will never report. Before start(), it is simply never asked.
  Reply on_lost(std::size_t node);

  bool complete() const { return complete_; }
  bool reported(std::size_t node) const { return nodes_[node].result.has_value(); }
  std::size_t reports_missing() const { return nodes_.size() - reported_; }
  bool in_rounds() const { return in_rounds_; }
  // The first candidate every scout reached, once the scouts have reported.
  std::optional<std::size_t> scouts_choice() const { return scouts_choice_; }
  // Once complete: per node, one outcome per candidate; those a node was not
  // asked to try read "not tried".
  std::vector<std::vector<ProbeOutcome>> take_outcomes();

 private:
  enum class Ask { none, queued, sent };
  struct Node {
    Ask all = Ask::none;     // a request for every candidate
    Ask one = Ask::none;     // a request for the scouts' choice only
    bool tried_all = false;  // result holds an outcome for every candidate
    bool joined = false;     // requests wait (as queued) until the node has joined
    bool retried = false;    // it reached nothing once and was asked again
    bool lost = false;       // never asked again; its result reads "lost"
    std::optional<std::vector<ProbeOutcome>> result;
  };
  enum class Stage { everyone, scouts, confirm, fallback };

  // `first`: before every request queued so far (a node whose answer decides
  // the probe: one that missed the scouts' choice, or is asked again).
  void queue(std::size_t node, bool all, bool first = false);
  std::vector<Request> drain();
  // Sends `node`'s queued request if the window allows; false when it is full.
  bool send_if_room(std::size_t node, bool all, std::vector<Request>& out);
  void record(std::size_t node, std::vector<ProbeOutcome> outcomes, bool all);
  void on_scouts_done(Reply& reply);
  // One request of the current stage answered (or given up): the next stage, or the end.
  void on_stage_request_done(Reply& reply);
  // Every node tries every candidate; `missed`, the node that missed the
  // scouts' choice, first: if it reaches nothing at all (twice), the probe
  // ends before the others' thousands of connections.
  void fall_back(Reply& reply, std::optional<std::size_t> missed = std::nullopt);
  std::vector<ProbeOutcome> not_tried() const;

  std::size_t candidates_;
  std::size_t window_;
  std::vector<Node> nodes_;
  std::vector<std::size_t> scouts_;
  // Requests of joined nodes, in order: node, all candidates.
  std::vector<std::pair<std::size_t, bool>> queue_;
  std::size_t queue_head_ = 0;
  std::deque<std::size_t> first_;  // requests for every candidate that go before queue_
  std::size_t in_flight_ = 0;      // connections of the requests that are out
  std::size_t reported_ = 0;
  std::size_t stage_waiting_ = 0;  // requests of this stage not yet answered
  Stage stage_ = Stage::everyone;
  bool in_rounds_ = false;
  bool complete_ = false;
  std::optional<std::size_t> scouts_choice_;
};

}  // namespace dlaunch::net
