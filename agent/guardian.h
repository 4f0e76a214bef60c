// The agent runs as two processes: a tiny guardian and the worker that does the
// work. The guardian is a child subreaper and an ancestor of every rank, so if
// the worker is killed outright (kill -9, OOM killer), the ranks' orphaned
// descendants are re-parented to the guardian, which ends them all before it
// exits. If the guardian is killed, the worker gets SIGTERM (PDEATHSIG) and
// stops its ranks in order. Either way nothing of the job is left behind.
#pragma once

#include <functional>

namespace dlaunch {

// Runs `work` in a forked worker and returns its exit code once the worker and
// every leftover descendant are gone. SIGINT and SIGTERM are passed on to it.
int run_guarded(const std::function<int()>& work);

}  // namespace dlaunch
