#include <gtest/gtest.h>

#include "src/core/names.h"

namespace {
using ni::DType;
using ni::Func;
using ni::OpKind;

TEST(Names, NcclStringsMapToCodes) {
  EXPECT_EQ(ni::func_from_nccl("AllReduce"), Func::kAllReduce);
  EXPECT_EQ(ni::func_from_nccl("ReduceScatter"), Func::kReduceScatter);
  EXPECT_EQ(ni::func_from_nccl("Reduce"), Func::kReduce);
  EXPECT_EQ(ni::func_from_nccl("AlltoAll"), Func::kAlltoAll);
  EXPECT_EQ(ni::func_from_nccl("Invalid"), Func::kUnknown);
  EXPECT_EQ(ni::func_from_nccl(nullptr), Func::kUnknown);
  EXPECT_EQ(ni::dtype_from_nccl("ncclBfloat16"), DType::kBfloat16);
  EXPECT_EQ(ni::dtype_from_nccl("ncclInt8"), DType::kInt8);
  EXPECT_EQ(ni::dtype_from_nccl("Unknown"), DType::kUnknown);
  EXPECT_EQ(ni::algo_from_nccl("NVLS_TREE"), ni::Algo::kNvlsTree);
  EXPECT_EQ(ni::proto_from_nccl("LL128"), ni::Proto::kLL128);
  EXPECT_EQ(ni::func_from_code(4), Func::kAllReduce);
  EXPECT_EQ(ni::dtype_from_code(200), DType::kUnknown);
}

TEST(Names, UnknownDatatypeHasSizeZeroNotGarbage) {
  EXPECT_EQ(ni::dtype_size(DType::kUnknown), 0u);
  EXPECT_EQ(ni::dtype_size(DType::kFloat32), 4u);
  EXPECT_EQ(ni::dtype_size(DType::kBfloat16), 2u);
  EXPECT_EQ(ni::dtype_size(DType::kFloat8e5m2), 1u);
}

TEST(Names, BusBandwidthFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(ni::busbw_factor(Func::kAllReduce, OpKind::kColl, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(ni::busbw_factor(Func::kAllGather, OpKind::kColl, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(ni::busbw_factor(Func::kReduceScatter, OpKind::kColl, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(ni::busbw_factor(Func::kBroadcast, OpKind::kColl, 8), 1.0);
  EXPECT_DOUBLE_EQ(ni::busbw_factor(Func::kSend, OpKind::kP2p, 8), 1.0);
  EXPECT_DOUBLE_EQ(ni::traffic_multiplier(Func::kAllGather, OpKind::kColl, 8), 8.0);
  EXPECT_DOUBLE_EQ(ni::traffic_multiplier(Func::kAllReduce, OpKind::kColl, 8), 1.0);
}

TEST(Names, LogNames) {
  EXPECT_EQ(ni::func_name(Func::kAllReduce), "AllReduce");
  EXPECT_EQ(ni::dtype_name(DType::kFloat32), "float32");
  EXPECT_EQ(ni::timing_name(ni::TimingSource::kGpu), "gpu");
  EXPECT_EQ(ni::func_name(static_cast<Func>(250)), "Unknown");
}

}  // namespace
