// Pins every glibc symbol the GPU helper uses to the oldest version that has
// it, so that the helper, built against today's glibc, starts on any glibc from
// the baseline on (2.17: CentOS 7, and the first glibc for aarch64). Included
// before anything else in each helper source (-include). A symbol missing here
// binds to the build machine's newest version; the test of the agent's
// requirements (tests/agent_requirements.sh) then fails and names it.
#pragma once

#if defined(__x86_64__)
#define DLAUNCH_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define DLAUNCH_GLIBC_BASE "GLIBC_2.17"
#else
#error "the GPU helper knows glibc's baseline for x86_64 and aarch64 only"
#endif

#define DLAUNCH_PIN(name) __asm__(".symver " #name "," #name "@" DLAUNCH_GLIBC_BASE)

// Since glibc 2.34 these live in libc.so.6 under a new version; the old one
// is still exported there, and by libdl.so.2 on older systems.
DLAUNCH_PIN(dlopen);
DLAUNCH_PIN(dlsym);
DLAUNCH_PIN(dlerror);
DLAUNCH_PIN(__libc_start_main);
// x86_64: glibc 2.14 gave memcpy a new version; 2.17 moved clock_gettime from librt.
DLAUNCH_PIN(memcpy);
#if defined(__x86_64__)
__asm__(".symver clock_gettime,clock_gettime@GLIBC_2.17");
#else
DLAUNCH_PIN(clock_gettime);
#endif
