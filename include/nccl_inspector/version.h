// The project's version, as declared once by project() in CMakeLists.txt
// (passed to every target as NI_VERSION).
#pragma once

#include <string_view>

#ifndef NI_VERSION
#error "NI_VERSION is defined by the build (project() in CMakeLists.txt)"
#endif

namespace ni {
inline constexpr std::string_view kVersion = NI_VERSION;
}  // namespace ni
