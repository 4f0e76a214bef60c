// torch's @record (torch.distributed.elastic.multiprocessing.errors) writes a
// failing rank's exception to the file TORCHELASTIC_ERROR_FILE names, as
//   {"message": {"message": "RuntimeError: ...",
//                "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "..."}}}
// torchrun shows that traceback as the job's root cause; so does dlaunch.
#pragma once

#include <string>

namespace dlaunch {

// The traceback (else the message) in the file at `path`, at most
// proto::kMaxRankError bytes (its end, where the exception is); empty when
// there is no such file or nothing in it.
std::string read_rank_error(const std::string& path);

}  // namespace dlaunch
