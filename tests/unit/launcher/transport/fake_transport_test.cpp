#include "launcher/transport/fake_transport.h"

#include <doctest/doctest.h>

using namespace dlaunch;

TEST_CASE("the fake transport records agents and what was done to them") {
  FakeTransport transport;
  HostEntry host;
  host.name = "gpu7";
  AgentLaunch launch;
  launch.agent_binary = "/opt/dlaunch-agent";
  launch.make_stdin = [](const std::string& address) { return "spec for " + address; };
  std::string diagnostics;
  std::vector<std::pair<int, std::string>> exits;
  AgentEvents events;
  events.on_stderr = [&](std::string_view bytes) { diagnostics.append(bytes); };
  events.on_exit = [&](int code, const std::string& error) { exits.emplace_back(code, error); };

  auto handle = transport.start(host, launch, std::move(events));
  REQUIRE(transport.started() == 1);
  CHECK(transport.agent(0).host.name == "gpu7");
  CHECK(transport.agent(0).launch.agent_binary == "/opt/dlaunch-agent");
  CHECK(transport.stdin_of(0, "10.1.2.3") == "spec for 10.1.2.3");

  handle->close_stdin();
  CHECK(transport.agent(0).stdin_closed);
  transport.write_stderr(0, "warning: slow disk\n");
  CHECK(diagnostics == "warning: slow disk\n");

  // A kill ends the agent, reported once as a real transport reports a
  // killed process: 137.
  handle->kill();
  handle->kill();
  CHECK(transport.agent(0).kills == 2);
  transport.exit(0, 0);
  transport.write_stderr(0, "late\n");
  CHECK(exits == std::vector<std::pair<int, std::string>>{{137, ""}});
  CHECK(diagnostics == "warning: slow disk\n");
}

TEST_CASE("a fake transport whose kills do not land leaves the end to the test") {
  FakeTransport transport(/*kills_land=*/false);
  HostEntry host;
  AgentLaunch launch;
  std::vector<int> exits;
  AgentEvents events;
  events.on_exit = [&](int code, const std::string&) { exits.push_back(code); };
  auto handle = transport.start(host, launch, std::move(events));
  handle->kill();
  CHECK(transport.agent(0).kills == 1);
  CHECK(exits.empty());
  transport.exit(0, 1);
  CHECK(exits == std::vector<int>{1});
}
