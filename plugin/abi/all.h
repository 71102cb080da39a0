// Every NCCL profiler ABI version we implement, v1..v6.
#pragma once
#include "plugin/abi/v6.h"
