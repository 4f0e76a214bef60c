# Cross build for x86_64 from another architecture (an aarch64 coordinator
# driving x86_64 nodes) with Debian's g++-x86-64-linux-gnu and libssl-dev:amd64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER x86_64-linux-gnu-g++)
set(CMAKE_ASM_COMPILER x86_64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE x86_64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# pkg-config (which FindOpenSSL asks first) must answer for the target.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/x86_64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
