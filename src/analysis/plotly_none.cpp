// A build without the Plotly.js bundle (web/node_modules was not installed
// when nccl-inspector was built): `report` asks for --plotly-js FILE.
#include "src/analysis/plotly_bundle.h"

namespace ni::analysis {

PlotlyBundle embedded_plotly() { return {}; }

}  // namespace ni::analysis
