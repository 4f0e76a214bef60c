#!/usr/bin/env bash
# The skips of a test run: one table of every skipped test and its reason, and
# a failed run where a reason is not on the allow-list below. scripts/test.sh
# sources this file and calls skip_report at its end (also when it fails);
# alone: scripts/skips.sh SKIP_LOG [CTEST_JUNIT.xml...] prints the table and
# exits 1 when a skip is not allowed.
#
# The integration tests write each skip to the file $DLAUNCH_SKIP_LOG names
# (tests/integration/harness.py): a line of phase, test file, test ("-": the
# whole file, "Class.setUpClass": a class) and reason, tab-separated. Each
# reason starts with what is missing: "missing: nft (nftables)", "not root:
# ...", "not built: ...". ctest's JUnit files (--output-junit PHASE.xml) add
# any test that exited 77 without recording why.

# What a machine may lack that the README's set-up (scripts/install-deps.sh,
# then scripts/test.sh's builds) cannot give it: bash regular expressions,
# matched against the reason. Every other skip hides, on the machine that ran
# it, something the set-up provides (a package, a build, a working daemon), and
# fails the run.
skip_allowed=(
  # No NVIDIA GPU or driver: CI's machines have none, and the set-up installs
  # no driver.
  '^no GPU: '
  # An unprivileged run: network namespaces, mounts, chroot, podman's storage
  # and a hard open-file limit above the user's need root. CI runs the test
  # command as root (.ci/run), so there none of these can show.
  '^not root: '
  # Root, but the kernel or the container refuses `ip netns add` (a kernel
  # without CONFIG_NET_NS, a container without CAP_SYS_ADMIN).
  '^no network namespaces: '
  # Root, but mount(2) is refused (a tmpfs, binfmt_misc): the same container
  # without CAP_SYS_ADMIN.
  '^no mounts: '
  # Root, but gdb may not attach to a running rank: the kernel's Yama
  # ptrace_scope, or a container without CAP_SYS_PTRACE.
  '^no ptrace: '
)

# Prints, tab-separated like the skip log, a row for each test that ctest
# counted as skipped in a JUnit file (named PHASE.xml) with no line of its
# phase in the skip log: it exited 77 without saying why.
unrecorded_ctest_skips() {
  local log=$1
  shift
  (($# > 0)) || return 0
  python3 - "$log" "$@" << 'EOF'
import os
import sys
import xml.etree.ElementTree as ET

log, junits = sys.argv[1], sys.argv[2:]
recorded = set()
if os.path.exists(log):
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 2:
                recorded.add((fields[0], fields[1].removesuffix(".py")))
for path in junits:
    if not os.path.exists(path):
        continue
    phase = os.path.basename(path).removesuffix(".xml")
    try:
        cases = list(ET.parse(path).getroot().iter("testcase"))
    except ET.ParseError as e:
        print(f"{phase}\t{os.path.basename(path)}\t-\tctest's JUnit file unreadable: {e}")
        continue
    for case in cases:
        skipped = case.find("skipped")
        if skipped is None:
            continue
        name = case.get("name", "?")
        # test_output_pressure_bound runs test_output_pressure.py.
        if any(p == phase and (name == stem or name.startswith(stem + "_"))
               for p, stem in recorded):
            continue
        print(f"{phase}\t{name}\t-\tctest: skipped ({skipped.get('message', '')}) without a "
              "recorded reason (a test file ends with harness.main(), skips with "
              "harness.skip_file())")
EOF
}

# skip_report SKIP_LOG [CTEST_JUNIT.xml...]: the table; returns 1 when a skip
# is not on the allow-list.
skip_report() {
  local log=$1
  shift
  local rows
  rows=$({
    if [[ -f "$log" ]]; then cat "$log"; fi
    unrecorded_ctest_skips "$log" "$@"
  } | sort -u)
  if [[ -z "$rows" ]]; then
    echo "skips: none"
    return 0
  fi
  local table="" phase file test reason verdict pattern count=0 refused=0
  while IFS=$'\t' read -r phase file test reason; do
    verdict="NOT ALLOWED"
    for pattern in "${skip_allowed[@]}"; do
      if [[ "$reason" =~ $pattern ]]; then
        verdict=allowed
        break
      fi
    done
    count=$((count + 1))
    if [[ "$verdict" != allowed ]]; then refused=$((refused + 1)); fi
    table+="$phase"$'\t'"$file"$'\t'"$test"$'\t'"$verdict"$'\t'"$reason"$'\n'
  done <<< "$rows"
  printf 'phase\tfile\ttest\tskip\treason\n%s' "$table" | awk -F'\t' '
    { for (i = 1; i <= 4; i++) if (length($i) > w[i]) w[i] = length($i); row[NR] = $0 }
    END {
      for (n = 1; n <= NR; n++) {
        split(row[n], f, "\t")
        line = ""
        for (i = 1; i <= 4; i++) line = line sprintf("%-" w[i] "s  ", f[i])
        print line f[5]
      }
    }'
  if ((refused > 0)); then
    echo "skips: $count, $refused of them not allowed (scripts/skips.sh): each hides what" \
      "the README's set-up (scripts/install-deps.sh) should have provided" >&2
    return 1
  fi
  echo "skips: $count, all allowed (scripts/skips.sh)"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  if (($# < 1)); then
    echo "usage: $0 SKIP_LOG [CTEST_JUNIT.xml...]" >&2
    exit 2
  fi
  skip_report "$@"
fi
