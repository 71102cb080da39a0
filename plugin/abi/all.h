// Every NCCL profiler ABI version we implement, v1..v6.
#pragma once
#include "v6.h"
