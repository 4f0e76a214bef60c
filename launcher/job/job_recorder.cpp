#include "launcher/job/job_recorder.h"

#include <unistd.h>

#include <ctime>
#include <fstream>

#include "common/log.h"

namespace dlaunch {

JobRecorder::JobRecorder(std::string job_dir, JobInfo info)
    : job_dir_(std::move(job_dir)), info_(std::move(info)) {
  if (!job_dir_.empty())
    reserve_ = SpaceReserve(job_dir_ + "/.record-reserve", record_reserve_bytes(info_.nnodes));
}

void JobRecorder::update(const JobPolicy& policy) {
  if (job_dir_.empty() || policy.finished()) return;
  if (written_status_ == policy.status() && written_round_ == policy.round() &&
      info_.history.size() == policy.history().size())
    return;
  write(policy, nullptr);
}

void JobRecorder::finish(const JobPolicy& policy, const JobResult& result) {
  if (job_dir_.empty()) return;
  write(policy, &result);
}

void JobRecorder::write(const JobPolicy& policy, const JobResult* result) {
  info_.status = result ? final_status(*result) : policy.status();
  info_.round = policy.round();
  info_.nodes = policy.node_records();
  // An elastic job's node count is the current round's; the history says why.
  if (policy.elastic()) info_.nnodes = policy.rendezvous().nnodes();
  const auto& history = policy.history();
  for (std::size_t i = info_.history.size(); i < history.size(); ++i)
    info_.history.push_back(
        {static_cast<long long>(std::time(nullptr)), history[i].first, history[i].second});
  written_status_ = info_.status;
  written_round_ = info_.round;
  // The job goes on without its record; `list` and `get` will say LOST.
  if (auto written = write_record(result); !written) {
    if (!warned_ || result) log::warn(written.error());
    warned_ = true;
  }
}

Result<void> JobRecorder::write_record(const JobResult* result) {
  auto written = write_job_record(job_dir_, info_, result);
  if (!result) return written;
  // The last write: the reserve's room is its to take, and is not needed after.
  if (!written && reserve_.release()) written = write_job_record(job_dir_, info_, result);
  reserve_.release();
  return written;
}

namespace {
std::string stop_request_path(const std::string& job_dir) {
  return job_dir + "/stop-request";
}
}  // namespace

Result<void> write_stop_request(const std::string& job_dir, int grace_s) {
  std::ofstream out(stop_request_path(job_dir), std::ios::trunc);
  out << grace_s << "\n";
  out.close();
  if (!out) return fail("cannot write " + stop_request_path(job_dir));
  return {};
}

std::optional<int> take_stop_request(const std::string& job_dir) {
  if (job_dir.empty()) return std::nullopt;
  const std::string path = stop_request_path(job_dir);
  std::ifstream in(path);
  int grace_s = -1;
  if (!(in >> grace_s) || grace_s < 0) return std::nullopt;
  ::unlink(path.c_str());
  return grace_s;
}

}  // namespace dlaunch
