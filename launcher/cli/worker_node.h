// A manual-mode node other than 0 (`--node-rank 1`, or torchrun's line on a
// node that does not hold the rendezvous endpoint) runs its agent in this
// process, under a guardian, and keeps a record of its own in the state dir:
// "<job>.node<R>" (or "<job>.node-<host>" while the rendezvous still has to
// give the rank), so that `list`, `get`, `stop` and `delete` reach it on its
// machine, and nodes whose home (and state dir) is shared take no name from
// one another or from node 0, whose record keeps the job's own name.
#pragma once

#include <string>

#include "launcher/cli/detach.h"
#include "launcher/config/options.h"
#include "launcher/plan/plan.h"

namespace dlaunch {

// Claims the node's record, runs its agent, and ends the record with the
// agent's exit code; returns that code (or the claim's failure).
int run_worker_node(const Plan& plan, const Options& o, std::string secret, Detacher& detacher);

}  // namespace dlaunch
