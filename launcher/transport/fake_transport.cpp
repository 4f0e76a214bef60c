#include "launcher/transport/fake_transport.h"

#include <csignal>
#include <utility>

namespace dlaunch {
namespace {

class FakeHandle : public AgentHandle {
 public:
  FakeHandle(FakeTransport& transport, std::size_t index) : transport_(transport), index_(index) {}
  void close_stdin() override { agent().stdin_closed = true; }
  void kill() override {
    ++agent().kills;
    if (transport_.kills_land()) transport_.exit(index_, 128 + SIGKILL);
  }

 private:
  FakeTransport::Agent& agent() { return transport_.agent_at(index_); }
  FakeTransport& transport_;
  std::size_t index_;
};

}  // namespace

std::unique_ptr<AgentHandle> FakeTransport::start(const HostEntry& host, const AgentLaunch& launch,
                                                  AgentEvents events) {
  Agent& agent = agents_.emplace_back();
  agent.host = host;
  agent.launch = launch;
  agent.events = std::move(events);
  if (launch.make_stdin) agent.spec_bytes = launch.make_stdin("127.0.0.1");
  return std::make_unique<FakeHandle>(*this, agents_.size() - 1);
}

std::string FakeTransport::stdin_of(std::size_t index, const std::string& local_address) const {
  const auto& launch = agents_.at(index).launch;
  return launch.make_stdin ? launch.make_stdin(local_address) : std::string();
}

void FakeTransport::write_stderr(std::size_t index, std::string_view bytes) {
  auto& a = agents_.at(index);
  if (!a.exited && a.events.on_stderr) a.events.on_stderr(bytes);
}

void FakeTransport::exit(std::size_t index, int exit_code, const std::string& error) {
  auto& a = agents_.at(index);
  if (a.exited) return;
  a.exited = true;
  if (a.events.on_exit) a.events.on_exit(exit_code, error);
}

}  // namespace dlaunch
