#include "launcher/config/container_options.h"

#include <doctest/doctest.h>

using namespace dlaunch;

TEST_CASE("--mount takes SRC:DST[:ro|:rw] with absolute paths") {
  CHECK_FALSE(check_mount("/data/imagenet:/data:ro").has_value());
  CHECK_FALSE(check_mount("/scratch:/scratch").has_value());
  CHECK_FALSE(check_mount("/a:/b:rw").has_value());
  CHECK(check_mount("/data").value() ==
        "--mount /data: expected SRC:DST or SRC:DST:ro (e.g. /data/imagenet:/data:ro)");
  CHECK(check_mount("data:/data")->find("must be absolute") != std::string::npos);
  CHECK(check_mount("/a:/b:rx")->find("only :ro or :rw") != std::string::npos);
  CHECK(check_mount("/a,b:/b")->find("comma") != std::string::npos);
}

TEST_CASE("--shm-size takes a size with a unit and refuses the data-loader trap") {
  CHECK_FALSE(check_shm_size("16g").has_value());
  CHECK_FALSE(check_shm_size("512m").has_value());
  CHECK_FALSE(check_shm_size("1073741824").has_value());
  CHECK(check_shm_size("64k")->find("below 1m") != std::string::npos);
  CHECK(check_shm_size("lots")->find("expected a size like 16g") != std::string::npos);
  CHECK(check_shm_size("16t")->find("expected a size") != std::string::npos);
  CHECK(check_shm_size("99999999999999999999g")->find("too large") != std::string::npos);
}
