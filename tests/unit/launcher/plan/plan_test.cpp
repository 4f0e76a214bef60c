#include <doctest/doctest.h>

#include "launcher/config/options.h"
#include "launcher/plan/launch_spec_builder.h"
#include "launcher/plan/plan.h"

using namespace dlaunch;

namespace {

Options hosts_mode() {
  Options o;
  o.mode = Mode::hosts;
  o.command = {"prog"};
  return o;
}

// Hosts "a" and "b" at these addresses, reached over SSH.
HostsFile two_hosts(const char* a, const char* b) {
  HostsFile hosts;
  for (const auto& [name, address] : {std::pair{"a", a}, std::pair{"b", b}}) {
    HostEntry h;
    h.name = name;
    h.address = address;
    hosts.hosts.push_back(h);
  }
  return hosts;
}

}  // namespace

TEST_CASE("plan for hosts: contiguous ranks, local detection, master address") {
  const Options o = hosts_mode();
  HostsFile hosts = two_hosts("10.0.0.5", "10.0.0.6");
  hosts.hosts[0].slots = 2;
  Plan p = make_plan(o, &hosts, "job");
  CHECK(p.nnodes == 2);
  CHECK(p.nodes[0].nproc == 2);
  CHECK(p.nodes[1].nproc == 0);  // auto: decided by the agent
  CHECK_FALSE(p.nodes[0].local);
  CHECK(p.master_addr == "10.0.0.5");
  CHECK(p.rdzv_bind == "0.0.0.0");
  CHECK(p.hosts_in_prefix);
  const std::string text = describe_plan(p, o);
  // node b says "one per GPU": global rank numbers are known only at the rendezvous
  CHECK(text.find("node 0: a (10.0.0.5, ssh), 2 ranks") != std::string::npos);
  CHECK(text.find("RANK=<at rendezvous>") != std::string::npos);
  // Two machines: MASTER_ADDR is probed at start, node 0's hosts-file address first.
  CHECK(p.probe_master);
  CHECK(text.find("MASTER_ADDR=<probed at start>") != std::string::npos);
  CHECK(text.find("  1. 10.0.0.5 (node 0's address in the hosts file)\n") != std::string::npos);
  CHECK(text.find("NCCL_SOCKET_IFNAME==<towards MASTER_ADDR>") != std::string::npos);
}

TEST_CASE("the plan names where its hosts came from") {
  Options o = hosts_mode();
  HostsFile hosts = two_hosts("10.0.0.5", "10.0.0.6");
  const std::pair<HostSource, const char*> sources[] = {
      {HostSource::hosts_file, "(hosts file, 2 nodes)"},
      {HostSource::hostfile, "(hostfile, 2 nodes)"},
      {HostSource::host_list, "(host list, 2 nodes)"},
      {HostSource::slurm, "(Slurm allocation, 2 nodes)"}};
  for (const auto& [source, named] : sources) {
    o.host_source = source;
    CHECK(describe_plan(make_plan(o, &hosts, "job"), o).find(named) != std::string::npos);
  }
}

TEST_CASE("master_address and --master-addr come first among the candidates") {
  Options o = hosts_mode();
  HostsFile hosts = two_hosts("198.19.0.2", "198.19.0.6");
  hosts.path = "hosts.toml";
  hosts.rendezvous.master_address = "198.18.1.10";
  hosts.rendezvous.master_address_line = 7;
  hosts.hosts[0].interface = "ens5";
  Plan p = make_plan(o, &hosts, "job");
  std::string text = describe_plan(p, o);
  CHECK(text.find("  1. 198.18.1.10 (master_address in hosts.toml:7)\n"
                  "  2. 198.19.0.2 (node 0's address in the hosts file)\n") != std::string::npos);
  CHECK(text.find("NCCL_SOCKET_IFNAME==ens5") != std::string::npos);  // the hosts file's wins
  o.master_addr = "198.18.1.99";
  text = describe_plan(make_plan(o, &hosts, "job"), o);
  CHECK(text.find("  1. 198.18.1.99 (--master-addr)\n") != std::string::npos);
}

TEST_CASE("plan for standalone and manual modes") {
  Options o;
  o.command = {"prog"};
  o.nproc_per_node = 4;
  Plan p = make_plan(o, nullptr, "j");
  CHECK(p.nodes.size() == 1);
  CHECK(p.nodes[0].nproc == 4);
  CHECK(p.rdzv_bind == "127.0.0.1");
  CHECK(p.master_addr == "127.0.0.1");
  CHECK(describe_plan(p, o).find("RANK=3") != std::string::npos);

  o.mode = Mode::manual;
  o.nnodes = 3;
  o.node_rank = 1;
  o.master_addr = "10.9.9.9";
  p = make_plan(o, nullptr, "j");
  CHECK_FALSE(p.coordinator);
  CHECK(p.rdzv_connect == "10.9.9.9");
  CHECK(p.nnodes == 3);
}

TEST_CASE("default job names are safe directory names") {
  const std::string n = default_job_name("/opt/x/my prog", 0);
  CHECK(n.starts_with("my_prog-"));
  CHECK(n.find('/') == std::string::npos);
}

TEST_CASE("--ranks-filter outside a known world is refused; unknown worlds wait") {
  Options o;
  o.command = {"prog"};
  o.nproc_per_node = 4;
  const Plan plan = make_plan(o, nullptr, "job");
  CHECK(check_ranks_filter(plan, {0, 3}).ok());
  CHECK(check_ranks_filter(plan, {1, 5, 7}).error() ==
        "--ranks-filter 5,7: this job has ranks 0..3 only");
  o.nproc_per_node.reset();  // one per GPU: known only when the agent joins
  CHECK(check_ranks_filter(make_plan(o, nullptr, "job"), {9}).ok());
}

TEST_CASE("via ssh and jump hosts are shown in --dry-run") {
  const Options o = hosts_mode();
  HostsFile hosts = two_hosts("198.18.0.5", "198.18.0.6");
  CHECK(make_plan(o, &hosts, "job").rdzv_bind == "0.0.0.0");
  hosts.rendezvous.via_ssh = true;
  const Plan p = make_plan(o, &hosts, "job");
  CHECK(p.rdzv_bind == "127.0.0.1");
  CHECK(describe_plan(p, o).find("listens on 127.0.0.1:<any free port>; SSH hosts reach it "
                                 "through a reverse forward") != std::string::npos);
  hosts.hosts[1].jump = "ops@bastion:2222";
  CHECK(describe_plan(make_plan(o, &hosts, "job"), o)
            .find("node 1: b (198.18.0.6, ssh via ops@bastion:2222)") != std::string::npos);
}

TEST_CASE("every host's environment and workdir in the launch spec and --dry-run") {
  Options o = hosts_mode();
  HostsFile hosts = two_hosts("10.0.0.5", "10.0.0.6");
  hosts.hosts[1].env = {{"NCCL_DEBUG", "WARN"}, {"B", "file"}};
  Plan p = make_plan(o, &hosts, "job");
  p.forwarded_env = {{"NCCL_DEBUG", "INFO"}, {"HF_HOME", "/hf"}};
  p.command_line_env = {{"B", "cli"}};
  LaunchContext context;
  context.local_workdir = "/home/u/proj";
  const LaunchSpec a = make_launch_spec(p, p.nodes[0], o, context);
  const LaunchSpec b = make_launch_spec(p, p.nodes[1], o, context);
  CHECK(a.env == std::map<std::string, std::string>{
                     {"B", "cli"}, {"HF_HOME", "/hf"}, {"NCCL_DEBUG", "INFO"}});
  CHECK(b.env == std::map<std::string, std::string>{
                     {"B", "cli"}, {"HF_HOME", "/hf"}, {"NCCL_DEBUG", "WARN"}});
  // By default the coordinator's directory, where the host has it.
  CHECK(b.workdir == "/home/u/proj");
  CHECK_FALSE(b.workdir_required);
  const std::string text = describe_plan(p, o);
  CHECK(text.find("  environment above the host's own: B=cli (--env) HF_HOME=/hf (forwarded) "
                  "NCCL_DEBUG=WARN (hosts file)\n") != std::string::npos);

  o.workdir = "/data/run";
  const LaunchSpec c = make_launch_spec(p, p.nodes[1], o, context);
  CHECK(c.workdir == "/data/run");
  CHECK(c.workdir_required);
  CHECK(describe_plan(p, o).find("  workdir: /data/run (--workdir; must exist there)\n") !=
        std::string::npos);
}

TEST_CASE("--rdzv-port with a host list sets the coordinator's port, over the hosts file's") {
  Options o = hosts_mode();
  HostsFile hosts = two_hosts("10.0.0.5", "10.0.0.6");
  hosts.rendezvous.port = 29600;
  CHECK(make_plan(o, &hosts, "job").rdzv_port == 29600);
  o.rdzv_port = 29700;
  o.rdzv_port_given = true;
  CHECK(make_plan(o, &hosts, "job").rdzv_port == 29700);
}

TEST_CASE("-n where the host list gives slots is said, naming the hosts whose slots win") {
  Options o = hosts_mode();
  o.nproc_per_node = 4;
  HostsFile hosts = two_hosts("10.0.0.5", "10.0.0.6");
  CHECK(make_plan(o, &hosts, "job").warnings.empty());
  hosts.hosts[1].slots = 2;
  const Plan p = make_plan(o, &hosts, "job");
  CHECK(p.nodes[0].nproc == 4);
  CHECK(p.nodes[1].nproc == 2);
  REQUIRE(p.warnings.size() == 1);
  CHECK(p.warnings[0] ==
        "--nproc-per-node 4 applies only to hosts without a slot count: the host list's slots "
        "win on b");
  hosts.hosts[1].slots = 4;  // the same count: nothing to say
  CHECK(make_plan(o, &hosts, "job").warnings.empty());
}

TEST_CASE("--dry-run names --env-file and --include as the sources of what they set") {
  Options o = hosts_mode();
  HostsFile hosts = two_hosts("10.0.0.5", "10.0.0.6");
  hosts.hosts[0].env["CUDA_VISIBLE_DEVICES"] = "0,1";
  hosts.hosts[0].visible_devices_by = "--include";
  hosts.hosts[1].env["CUDA_VISIBLE_DEVICES"] = "3";  // the hosts file's own
  Plan p = make_plan(o, &hosts, "job");
  p.command_line_env = {{"FROM_FILE", "1"}, {"FROM_FLAG", "2"}};
  p.env_file_names = {"FROM_FILE"};
  const std::string text = describe_plan(p, o);
  CHECK(text.find("CUDA_VISIBLE_DEVICES=0,1 (--include)") != std::string::npos);
  CHECK(text.find("CUDA_VISIBLE_DEVICES=3 (hosts file)") != std::string::npos);
  CHECK(text.find("FROM_FILE=1 (--env-file)") != std::string::npos);
  CHECK(text.find("FROM_FLAG=2 (--env)") != std::string::npos);
}

TEST_CASE("plan: elastic as the job's membership counts it; the dry run lists the spares") {
  HostsFile hosts = two_hosts("10.0.0.5", "10.0.0.6");
  Options o = hosts_mode();
  auto elastic_of = [&](std::size_t min, std::size_t max, int spares) {
    o.min_nodes = min;
    o.max_nodes = max;
    o.spares = spares;
    return elastic(make_plan(o, &hosts, "job"), o);
  };
  CHECK_FALSE(elastic_of(0, 0, 0));
  CHECK_FALSE(elastic_of(2, 2, 0));  // every host, no range: an ordinary job
  CHECK_FALSE(elastic_of(2, 5, 0));  // MAX cut to the 2 hosts: still 2:2
  CHECK(elastic_of(1, 2, 0));
  CHECK(elastic_of(1, 1, 0));  // a host left over is a spare
  CHECK(elastic_of(0, 0, 1));
  const Plan p = make_plan(o, &hosts, "job");
  const std::string text = describe_plan(p, o);
  CHECK(text.find("elastic: runs on 1 nodes; 1 spare takes the place of a lost node") !=
        std::string::npos);
  CHECK(text.find("spare: b (10.0.0.6), runs ranks only in place of a lost node") !=
        std::string::npos);
  CHECK(text.find("node 0: a (10.0.0.5, ssh)") != std::string::npos);

  // Manual mode: the places are --nnodes MAX, not this one machine.
  Options manual;
  manual.mode = Mode::manual;
  manual.nnodes = 4;
  manual.min_nodes = 2;
  manual.max_nodes = 4;
  manual.master_addr = "10.9.9.9";
  const Plan node0 = make_plan(manual, nullptr, "j");
  CHECK(elastic(node0, manual));
  CHECK(check_elastic(node0, manual).ok());
  manual.min_nodes = 4;
  CHECK_FALSE(elastic(node0, manual));  // 4:4 is a fixed --nnodes 4
}

TEST_CASE("each host's Python: --python, else the host's python, else DLAUNCH_PYTHON, else PATH") {
  Options o = hosts_mode();
  o.command = {"python3", "-u", "train.py"};
  o.python_program = true;
  HostsFile hosts = two_hosts("10.0.0.5", "10.0.0.6");
  hosts.hosts[0].python = "/opt/venv/bin/python";
  const Plan p = make_plan(o, &hosts, "job");
  auto argv0 = [&](const Options& with, int node) {
    return make_launch_spec(p, p.nodes[static_cast<std::size_t>(node)], with, {}).argv;
  };
  CHECK(argv0(o, 0) == std::vector<std::string>{"/opt/venv/bin/python", "-u", "train.py"});
  CHECK(argv0(o, 1).front() == "python3");
  CHECK(python_for(o, hosts.hosts[1]).by == "PATH");
  Options env = o;
  env.python_env = "/usr/bin/python3";
  CHECK(argv0(env, 0).front() == "/opt/venv/bin/python");  // the host's own wins
  CHECK(argv0(env, 1).front() == "/usr/bin/python3");
  Options flag = env;
  flag.python = "/x/python";
  CHECK(argv0(flag, 0).front() == "/x/python");
  CHECK(python_for(flag, hosts.hosts[0]).by == "--python");
  // Not a Python program: the hosts file's python changes nothing.
  const Options plain = hosts_mode();
  const Plan plain_plan = make_plan(plain, &hosts, "job");
  CHECK(make_launch_spec(plain_plan, plain_plan.nodes[0], plain, {}).argv ==
        std::vector<std::string>{"prog"});
  o.verbose = 1;
  CHECK(describe_plan(p, o).find("python: /opt/venv/bin/python (the hosts file's python)") !=
        std::string::npos);
}

TEST_CASE("--image and a host's image reach the launch spec, and --dry-run says which") {
  Options o = hosts_mode();
  o.image = "localhost/train:2.4";
  o.container_engine = "podman";
  o.shm_size = "16g";
  o.mounts = {"/data:/data:ro"};
  o.sync_git = "https://git.example.com/org/mnist.git@main";
  o.git_url = "https://git.example.com/org/mnist.git";
  o.git_commit = std::string(40, 'e');
  HostsFile hosts = two_hosts("10.0.0.5", "10.0.0.6");
  hosts.hosts[1].image = "localhost/train:2.5";
  const Plan p = make_plan(o, &hosts, "job");
  const auto first = make_launch_spec(p, p.nodes[0], o, {});
  const auto second = make_launch_spec(p, p.nodes[1], o, {});
  CHECK(first.container.image == "localhost/train:2.4");
  CHECK(second.container.image == "localhost/train:2.5");  // the host's own wins
  CHECK(first.container.engine == "podman");
  CHECK(first.container.shm_size == "16g");
  CHECK(first.container.mounts == std::vector<std::string>{"/data:/data:ro"});
  CHECK(first.git.url == o.git_url);
  CHECK(first.git.commit == o.git_commit);
  CHECK(first.git.name == "mnist");
  const auto text = describe_plan(p, o);
  CHECK(text.find("image: localhost/train:2.4 (podman)") != std::string::npos);
  CHECK(text.find("image: localhost/train:2.5 (podman; the hosts file's image)") !=
        std::string::npos);
  // No image anywhere: nothing of containers in the spec.
  const Options plain = hosts_mode();
  HostsFile without = two_hosts("10.0.0.5", "10.0.0.6");
  const Plan plain_plan = make_plan(plain, &without, "job");
  CHECK(make_launch_spec(plain_plan, plain_plan.nodes[0], plain, {}).container.image.empty());
}
