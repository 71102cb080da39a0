// Names of the record enums (as written in logs) and the conversions from the
// strings and codes NCCL puts in descriptors. Pure functions, no allocation:
// safe on the hot path.
#pragma once

#include <cstdint>
#include <string_view>

#include "record.h"

namespace ni {

// Log names. Func names are NCCL's ("AllReduce", ...); datatypes without the
// "nccl" prefix ("float32", ..., "unknown").
std::string_view func_name(Func f) noexcept;
std::string_view dtype_name(DType d) noexcept;
std::string_view algo_name(Algo a) noexcept;
std::string_view proto_name(Proto p) noexcept;
std::string_view timing_name(TimingSource t) noexcept;
std::string_view transport_name(Transport t) noexcept;
std::string_view kind_name(OpKind k) noexcept;

// Size in bytes of one element; 0 for kUnknown (so bytes stay 0, never garbage).
uint32_t dtype_size(DType d) noexcept;

// From NCCL's descriptor strings (v2+). NULL or unrecognised -> kUnknown.
Func func_from_nccl(const char* s) noexcept;
DType dtype_from_nccl(const char* s) noexcept;
Algo algo_from_nccl(const char* s) noexcept;
Proto proto_from_nccl(const char* s) noexcept;

// From the v1 descriptor's numeric codes.
Func func_from_code(uint8_t c) noexcept;
DType dtype_from_code(uint8_t c) noexcept;
Algo algo_from_code(uint8_t c) noexcept;
Proto proto_from_code(uint8_t c) noexcept;

// nccl-tests bus-bandwidth factor for an op on n ranks; traffic multiplier
// (AllGather/ReduceScatter move size x n). See profiler-abi.md §10.
double busbw_factor(Func f, OpKind k, int nranks) noexcept;
double traffic_multiplier(Func f, OpKind k, int nranks) noexcept;

}  // namespace ni
