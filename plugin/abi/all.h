// Every NCCL profiler ABI version we implement, v1..v7.
#pragma once
#include "plugin/abi/v7.h"
