// Record mapping, part 1 (see reader_fields.h): the key table.
#include "src/analysis/reader_fields.h"

#include <utility>

#include "include/nccl_inspector/schema.h"

namespace ni::analysis::reader_detail {

namespace sc = ni::schema;
namespace up = ni::schema::upstream;

Field field_id(std::string_view k) {
  static const std::pair<std::string_view, Field> kFields[] = {
      {sc::kAlgo, Field::kAlgo},
      {sc::kAbiVersion, Field::kAbi},
      {sc::kBytes, Field::kBytes},
      {sc::kBusbwGbs, Field::kBusbw},
      {sc::kCommHash, Field::kCommHash},
      {sc::kCommName, Field::kCommName},
      {sc::kChannels, Field::kChannels},
      {sc::kChBalance, Field::kChBalance},
      {sc::kChTimes, Field::kChTimes},
      {sc::kChSlow, Field::kChSlow},
      {up::kCollPerf, Field::kCollPerf},
      {sc::kDurUs, Field::kDurUs},
      {sc::kDropped, Field::kDropped},
      {sc::kDroppedTotal, Field::kDroppedTotal},
      {sc::kFunc, Field::kFunc},
      {sc::kIssue, Field::kIssue},
      {sc::kIssueOff, Field::kIssueOff},
      {sc::kIssued, Field::kIssued},
      {sc::kStarted, Field::kStarted},
      {sc::kP2pStarted, Field::kP2pStarted},
      {sc::kInFlight, Field::kInFlight},
      {sc::kStuck, Field::kStuck},
      {sc::kRoot, Field::kRoot},
      {sc::kEnqueueWallNs, Field::kEnqueueWallNs},
      {sc::kConfig, Field::kConfig},
      {sc::kLastFunc, Field::kLastFunc},
      {sc::kQuietMs, Field::kQuietMs},
      {sc::kApiIssued, Field::kApiIssued},
      {sc::kLastApiFunc, Field::kLastApiFunc},
      {sc::kFormat, Field::kFormat},
      {sc::kFormatVersionField, Field::kFormatVersion},
      {sc::kFileSeq, Field::kFileSeq},
      {sc::kInstance, Field::kInstance},
      {sc::kRecordsPending, Field::kRecordsPending},
      {sc::kFiltered, Field::kFiltered},
      {sc::kFaults, Field::kFaults},
      {sc::kGraph, Field::kGraph},
      {sc::kHost, Field::kHost},
      {sc::kHcas, Field::kHcas},
      {up::kHeader, Field::kHeader},
      {sc::kJob, Field::kJob},
      {sc::kLabel, Field::kLabel},
      {up::kMetadata, Field::kMetadata},
      {sc::kNranks, Field::kNranks},
      {sc::kNnodes, Field::kNnodes},
      {sc::kNchannels, Field::kNchannels},
      {sc::kNet, Field::kNet},
      {sc::kOpsCompleted, Field::kOpsCompleted},
      {sc::kProto, Field::kProto},
      {sc::kPeer, Field::kPeer},
      {sc::kPid, Field::kPid},
      {sc::kPluginVersion, Field::kPluginVersion},
      {sc::kPartial, Field::kPartial},
      {sc::kApiOnly, Field::kApiOnly},
      {sc::kKernelDesync, Field::kKernelDesync},
      {sc::kUserTag, Field::kUserTag},
      {sc::kSym, Field::kSym},
      {sc::kKernelVariant, Field::kKernelVariant},
      {sc::kSymPlanTasks, Field::kSymPlanTasks},
      {sc::kPhases, Field::kPhases},
      {sc::kGroupNo, Field::kGroupNo},
      {up::kP2pPerf, Field::kP2pPerf},
      {sc::kRank, Field::kRank},
      {sc::kReclaimed, Field::kReclaimed},
      {sc::kRecordsWritten, Field::kRecordsWritten},
      {sc::kReclaimedOps, Field::kReclaimedOps},
      {sc::kSeq, Field::kSeq},
      {sc::kStartWallNs, Field::kStartWallNs},
      {sc::kType, Field::kType},
      {sc::kTiming, Field::kTiming},
      {sc::kTransport, Field::kTransport},
      {sc::kWallNs, Field::kWallNs},
      {sc::kUncertaintyNs, Field::kUncertainty},
      {sc::kCudaDevice, Field::kCudaDev},
      {sc::kPciBusId, Field::kPciBusId},
      {sc::kSamples, Field::kSamples},
  };
  for (const auto& [name, id] : kFields)
    if (name == k) return id;
  return Field::kNone;
}

}  // namespace ni::analysis::reader_detail
