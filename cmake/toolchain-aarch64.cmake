# Cross build for aarch64 (NVIDIA Grace: GH200, GB200): Debian's
# g++-aarch64-linux-gnu and libssl-dev:arm64.
set(CMAKE_SYSTEM_PROCESSOR aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/debian_cross.cmake)
