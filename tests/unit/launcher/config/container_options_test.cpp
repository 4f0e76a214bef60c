#include "launcher/config/container_options.h"

#include <doctest/doctest.h>

using namespace dlaunch;

TEST_CASE("--mount takes SRC:DST[:ro|:rw] with absolute paths") {
  CHECK(check_mount("/data/imagenet:/data:ro").ok());
  CHECK(check_mount("/scratch:/scratch").ok());
  CHECK(check_mount("/a:/b:rw").ok());
  CHECK(check_mount("/data").error() ==
        "--mount /data: expected SRC:DST or SRC:DST:ro (e.g. /data/imagenet:/data:ro)");
  CHECK(check_mount("data:/data").error().find("must be absolute") != std::string::npos);
  CHECK(check_mount("/a:/b:rx").error().find("only :ro or :rw") != std::string::npos);
  CHECK(check_mount("/a,b:/b").error().find("comma") != std::string::npos);
}

TEST_CASE("--shm-size takes a size with a unit and refuses the data-loader trap") {
  CHECK(check_shm_size("16g").ok());
  CHECK(check_shm_size("512m").ok());
  CHECK(check_shm_size("1073741824").ok());
  CHECK(check_shm_size("64k").error().find("below 1m") != std::string::npos);
  CHECK(check_shm_size("lots").error().find("expected a size like 16g") != std::string::npos);
  CHECK(check_shm_size("16t").error().find("expected a size") != std::string::npos);
  CHECK(check_shm_size("99999999999999999999g").error().find("too large") != std::string::npos);
}
