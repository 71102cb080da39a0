// The Plotly.js bundle the report embeds in every page. The nccl-inspector
// binary carries it (cmake/embed_plotly.cmake: read from web/node_modules at
// build time); a build made without it has an empty one, and `report` then
// needs --plotly-js FILE.
#pragma once

#include <string>
#include <string_view>

namespace ni::analysis {

struct PlotlyBundle {
  std::string_view js;  // the minified bundle, verbatim (license banner included); empty: none
  std::string label;    // npm package and version, e.g. "plotly.js-cartesian-dist-min 4.1.1"
};

// Defined by the generated source (ni_plotly) or by plotly_none.cpp (ni_plotly_none).
PlotlyBundle embedded_plotly();

}  // namespace ni::analysis
