"""What the numbers were measured on: the machine and every peer's version,
written next to the results because launch times are meaningless without them."""

import os
import platform
import shutil
import subprocess


def _first_line(argv):
    """First non-empty line a version command prints (stdout or stderr), or why not."""
    if not shutil.which(argv[0]):
        return "not installed"
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({e})"
    for line in (r.stdout + "\n" + r.stderr).splitlines():
        if line.strip():
            return line.strip()
    return "unknown"


def _meminfo_gib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    return 0.0


def _cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _build_type(bin_dir):
    """The CMake build type of the tree that holds bin_dir, when it is one."""
    cache = os.path.join(bin_dir, "..", "CMakeCache.txt")
    try:
        with open(cache) as f:
            for line in f:
                if line.startswith("CMAKE_BUILD_TYPE:"):
                    # The project's CMakeLists.txt makes an empty type RelWithDebInfo.
                    return line.split("=", 1)[1].strip() or "RelWithDebInfo (default)"
    except OSError:
        pass
    return "unknown"


def facts():
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return {
        "cores": f"{os.cpu_count()} ({_cpu_model()})",
        "memory": f"{_meminfo_gib():.1f} GiB",
        "kernel": f"{platform.system()} {platform.release()}",
        "load average at start": load,
    }


def versions(bin_dir):
    dlaunch = os.path.join(bin_dir, "dlaunch")
    torch = _first_line(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"])
    return {
        "dlaunch": f"{_first_line([dlaunch, '--version'])} ({dlaunch}, "
                   f"build type {_build_type(bin_dir)})",
        "torchrun": f"/usr/bin/torchrun, torch {torch} (Debian package "
                    f"{_first_line(['dpkg-query', '-W', '-f', '${Version}', 'python3-torch'])})",
        "mpirun": _first_line(["mpirun", "--version"]),
        "pdsh": _first_line(["pdsh", "-V"]),
        "OpenSSH (sshd and ssh client)": _first_line(["ssh", "-V"]),
        "gnuplot": _first_line(["gnuplot", "--version"]),
        "python3": _first_line(["/usr/bin/python3", "--version"]),
    }
