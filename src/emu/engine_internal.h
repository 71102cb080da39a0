// Functions shared between the engine's translation units (not public).
#pragma once

#include <vector>

#include "src/emu/engine.h"

namespace ni::emu {

// engine.cpp
void host_stream_plan_task(Proc& P, const PlanP& plan);
void api_group_event(Proc& P, Rank& R, Comm& c, int mask);
void* api_op_event(Proc& P, Rank& R, Comm& c, const Task& t, int mask);
void group_end(Proc& P, Rank& R);

// ops.cpp
void exec_step(Proc& P, Rank& R, const StepSpec& step, int step_index);
std::vector<PlanP> make_replays(Proc& P, Rank& R, const std::vector<PlanP>& plans);

}  // namespace ni::emu
