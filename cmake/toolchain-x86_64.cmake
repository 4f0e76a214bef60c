# Cross build for x86_64 from an aarch64 machine (a Grace coordinator driving
# x86_64 nodes): Debian's g++-x86-64-linux-gnu and libssl-dev:amd64.
set(CMAKE_SYSTEM_PROCESSOR x86_64)
include(${CMAKE_CURRENT_LIST_DIR}/debian_cross.cmake)
