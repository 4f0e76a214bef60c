#include "agent/image_cache.h"

#include <doctest/doctest.h>

#include "tests/unit/scoped_env.h"
#include "tests/unit/scratch_dir.h"

using namespace dlaunch;

TEST_CASE("the image an archive loaded as, in podman's and docker's words") {
  CHECK(loaded_image_name("Getting image source signatures\nCopying blob 1a2b done\n"
                          "Writing manifest to image destination\n"
                          "Loaded image: localhost/train:1\n") == "localhost/train:1");
  CHECK(loaded_image_name("Loaded image(s): localhost/a:1,localhost/b:2\n") == "localhost/a:1");
  CHECK(loaded_image_name("Loaded image: train:1\n") == "train:1");
  CHECK(loaded_image_name("Loaded image ID: sha256:0123abcd\n") == "sha256:0123abcd");
  CHECK_FALSE(loaded_image_name("Error: payload does not match any of the supported image "
                                "formats\n")
                  .has_value());
}

TEST_CASE("an engine refuses an image file it cannot run, and says which engine can") {
  ContainerHost podman{ContainerEngine::podman, "/usr/bin/podman", "podman version 4.3.1", "t"};
  const auto sif = ready_cached_image(podman, "/c/" + std::string(64, 'a') + ".sif", "");
  REQUIRE_FALSE(sif);
  CHECK(sif.error().find("use --container-engine apptainer") != std::string::npos);
  ContainerHost enroot{ContainerEngine::enroot, "/usr/bin/enroot", "3.4.1", "t"};
  const auto tar = ready_cached_image(enroot, "/c/x.tar", "");
  REQUIRE_FALSE(tar);
  CHECK(tar.error().find("enroot runs squashfs images") != std::string::npos);
  CHECK(ready_cached_image(enroot, "/c/x.sqsh", "").value() == "/c/x.sqsh");
  ContainerHost apptainer{ContainerEngine::apptainer, "/usr/bin/apptainer", "1.3.4", "t"};
  CHECK(ready_cached_image(apptainer, "/c/x.sif", "").value() == "/c/x.sif");
  CHECK(ready_cached_image(apptainer, "/c/x.tar", "").value() == "docker-archive:/c/x.tar");
}

TEST_CASE("the image cache lives under XDG_CACHE_HOME, private to the user") {
  dlaunch::testing::ScratchDir dir;
  dlaunch::testing::ScopedEnv cache_home("XDG_CACHE_HOME", dir.path());
  const auto cache = image_cache_directory();
  REQUIRE(cache);
  CHECK(*cache == dir.path() + "/dlaunch/images");
  struct stat st {};
  REQUIRE(::stat(cache->c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}
