// A build without the Plotly.js bundle (web/node_modules was not installed
// when nccl-inspector was built): `report` asks for --plotly-js FILE.
#include "plotly_bundle.h"

namespace nccl_inspector::analysis {

PlotlyBundle embedded_plotly() { return {}; }

}  // namespace nccl_inspector::analysis
