#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "launcher/hosts/hosts_file.h"
#include "protocol/rank_env.h"

using namespace dlaunch;

namespace {

HostsFile parse_ok(const std::string& text) {
  auto result = parse_hosts_file(text, "hosts.toml");
  if (!result) {
    for (const auto& d : result.error()) MESSAGE(d.to_string());
    FAIL("expected the file to parse");
  }
  return std::move(*result);
}

std::vector<Diagnostic> parse_errors(const std::string& text) {
  auto result = parse_hosts_file(text, "hosts.toml");
  REQUIRE_MESSAGE(!result.ok(), "expected diagnostics");
  auto diags = result.error();
  REQUIRE_FALSE(diags.empty());
  return diags;
}

// The only diagnostic of `text`, checked for its position and a part of its message.
void check_one_error(const std::string& text, int line, int column, const std::string& part) {
  auto diags = parse_errors(text);
  std::string all;
  for (const auto& d : diags) all += "\n  " + d.to_string();
  INFO("diagnostics:", all);
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].file == "hosts.toml");
  CHECK(diags[0].line == line);
  CHECK(diags[0].column == column);
  CHECK_MESSAGE(diags[0].message.find(part) != std::string::npos, diags[0].message);
}

constexpr const char* kOneHost = "[[host]]\naddress = \"h\"\n";

}  // namespace

TEST_CASE("hosts file: a full host and the rendezvous section") {
  auto file = parse_ok(R"([[host]]
name = "gpu1"
address = "10.0.1.2"
port = 2222
user = "train"
identity = "~/.ssh/id_ed25519"
slots = 8
gpus = 8
interface = "eth0"
env = { NCCL_DEBUG = "INFO", LEVEL = 3, ON = true, OFF = false }
transport = "ssh"

[rendezvous]
address = "10.0.0.1"
port = 29400
)");
  CHECK(file.path == "hosts.toml");
  REQUIRE(file.hosts.size() == 1);
  const HostEntry& h = file.hosts[0];
  CHECK(h.name == "gpu1");
  CHECK(h.address == "10.0.1.2");
  CHECK(h.port == 2222);
  CHECK(h.user == "train");
  CHECK(h.identity == "~/.ssh/id_ed25519");
  CHECK(h.slots == 8);
  CHECK(h.gpus == 8);
  CHECK(h.interface == "eth0");
  CHECK(h.env == std::map<std::string, std::string>{
                     {"NCCL_DEBUG", "INFO"}, {"LEVEL", "3"}, {"ON", "true"}, {"OFF", "false"}});
  CHECK(h.transport == TransportKind::ssh);
  CHECK(h.line == 1);
  CHECK(file.rendezvous.address == "10.0.0.1");
  CHECK(file.rendezvous.port == 29400);
}

TEST_CASE("hosts file: unset keys stay unset, name defaults to the address") {
  auto file =
      parse_ok("# comment\n\n[[host]]\naddress = \"node-a\"\n[[host]]\naddress = \"node-b\"\n");
  REQUIRE(file.hosts.size() == 2);
  const HostEntry& a = file.hosts[0];
  CHECK(a.name == "node-a");
  CHECK_FALSE(a.port.has_value());
  CHECK(a.user.empty());
  CHECK(a.identity.empty());
  CHECK_FALSE(a.slots.has_value());
  CHECK_FALSE(a.gpus.has_value());
  CHECK(a.interface.empty());
  CHECK(a.env.empty());
  CHECK(a.transport == TransportKind::automatic);
  CHECK(a.line == 3);
  CHECK(file.hosts[1].name == "node-b");
  CHECK(file.hosts[1].line == 5);
  CHECK(file.rendezvous.address.empty());
  CHECK_FALSE(file.rendezvous.port.has_value());
}

TEST_CASE("hosts file: hosts keep file order") {
  auto file =
      parse_ok("[[host]]\naddress = \"z\"\n[[host]]\naddress = \"a\"\n[[host]]\naddress = \"m\"\n");
  REQUIRE(file.hosts.size() == 3);
  CHECK(file.hosts[0].name == "z");
  CHECK(file.hosts[1].name == "a");
  CHECK(file.hosts[2].name == "m");
}

TEST_CASE("hosts file: [defaults] fill in what a host does not set; env merges") {
  auto file = parse_ok(R"([defaults]
user = "train"
slots = 8
port = 2200
identity = "~/.ssh/k"
gpus = 4
interface = "ib0"
transport = "ssh"
env = { A = "from-defaults", B = "from-defaults" }

[[host]]
address = "a"

[[host]]
address = "b"
user = "other"
slots = 2
port = 22
identity = "~/.ssh/other"
gpus = 0
interface = "eth1"
transport = "local"
env = { B = "from-host", C = "from-host" }
)");
  REQUIRE(file.hosts.size() == 2);
  const HostEntry& a = file.hosts[0];
  CHECK(a.user == "train");
  CHECK(a.slots == 8);
  CHECK(a.port == 2200);
  CHECK(a.identity == "~/.ssh/k");
  CHECK(a.gpus == 4);
  CHECK(a.interface == "ib0");
  CHECK(a.transport == TransportKind::ssh);
  CHECK(a.env ==
        std::map<std::string, std::string>{{"A", "from-defaults"}, {"B", "from-defaults"}});
  const HostEntry& b = file.hosts[1];
  CHECK(b.user == "other");
  CHECK(b.slots == 2);
  CHECK(b.port == 22);
  CHECK(b.identity == "~/.ssh/other");
  CHECK(b.gpus == 0);
  CHECK(b.interface == "eth1");
  CHECK(b.transport == TransportKind::local);
  CHECK(b.env == std::map<std::string, std::string>{
                     {"A", "from-defaults"}, {"B", "from-host"}, {"C", "from-host"}});
}

TEST_CASE("hosts file: dotted tables and inline arrays of tables work too") {
  auto file = parse_ok(R"(host = [{ address = "a", slots = 2 }]
[defaults.env]
X = "1"
)");
  REQUIRE(file.hosts.size() == 1);
  CHECK(file.hosts[0].slots == 2);
  CHECK(file.hosts[0].env.at("X") == "1");
}

TEST_CASE("hosts file: syntax errors give the parser's position") {
  SUBCASE("missing value") {
    check_one_error("[[host]]\naddress = \"a\"\nslots =\n", 3, 8, "");
  }
  SUBCASE("unterminated string") {
    check_one_error("[[host]]\naddress = \"a\n", 2, 13, "");
  }
  SUBCASE("key given twice") {
    check_one_error("[[host]]\naddress = \"a\"\naddress = \"b\"\n", 3, 11, "address");
  }
  SUBCASE("invalid UTF-8") {
    auto diags = parse_errors("[[host]]\naddress = \"\xff\"\n");
    REQUIRE(diags.size() == 1);
    CHECK(diags[0].line == 2);
  }
}

TEST_CASE("hosts file: no hosts") {
  check_one_error("", 1, 1, "no hosts");
  check_one_error("[defaults]\nslots = 2\n", 1, 1, "no hosts");
  check_one_error("\nhost = []\n", 2, 8, "no hosts");
  check_one_error("[host]\naddress = \"a\"\n", 1, 1, "[[host]]");
  check_one_error("host = [1]\n", 1, 9, "must be a table");
}

TEST_CASE("hosts file: missing address points at the [[host]] table") {
  check_one_error("[[host]]\naddress = \"a\"\n\n[[host]]\nname = \"b\"\n", 4, 1, "no 'address'");
}

TEST_CASE("hosts file: duplicate names point at the second and name the first's line") {
  SUBCASE("explicit names") {
    check_one_error(R"([[host]]
name = "gpu1"
address = "a"
[[host]]
name = "gpu1"
address = "b"
)",
                    5, 8, "duplicate host name 'gpu1' (first used on line 2)");
  }
  SUBCASE("names taken from addresses") {
    check_one_error("[[host]]\naddress = \"a\"\n[[host]]\naddress = \"a\"\n", 4, 11,
                    "first used on line 2");
  }
  SUBCASE("an explicit name equal to another host's address") {
    check_one_error("[[host]]\naddress = \"a\"\n[[host]]\n  name = \"a\"\naddress = \"b\"\n", 4, 10,
                    "first used on line 2");
  }
  SUBCASE("the same address under two names is fine") {
    auto file = parse_ok(
        "[[host]]\nname = \"x\"\naddress = \"a\"\n[[host]]\nname = \"y\"\naddress = \"a\"\n");
    CHECK(file.hosts.size() == 2);
  }
}

TEST_CASE("hosts file: integer keys check type and range") {
  const std::string host = kOneHost;
  check_one_error(host + "slots = 0\n", 3, 9, "'slots' must be between 1 and");
  check_one_error(host + "slots = -3\n", 3, 9, "not -3");
  check_one_error(host + "slots = \"8\"\n", 3, 9, "'slots' must be an integer, not a string");
  check_one_error(host + "slots = 8.0\n", 3, 9, "not a floating-point number");
  check_one_error(host + "slots = 99999999999\n", 3, 9, "'slots' must be between");
  check_one_error(host + "gpus = -1\n", 3, 8, "'gpus' must be between 0 and");
  check_one_error(host + "gpus = true\n", 3, 8, "not a boolean");
  check_one_error(host + "port = 0\n", 3, 8, "'port' must be between 1 and 65535, not 0");
  check_one_error(host + "port = 65536\n", 3, 8, "not 65536");
  check_one_error(host + "port = \"22\"\n", 3, 8, "'port' must be an integer");
  CHECK(parse_ok(host + "port = 65535\nslots = 1\ngpus = 0\n").hosts[0].port == 65535);
}

TEST_CASE("hosts file: string keys check their type") {
  const std::string host = kOneHost;
  check_one_error("[[host]]\naddress = 10\n", 2, 11, "'address' must be a string, not an integer");
  check_one_error(host + "name = [\"a\"]\n", 3, 8, "'name' must be a string, not an array");
  check_one_error(host + "user = 1\n", 3, 8, "'user' must be a string");
  check_one_error(host + "identity = {}\n", 3, 12, "'identity' must be a string, not a table");
  check_one_error(host + "interface = 1979-05-27\n", 3, 13, "not a date");
}

TEST_CASE("hosts file: transport must be local or ssh") {
  const std::string host = kOneHost;
  check_one_error(host + "transport = \"rsh\"\n", 3, 13, "unknown transport 'rsh'");
  check_one_error(host + "transport = \"shh\"\n", 3, 13, "did you mean 'ssh'?");
  check_one_error(host + "transport = \"auto\"\n", 3, 13, "use \"local\" or \"ssh\"");
  check_one_error(host + "transport = true\n", 3, 13, "must be a string");
}

TEST_CASE("hosts file: names and addresses that ssh would misread are rejected") {
  check_one_error("[[host]]\naddress = \"-oProxyCommand=x\"\n", 2, 11, "must not start with '-'");
  check_one_error("[[host]]\naddress = \"a b\"\n", 2, 11, "must not contain whitespace");
  check_one_error("[[host]]\naddress = \"a\\tb\"\n", 2, 11, "control characters");
  check_one_error("[[host]]\naddress = \"a\\nb\"\n", 2, 11, "'a\\x0ab'");
  check_one_error("[[host]]\naddress = \"\"\n", 2, 11, "must not be empty");
  check_one_error("[[host]]\naddress = \"a\"\nname = \"-x\"\n", 3, 8, "'name' '-x' must not start");
  check_one_error("[[host]]\naddress = \"a\"\nname = \"x\\u0000\"\n", 3, 8, "control characters");
  check_one_error("[[host]]\naddress = \"a\"\nuser = \"-l root\"\n", 3, 8, "'user'");
  CHECK(parse_ok("[[host]]\naddress = \"fe80::1%eth0\"\n").hosts[0].address == "fe80::1%eth0");
}

TEST_CASE("hosts file: interface names") {
  const std::string host = kOneHost;
  for (const char* good :
       {"eth0", "ib0", "enp3s0f1", "bond0.100", "eth0:1", "veth-a_b", "abcdefghijklmno"}) {
    CAPTURE(good);
    CHECK(parse_ok(host + "interface = \"" + good + "\"\n").hosts[0].interface == good);
  }
  for (const char* bad : {"", "abcdefghijklmnop", "eth 0", "eth0;rm", "eth/0", "$(x)"}) {
    CAPTURE(bad);
    check_one_error(host + "interface = \"" + bad + "\"\n", 3, 13, "not a network interface name");
  }
}

TEST_CASE("hosts file: jump hosts, per host and in [defaults]") {
  const auto file = parse_ok(
      "[defaults]\njump = \"admin@bastion:2222\"\n"
      "[[host]]\naddress = \"a\"\n"
      "[[host]]\naddress = \"b\"\njump = \"outer,u@inner\"\n"
      "[[host]]\naddress = \"c\"\njump = \"none\"\n");
  CHECK(file.hosts[0].jump == "admin@bastion:2222");
  CHECK(file.hosts[1].jump == "outer,u@inner");
  CHECK(file.hosts[2].jump == "none");
  CHECK(parse_ok(kOneHost).hosts[0].jump.empty());  // unset: ~/.ssh/config decides
  const std::string host = kOneHost;
  check_one_error(host + "jump = \"b:0\"\n", 3, 8, "'jump' 'b:0' hop 1: port '0'");
  check_one_error(host + "jump = \"a,,b\"\n", 3, 8, "hop 2: an empty hop");
  check_one_error(host + "jump = \"\"\n", 3, 8, "\"none\"");
  check_one_error(host + "jump = \"-oProxyCommand=x\"\n", 3, 8, "starts with '-'");
  check_one_error(host + "jump = 22\n", 3, 8, "must be a string");
  check_one_error("[defaults]\njump = \"x y\"\n" + host, 2, 8, "'jump' 'x y'");
}

TEST_CASE("hosts file: env names and values") {
  const std::string host = kOneHost;
  check_one_error(host + "env = { 1ABC = \"x\" }\n", 3, 9, "environment variable name '1ABC'");
  check_one_error(host + "env = { \"A-B\" = \"x\" }\n", 3, 9, "'A-B' is not valid");
  check_one_error(host + "env = { \"A=B\" = \"x\" }\n", 3, 9, "is not valid");
  check_one_error(host + "env = { \"\" = \"x\" }\n", 3, 9, "is not valid");
  check_one_error(host + "env = { A = 1.5 }\n", 3, 13, "'A' must be a string, integer or boolean");
  check_one_error(host + "env = { A = [\"x\"] }\n", 3, 13, "not an array");
  check_one_error(host + "env = { A = { B = 1 } }\n", 3, 13, "not a table");
  check_one_error(host + "env = { A = \"x\\u0000y\" }\n", 3, 13, "NUL");
  check_one_error(host + "env = \"A=1\"\n", 3, 7, "'env' must be a table");
  CHECK(parse_ok(host + "env = { _x9 = \"\" }\n").hosts[0].env.at("_x9").empty());
}

TEST_CASE("hosts file: names that would print as something else are refused") {
  // U+202E RIGHT-TO-LEFT OVERRIDE, U+2067 RIGHT-TO-LEFT ISOLATE, U+200F RLM, U+0085 NEL.
  for (const char* bad : {"gpu\u202e1", "gpu\u20671", "gpu\u200f1", "gpu\u00851"}) {
    check_one_error(std::string("[[host]]\nname = \"") + bad + "\"\naddress = \"h\"\n", 2, 8,
                    "'name'");
  }
  CHECK(parse_ok("[[host]]\nname = \"gpu-\u00e9t\u00e91\"\naddress = \"h\"\n").hosts[0].name ==
        "gpu-\u00e9t\u00e91");
}

TEST_CASE("hosts file: env may not set what dlaunch sets for every rank") {
  const std::string host = kOneHost;
  for (auto name : kLauncherVariables) {
    check_one_error(host + "env = { " + std::string(name) + " = \"1\" }\n", 3, 9,
                    "'" + std::string(name) + "' is set by dlaunch for every rank");
  }
  // [defaults] is checked the same way, at its own line.
  check_one_error("[defaults]\nenv = { MASTER_PORT = 1 }\n" + host, 2, 9,
                  "'MASTER_PORT' is set by dlaunch");
  CHECK(parse_ok(host + "env = { NCCL_DEBUG = \"INFO\" }\n").hosts[0].env.at("NCCL_DEBUG") ==
        "INFO");
}

TEST_CASE("hosts file: unknown keys at every level, with suggestions") {
  SUBCASE("top level") {
    check_one_error("[[hosts]]\naddress = \"a\"\n[[host]]\naddress = \"a\"\n", 1, 3,
                    "unknown key 'hosts' in the top level; did you mean 'host'?");
    check_one_error(std::string(kOneHost) + "[rendezvos]\n", 3, 2, "did you mean 'rendezvous'?");
    check_one_error(std::string("cluster = 1\n") + kOneHost, 1, 1, "unknown key 'cluster'");
  }
  SUBCASE("a host key at the top level says where it goes") {
    check_one_error(std::string("slots = 2\n") + kOneHost, 1, 1,
                    "host settings go in [defaults] or a [[host]] table");
  }
  SUBCASE("[[host]]") {
    check_one_error(std::string(kOneHost) + "slot = 2\n", 3, 1,
                    "unknown key 'slot' in [[host]]; did you mean 'slots'?");
    check_one_error(std::string(kOneHost) + "trasnport = \"ssh\"\n", 3, 1,
                    "did you mean 'transport'?");
    check_one_error(std::string(kOneHost) + "  adress = \"b\"\n", 3, 3, "did you mean 'address'?");
    auto diags = parse_errors(std::string(kOneHost) + "colour = \"blue\"\n");
    REQUIRE(diags.size() == 1);
    CHECK(diags[0].message == "unknown key 'colour' in [[host]]");
  }
  SUBCASE("[defaults]") {
    check_one_error(std::string("[defaults]\nuesr = \"x\"\n") + kOneHost, 2, 1,
                    "unknown key 'uesr' in [defaults]; did you mean 'user'?");
    check_one_error(std::string("[defaults]\naddress = \"x\"\n") + kOneHost, 2, 1,
                    "'address' cannot be set in [defaults]");
    check_one_error(std::string("[defaults]\nname = \"x\"\n") + kOneHost, 2, 1,
                    "'name' cannot be set in [defaults]");
    check_one_error(std::string("defaults = 3\n") + kOneHost, 1, 12, "'defaults' must be a table");
  }
  SUBCASE("[rendezvous]") {
    check_one_error(std::string(kOneHost) + "[rendezvous]\nprot = 1\n", 4, 1,
                    "unknown key 'prot' in [rendezvous]; did you mean 'port'?");
    check_one_error(std::string(kOneHost) + "[rendezvous]\nslots = 1\n", 4, 1,
                    "unknown key 'slots' in [rendezvous]");
    check_one_error(std::string("rendezvous = \"x\"\n") + kOneHost, 1, 14, "must be a table");
  }
}

TEST_CASE("hosts file: rendezvous values") {
  const std::string host = kOneHost;
  check_one_error(host + "[rendezvous]\nport = 0\n", 4, 8, "'port' must be between 1 and 65535");
  check_one_error(host + "[rendezvous]\nport = \"29400\"\n", 4, 8, "must be an integer");
  check_one_error(host + "[rendezvous]\naddress = 10\n", 4, 11, "must be a string");
  check_one_error(host + "[rendezvous]\naddress = \"a b\"\n", 4, 11, "whitespace");
  check_one_error(host + "[rendezvous]\naddress = \"-x\"\n", 4, 11, "'-'");
  check_one_error(host + "[rendezvous]\nvia = \"tunnel\"\n", 4, 7,
                  "unknown rendezvous 'via' 'tunnel': use \"direct\"");
  check_one_error(host + "[rendezvous]\nvia = true\n", 4, 7, "must be a string");
  CHECK(parse_ok(host + "[rendezvous]\nvia = \"ssh\"\n").rendezvous.via_ssh);
  CHECK_FALSE(parse_ok(host + "[rendezvous]\nvia = \"direct\"\n").rendezvous.via_ssh);
  CHECK_FALSE(parse_ok(host).rendezvous.via_ssh);
}

TEST_CASE("hosts file: every error of a file comes back together, in file order") {
  auto diags = parse_errors(R"(clusetr = "x"
[defaults]
slots = 0
interface = "a very long interface"

[[host]]
name = "gpu1"
address = "10.0.1.2"
slot = 8

[[host]]
name = "gpu1"
port = 70000
env = { "bad name" = "x", OK = 1.5 }

[[host]]
address = "c"
transport = "rdma"

[rendezvous]
port = "29400"
)");
  std::vector<std::string> got;
  for (const auto& d : diags) got.push_back(d.to_string());
  const std::vector<std::string> expected = {
      "hosts.toml:1:1: unknown key 'clusetr' in the top level",
      "hosts.toml:3:9: 'slots' must be between 1 and 4096, not 0",
      "hosts.toml:4:13: 'interface' 'a very long interface' is not a network interface name (1 "
      "to 15 of A-Z a-z 0-9 _ . : -)",
      "hosts.toml:9:1: unknown key 'slot' in [[host]]; did you mean 'slots'?",
      "hosts.toml:11:1: [[host]] has no 'address' (a host name, IP or ~/.ssh/config alias)",
      "hosts.toml:12:8: duplicate host name 'gpu1' (first used on line 7); give each [[host]] a "
      "unique 'name'",
      "hosts.toml:13:8: 'port' must be between 1 and 65535, not 70000",
      "hosts.toml:14:9: environment variable name 'bad name' is not valid (letters, digits and "
      "'_', not starting with a digit)",
      "hosts.toml:14:32: environment variable 'OK' must be a string, integer or boolean, not a "
      "floating-point number",
      "hosts.toml:18:13: unknown transport 'rdma': use \"local\" or \"ssh\"",
      "hosts.toml:21:8: 'port' must be an integer, not a string",
  };
  std::string all;
  for (const auto& line : got) all += "\n  " + line;
  INFO("diagnostics:", all);
  CHECK(got == expected);
}

TEST_CASE("hosts file: Diagnostic::to_string") {
  CHECK(Diagnostic{"f.toml", 3, 7, "bad"}.to_string() == "f.toml:3:7: bad");
  CHECK(Diagnostic{"f.toml", 0, 0, "cannot open: x"}.to_string() == "f.toml: cannot open: x");
}

TEST_CASE("hosts file: load_hosts_file") {
  const auto dir = std::filesystem::temp_directory_path();
  SUBCASE("a missing file is one diagnostic naming it") {
    const std::string path = (dir / "dlaunch-no-such-hosts-file.toml").string();
    auto result = load_hosts_file(path);
    REQUIRE_FALSE(result.ok());
    const auto& diags = result.error();
    REQUIRE(diags.size() == 1);
    CHECK(diags[0].file == path);
    CHECK(diags[0].line == 0);
    CHECK(diags[0].to_string() == path + ": cannot open: No such file or directory");
  }
  SUBCASE("a directory is one diagnostic") {
    auto result = load_hosts_file(dir.string());
    REQUIRE_FALSE(result.ok());
    const auto& diags = result.error();
    REQUIRE(diags.size() == 1);
    CHECK(diags[0].message == "cannot read: Is a directory");
  }
  SUBCASE("a file on disk is read and parsed, errors name it") {
    const std::string path = (dir / "dlaunch-hosts-file-test.toml").string();
    {
      std::ofstream out(path, std::ios::binary);
      out << "[[host]]\naddress = \"a\"\nslots = 0\n";
    }
    auto result = load_hosts_file(path);
    std::remove(path.c_str());
    REQUIRE_FALSE(result.ok());
    const auto& diags = result.error();
    REQUIRE(diags.size() == 1);
    CHECK(diags[0].to_string().rfind(path + ":3:9: ", 0) == 0);
  }
}

TEST_CASE("hosts file: hosts.example.toml parses to the two-node local demo") {
  const auto path = (std::filesystem::path(DLAUNCH_SOURCE_DIR) / "hosts.example.toml").string();
  auto result = load_hosts_file(path);
  if (!result) {
    for (const auto& d : result.error()) MESSAGE(d.to_string());
    FAIL("hosts.example.toml does not parse");
  }
  const auto& file = *result;
  REQUIRE(file.hosts.size() == 2);
  CHECK(file.hosts[0].name == "node0");
  CHECK(file.hosts[0].address == "127.0.0.1");
  CHECK(file.hosts[0].slots == 2);
  CHECK(file.hosts[1].name == "node1");
  CHECK(file.hosts[1].slots == 1);
  for (const auto& host : file.hosts) CHECK(is_local_host(host));
}

TEST_CASE("is_local_host") {
  HostEntry h;
  h.address = "127.0.0.1";
  CHECK(is_local_host(h));
  for (const char* loopback : {"localhost", "LocalHost", "::1"}) {
    h.address = loopback;
    CHECK(is_local_host(h));
  }
  h.address = "10.0.0.1";
  CHECK_FALSE(is_local_host(h));
  h.address = "localhost.example.com";
  CHECK_FALSE(is_local_host(h));

  SUBCASE("a port means ssh to the local sshd") {
    h.address = "127.0.0.1";
    h.port = 2222;
    CHECK_FALSE(is_local_host(h));
  }
  SUBCASE("an explicit transport wins") {
    h.address = "127.0.0.1";
    h.transport = TransportKind::ssh;
    CHECK_FALSE(is_local_host(h));
    h.address = "10.0.0.1";
    h.port = 22;
    h.transport = TransportKind::local;
    CHECK(is_local_host(h));
  }
}

// The HostField table is the only list of per-host keys: each of the checks
// below runs over its rows, so a new row is covered without a new test.
TEST_CASE("host fields: every row is read from [[host]] and lands in its own place") {
  const HostEntry plain = parse_ok(kOneHost).hosts[0];
  REQUIRE_FALSE(host_fields().empty());
  std::vector<HostEntry> entries;
  for (const HostField& field : host_fields()) {
    const std::string name(field.name);
    CAPTURE(name);
    const std::string address = name == "address" ? "" : "address = \"h\"\n";
    const HostEntry entry =
        parse_ok("[[host]]\n" + address + name + " = " + std::string(field.example) + "\n")
            .hosts[0];
    CHECK(entry != plain);
    // Two rows storing to the same member would give equal entries.
    CHECK(std::find(entries.begin(), entries.end(), entry) == entries.end());
    entries.push_back(entry);
  }
}

TEST_CASE("host fields: [defaults] takes every shared row to the same place, refuses the rest") {
  for (const HostField& field : host_fields()) {
    const std::string name(field.name);
    const std::string line = name + " = " + std::string(field.example) + "\n";
    CAPTURE(name);
    if (field.scope == HostField::Scope::host_only) {
      check_one_error("[defaults]\n" + line + kOneHost, 2, 1,
                      "'" + name + "' cannot be set in [defaults]: each [[host]] sets its own");
      continue;
    }
    HostEntry from_defaults = parse_ok("[defaults]\n" + line + kOneHost).hosts[0];
    const HostEntry from_host = parse_ok(kOneHost + line).hosts[0];
    from_defaults.line = from_host.line;
    CHECK(from_defaults == from_host);
  }
}

TEST_CASE("host fields: a near-miss of every row's name is suggested in its sections") {
  for (const HostField& field : host_fields()) {
    const std::string name(field.name);
    const std::string typo = name + "x";
    const std::string line = typo + " = " + std::string(field.example) + "\n";
    CAPTURE(name);
    auto diags = parse_errors(kOneHost + line);
    REQUIRE(diags.size() == 1);
    CHECK(diags[0].to_string() ==
          "hosts.toml:3:1: unknown key '" + typo + "' in [[host]]; did you mean '" + name + "'?");
    if (field.scope == HostField::Scope::host_only) continue;
    diags = parse_errors("[defaults]\n" + line + kOneHost);
    REQUIRE(diags.size() == 1);
    CHECK(diags[0].to_string() ==
          "hosts.toml:2:1: unknown key '" + typo + "' in [defaults]; did you mean '" + name + "'?");
  }
}

TEST_CASE("host fields: every row checks its type and is placed from the top level") {
  for (const HostField& field : host_fields()) {
    const std::string name(field.name);
    CAPTURE(name);
    // No host key takes a date.
    const std::string host = name == "address" ? "[[host]]\nname = \"n\"\n" : kOneHost;
    const std::string assignment = name + " = 1979-05-27\n";
    check_one_error(host + assignment, 3, static_cast<int>(name.size()) + 4,
                    "'" + name + "' must be ");
    check_one_error(
        name + " = " + std::string(field.example) + "\n" + kOneHost, 1, 1,
        "unknown top-level key '" + name + "'; host settings go in [defaults] or a [[host]] table");
  }
}

TEST_CASE("host fields: names are unique and every row is complete") {
  std::vector<std::string_view> names;
  for (const HostField& field : host_fields()) {
    CAPTURE(field.name);
    CHECK(std::find(names.begin(), names.end(), field.name) == names.end());
    names.push_back(field.name);
    CHECK_FALSE(field.example.empty());
    CHECK((field.read != nullptr));
  }
}

TEST_CASE("hosts file: python per host, or for all in [defaults]") {
  auto file = parse_ok(R"([defaults]
python = "/opt/venv/bin/python"

[[host]]
address = "a"

[[host]]
address = "b"
python = "/usr/bin/python3"
)");
  CHECK(file.hosts[0].python == "/opt/venv/bin/python");
  CHECK(file.hosts[1].python == "/usr/bin/python3");
  CHECK_FALSE(parse_errors("[[host]]\naddress = \"a\"\npython = 3\n").empty());
}

TEST_CASE("hosts file: image per host, or for all in [defaults]") {
  auto file = parse_ok(R"([defaults]
image = "localhost/train:2.4"

[[host]]
address = "a"

[[host]]
address = "b"
image = "localhost/train:2.5"
)");
  CHECK(file.hosts[0].image == "localhost/train:2.4");
  CHECK(file.hosts[1].image == "localhost/train:2.5");
  CHECK_FALSE(parse_errors("[[host]]\naddress = \"a\"\nimage = 3\n").empty());
}
