#include "launcher/transport/agent_transports.h"

#include "launcher/transport/local_transport.h"
#include "launcher/transport/slurm_transport.h"
#include "launcher/transport/ssh_transport.h"

namespace dlaunch {

AgentTransports make_agent_transports(asio::io_context& io, const Options& o, bool via_ssh,
                                      std::string step_name, bool elastic) {
  return AgentTransports(
      [&io] { return make_local_transport(io); },
      [&io, &o, via_ssh, elastic, step = std::move(step_name)]() -> std::unique_ptr<Transport> {
        if (o.host_source == HostSource::slurm)
          return make_slurm_transport(io, {"srun", step, elastic});
        SshOptions ssh;
        ssh.parallel = o.ssh_parallel;
        ssh.connect_timeout_s = o.ssh_timeout_s;
        ssh.accept_new_host_keys = o.accept_new_host_keys;
        ssh.rendezvous_via_ssh = via_ssh;
        return make_ssh_transport(io, ssh);
      });
}

}  // namespace dlaunch
