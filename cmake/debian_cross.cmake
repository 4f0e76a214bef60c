# A cross build with Debian's cross toolchain for CMAKE_SYSTEM_PROCESSOR (set
# by the toolchain file that includes this): g++-<arch>-linux-gnu, and the
# target's libraries from the multiarch directories (libssl-dev:<debian arch>,
# after dpkg --add-architecture).
set(CMAKE_SYSTEM_NAME Linux)
set(triplet ${CMAKE_SYSTEM_PROCESSOR}-linux-gnu)
set(CMAKE_C_COMPILER ${triplet}-gcc)
set(CMAKE_CXX_COMPILER ${triplet}-g++)
set(CMAKE_ASM_COMPILER ${triplet}-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE ${triplet})
# Programs are this machine's; headers and libraries come from the multiarch
# directories (/usr/include/<triplet>, /usr/lib/<triplet>).
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# pkg-config (which FindOpenSSL asks first) must answer for the target.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${triplet}/pkgconfig:/usr/share/pkgconfig)
