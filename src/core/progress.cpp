// The progress snapshot (consumer.h): for every live comm, where its issue
// stands and which of its ops have been in flight for a long time, as their
// events left them. The dump thread calls it every so often; it writes
// nothing into the core and takes no lock on NCCL's event path.
//
// An op slot's header (`start`) belongs to whoever owns the slot and may be
// rewritten by its next owner while we look, so only atomic accesses are
// made: the header fields its start wrote with show(), the channel masks and
// the network slots. The claim word is read before and after: a slot that
// moved on meanwhile is left out (it was no longer stuck).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <vector>

#include "src/core/clock.h"
#include "src/core/consumer.h"
#include "src/core/tracker.h"

namespace ni {

using core::Context;
using core::NetSlot;
using core::OpSlot;
using core::OpStart;

namespace {

struct Found {
  StuckOp op;
  uint32_t slot = 0;
  uint32_t gen = 0;
};

// The open ProxyOps of the found ops, summed per (op, peer, direction).
void add_network(Context& c, std::vector<Found>& found) {
  c.net_slots.for_each([&](uint32_t, NetSlot& n) {
    // Acquire pairs with the release gen bump when a ProxyOp slot is freed:
    // a slot read between two equal generations was one ProxyOp throughout.
    const uint32_t g1 = n.gen.load(std::memory_order_acquire);
    // Acquire pairs with the release store of stopped = 0 at the ProxyOp's
    // start: its fields below are visible. A freed slot has stopped = 1.
    if (n.stopped.load(std::memory_order_acquire) != 0) return;
    const uint64_t op = n.op_handle.load(std::memory_order_relaxed);  // relaxed: as stopped above; validated below
    if (op == 0 || core::tag_of(op) != core::Tag::kOp) return;
    Found* f = nullptr;
    for (Found& x : found)
      if (x.slot == core::slot_of(op) && x.gen == core::gen_of(op)) f = &x;
    if (f == nullptr) return;
    // Acquire (not for what they pair with, but so that the generation is
    // read again only after them: a fence would do, but ThreadSanitizer has
    // none; on x86 an acquire load is a plain load). Pairs with the release
    // store of stopped at the ProxyOp's start, as above.
    const uint32_t posted = n.steps_posted.load(std::memory_order_acquire);
    const uint32_t done = n.steps_done.load(std::memory_order_acquire);  // as steps_posted
    const bool send = n.is_send.load(std::memory_order_acquire);        // as steps_posted
    const int32_t peer = n.peer.load(std::memory_order_acquire);        // as steps_posted
    // Relaxed: after the acquire loads above. A ProxyOp freed meanwhile: left out.
    if (n.gen.load(std::memory_order_relaxed) != g1) return;
    for (StuckOp::Net& e : f->op.net)
      if (e.peer == peer && e.send == send) {
        ++e.proxy_ops;
        e.posted += posted;
        e.done += done;
        return;
      }
    if (f->op.net.size() >= kMaxStuckNet) return;
    f->op.net.push_back({peer, send, 1, posted, done});
  });
}

}  // namespace

std::vector<CommProgress> progress_snapshot(uint64_t min_age_ns) {
  std::vector<CommProgress> out;
  core::Runtime* rt = core::runtime();
  if (rt == nullptr) return out;
  const uint64_t now_ns = clk::now_ns();
  const uint64_t cutoff = now_ns > min_age_ns ? now_ns - min_age_ns : 0;
  // Relaxed: ids only grow; each context is published by its own release store.
  const uint32_t nc = rt->n_contexts.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < nc; ++i) {
    Context* c = core::context_of(rt, i);
    // Acquire: pairs with the release store in comm_init.
    if (c == nullptr || !c->live.load(std::memory_order_acquire)) continue;
    CommProgress p;
    p.comm_id = c->id;
    // Relaxed: the issuing thread's counters (Context::issued).
    p.issued = c->issued.load(std::memory_order_relaxed);
    for (int f = 0; f < Context::kSeqFuncs; ++f)
      p.func_seq[f] = c->func_seq[f].load(std::memory_order_relaxed);  // relaxed: as issued above
    p.p2p_started = c->p2p_started.load(std::memory_order_relaxed);  // as above
    p.last_func = c->last_func.load(std::memory_order_relaxed);        // as above
    p.api_issued = c->api_issued.load(std::memory_order_relaxed);      // as above
    p.last_api_func = c->last_api_func.load(std::memory_order_relaxed);  // as above
    std::vector<Found> found;
    c->ops.for_each([&](uint32_t idx, OpSlot& s) {
      // The op's claim word identifies it: (gen << 1) while it is in flight,
      // stored by open_op() (release) before in_use; the completer sets
      // bit 0, the next op stores its own generation. Equal before and after
      // the reads below: one op, in flight throughout.
      // Acquire pairs with open_op()'s release stores of in_use and claim.
      if (s.in_use.load(std::memory_order_acquire) == 0) return;
      const uint64_t c1 = s.claim.load(std::memory_order_acquire);  // as in_use
      if ((c1 & 1) != 0) return;  // being completed
      const uint32_t g1 = static_cast<uint32_t>(c1 >> 1);
      ++p.in_flight;
      // Relaxed: written before in_use's release store (acquired above).
      const uint64_t st = s.start_ticks.load(std::memory_order_relaxed);
      const uint64_t start_ns = clk::ticks_to_ns(st);
      if (start_ns > cutoff) return;
      Found f;
      f.slot = idx;
      f.gen = g1;
      StuckOp& o = f.op;
      o.enqueue_ns = start_ns;
      // The header as the op's start wrote it (shown() pairs with show();
      // open_op()'s release store of the claim, acquired above, made this
      // op's values visible). A value of the slot's next op shows up as a
      // changed claim below.
      OpStart& h = s.start;
      o.seq = core::shown(h.seq);
      o.bytes = core::shown(h.bytes);
      o.peer = core::shown(h.peer);
      o.kind = core::shown(h.kind);
      o.func = core::shown(h.func);
      o.dtype = core::shown(h.dtype);
      o.n_channels = core::shown(h.n_channels);
      // Acquire, so that the claim is read again only after it (a fence would
      // do, but ThreadSanitizer has none; on x86 a plain load). Pairs with
      // open_op()'s release store, as the claim above.
      o.issue = s.issue.load(std::memory_order_acquire);
      // The progress thread's masks, a moment's view; acquire as issue (for
      // the order of the check below; they pair with nothing).
      o.ch_started = s.started_mask.load(std::memory_order_acquire);
      o.ch_stopped = s.stopped_mask.load(std::memory_order_acquire);  // as started_mask
      // Relaxed: after the acquire loads above. An op completed (or the slot
      // reused) meanwhile was not stuck: leave it out.
      if (s.claim.load(std::memory_order_relaxed) != c1) return;
      if (o.kind != static_cast<uint8_t>(OpKind::kColl)) o.issue = 0;
      found.push_back(f);
    });
    std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.op.enqueue_ns < b.op.enqueue_ns; });
    if (found.size() > kMaxStuckOps) found.resize(kMaxStuckOps);
    if (!found.empty() && c->net) add_network(*c, found);
    for (Found& f : found) {
      std::sort(f.op.net.begin(), f.op.net.end(), [](const StuckOp::Net& a, const StuckOp::Net& b) {
        return a.peer != b.peer ? a.peer < b.peer : a.send < b.send;
      });
      p.stuck.push_back(std::move(f.op));
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace ni
