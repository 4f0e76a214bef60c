// The page's files, built into dlaunch (launcher/web/assets/, embedded by
// CMake): the page works with no network beyond dlaunch itself.
#pragma once

#include <string_view>

namespace dlaunch {

struct WebAsset {
  std::string_view path;  // "/static/app.js"
  std::string_view content_type;
  std::string_view body;
};

// The HTML shell every page starts from (the script draws the page the URL
// names), then app.js and style.css.
const WebAsset& page_shell();
const WebAsset* find_static_asset(std::string_view path);

}  // namespace dlaunch
