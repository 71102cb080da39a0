// fork() and the plugin (docs/architecture.md, "fork()").
//
// The library registers one set of pthread_atfork handlers. Before a fork they
// take every process-wide lock of the plugin, so that the child starts with
// none of them held by a thread it does not have; afterwards the parent simply
// releases them. The child releases them too, after it has let go of
// everything the parent owns: the runtime (its comms, rings, sink and dump
// thread) is abandoned without being touched, the slot tables start afresh,
// and no exit hook will drain the parent's sinks. A comm the child creates
// itself starts a new runtime and its own log file; events of comms it
// inherited are ignored there (the parent records them).
//
// Modules outside the core (the output layer) take part with a ForkParticipant:
// its prepare() is called in `order` (low first) after the core's own lock,
// its parent()/child() in the reverse order.
#pragma once

namespace ni::core {

struct ForkParticipant {
  int order = 0;  // lock order: kForkOrder* below
  void (*prepare)() noexcept = nullptr;
  void (*parent)() noexcept = nullptr;
  void (*child)() noexcept = nullptr;
};

// Lock order, after the core's runtime lock (g_mu): locks a thread may hold
// while it waits for a dump thread to finish come first, leaf locks last.
inline constexpr int kForkOrderExitHooks = 10;  // held while sinks are stopped (joined) at exit
inline constexpr int kForkOrderLeaf = 20;       // never held while taking another lock

// Registers a participant; called during static initialisation. At most
// kMaxForkParticipants; returns false when full (a build error in practice).
inline constexpr int kMaxForkParticipants = 8;
bool join_fork(const ForkParticipant& p) noexcept;

}  // namespace ni::core
