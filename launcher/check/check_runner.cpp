#include "launcher/check/check_runner.h"

#include <chrono>
#include <cstdint>

#include "common/console.h"
#include "common/exit_codes.h"

namespace dlaunch {
namespace {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

CheckRunner::CheckRunner(asio::io_context& io, Settings settings, AgentTransports& transports)
    : s_(std::move(settings)),
      policy_(s_.policy),
      // check has no --rdzv-port: its port is the hosts file's.
      runner_(io, s_, transports, *this, "[rendezvous] port in the hosts file") {}

CheckRunner::~CheckRunner() = default;

Result<void, int> CheckRunner::run() {
  if (auto started = runner_.start(); !started) {
    console().error(started.error());
    return fail(kExitFailure);
  }
  apply(policy_.start());
  runner_.run();
  runner_.end();
  return {};
}

void CheckRunner::on_join(ConnId conn, const proto::Join& join) {
  apply(policy_.on_join(conn, join, now_us()));
}

void CheckRunner::on_message(ConnId conn, proto::Message&& message) {
  apply(policy_.on_message(conn, message, now_us()));
}

void CheckRunner::on_connection_closed(ConnId conn, const std::string& reason) {
  apply(policy_.on_connection_closed(conn, reason));
}

void CheckRunner::on_signal(int signal) {
  apply(policy_.on_signal(signal));
}

void CheckRunner::on_timer(std::size_t which) {
  apply(policy_.on_timer(static_cast<CheckTimer>(which)));
}

LaunchSpec CheckRunner::launch_spec(const PlannedNode& planned, const LaunchContext& context) {
  LaunchSpec spec = make_launch_spec(runner_.plan(), planned, s_.options, context);
  spec.check = true;
  // The Python a job's .py program would run with there: check reports it.
  spec.argv = {python_for(s_.options, planned.host).path};
  spec.nproc = 1;  // no rank is started; a GPU count is not needed for that
  return spec;
}

std::string CheckRunner::node_label(int node) const {
  return policy_.node_label(node);
}

void CheckRunner::on_agent_exited(int node, int exit_code, const std::string& error,
                                  const AgentStderr& diagnostics) {
  apply(policy_.on_agent_exited(node, exit_code, error, diagnostics.last(3)));
}

void CheckRunner::apply(const CheckActions& actions) {
  // Every kind of check action is the runner's own: a new kind fails to
  // compile here rather than being dropped.
  runner_.apply(actions, []<class Action>(const Action&) {
    static_assert(sizeof(Action) == 0, "a check action the runner does not carry out");
  });
}

}  // namespace dlaunch
