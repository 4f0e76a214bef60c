#!/usr/bin/env bash
# Packs the build dependencies a GPU machine may lack (Asio, libssh2, toml++,
# gloo headers) from this Debian machine into build-devdeps/ (ignored by git),
# for a machine that has CUDA, a CUDA PyTorch and a compiler but no Debian dev
# packages and no network. run_on_gpu.sh builds against it.
set -euo pipefail
cd "$(dirname "$0")/../.."
lib=/usr/lib/x86_64-linux-gnu
out=build-devdeps/usr
rm -rf build-devdeps
mkdir -p "$out/include" "$out/lib/x86_64-linux-gnu/pkgconfig" "$out/lib/x86_64-linux-gnu/cmake"
cp -r /usr/include/asio /usr/include/asio.hpp /usr/include/toml++ /usr/include/gloo \
  /usr/include/libssh2*.h /usr/include/httplib.h /usr/include/prometheus /usr/include/brotli \
  /usr/include/zlib.h /usr/include/zconf.h "$out/include/"
# dlaunch ui's libraries, with brotli, which cpp-httplib links.
cp -a "$lib"/libssh2.so* "$lib"/libtomlplusplus.so* "$lib"/libcpp-httplib.so* \
  "$lib"/libprometheus-cpp-core.so* "$lib"/libbrotli*.so* "$out/lib/x86_64-linux-gnu/"
cp -r "$lib/cmake/tomlplusplus" "$out/lib/x86_64-linux-gnu/cmake/"
# A prefix relative to the .pc file, and only what linking needs.
sed 's|^prefix=/usr|prefix=${pcfiledir}/../../..|; /^URL/d; /Requires.private/d; /Libs.private/d' \
  "$lib/pkgconfig/libssh2.pc" > "$out/lib/x86_64-linux-gnu/pkgconfig/libssh2.pc"
du -sh build-devdeps
