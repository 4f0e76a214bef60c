// A rank's command line: the program's, with deepspeed's and
// torch.distributed.launch's `--local_rank=N` where they put it: right after
// the script, before the script's own arguments. A script that takes the
// rest of its line with argparse.REMAINDER (a wrapper passing it on) would
// otherwise read it as one of the arguments it passes on.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dlaunch {

// Where the script's own arguments begin in `argv`: after a Python
// interpreter's options and its script (or `-m MODULE`, `-c CODE`); after a
// shell's options and its script (or -c's command string); through `env
// [NAME=VALUE]...` to the program it runs; for any other program, after it.
std::size_t script_arguments_start(const std::vector<std::string>& argv);

// `argv` with `--local_rank=<local_rank>` at script_arguments_start when
// `pass_local_rank`; as it is otherwise. `local_rank` is text, so that
// --dry-run can show a placeholder.
std::vector<std::string> rank_argv(const std::vector<std::string>& argv, bool pass_local_rank,
                                   const std::string& local_rank);

}  // namespace dlaunch
