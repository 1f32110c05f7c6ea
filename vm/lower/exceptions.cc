// Exception handling (the legacy proposal: try, catch, catch_all, throw,
// rethrow, delegate). A `try` body's code is a TryRegion (vm/code.h) with
// its handlers' code positions; the interpreter looks a thrown exception's
// tag up in the regions around the throwing op, innermost first. `try`
// opens its block as any block does (control.cc).

#include "vm/lower/function_compiler.h"

namespace wzvm::vm::lower {

Lowered FunctionCompiler::lower_exceptions(const OpInfo& info) {
  switch (info.op) {
    case IOp::Catch:
      return op_catch(false);
    case IOp::CatchAll:
      return op_catch(true);

    case IOp::Throw: {
      uint32_t t;
      if (!read_tag(t)) return false;
      std::vector<Operand> args;
      if (!pop_all(tag_params(t), args)) return false;
      for (Operand& a : args) materialize(a);
      uint32_t base = args.empty() ? next_slot() : args.front().slot;
      if (emitting()) {  // [throw tag base]: the values are at fp[base..]
        emit_op(IOp::Throw);
        word(t);
        slot_word(base);
      }
      set_unreachable();
      return true;
    }
    case IOp::Rethrow: {
      uint32_t depth;
      if (!r_.u32(depth)) return false;
      if (depth >= ctrls_.size()) return fail("unknown label");
      const Ctrl& target = ctrls_[ctrls_.size() - 1 - depth];
      if (target.kind != BlockKind::Catch && target.kind != BlockKind::CatchAll)
        return fail("invalid rethrow label");
      if (emitting()) {  // [rethrow exn_slot]
        emit_op(IOp::Rethrow);
        slot_word(target.exn_slot);
      }
      set_unreachable();
      return true;
    }
    case IOp::Delegate: {
      // Ends a try without handlers: what its body throws goes to the try
      // (or the code around the block) that label `depth` names outside it.
      if (ctrls_.back().kind != BlockKind::Try) return fail("delegate without try");
      uint32_t depth;
      if (!r_.u32(depth)) return false;
      end_try_body();
      int32_t region = ctrls_.back().region;
      if (depth >= ctrls_.size() - 1) return fail("unknown label");
      if (region >= 0) regions_[region].next = enclosing_region(ctrls_.size() - 2 - depth);
      return op_end();  // then as `end`
    }
    default:
      return std::nullopt;
  }
}

bool FunctionCompiler::read_tag(uint32_t& t) {
  if (!r_.u32(t)) return false;
  if (t >= m_.all_tag_types.size()) return fail("unknown tag " + std::to_string(t));
  return true;
}

// The region of the innermost try whose body encloses ctrls_[index]
// (ctrls_[index] itself included): where an exception raised there goes
// after the regions inside it. -1: to the caller.
int32_t FunctionCompiler::enclosing_region(size_t index) const {
  for (size_t i = index + 1; i-- > 0;)
    if (ctrls_[i].kind == BlockKind::Try && ctrls_[i].region >= 0) return ctrls_[i].region;
  return -1;
}

// A try just opened (`c`, in reachable code): the body's code is the
// region; handlers are added at each catch.
void FunctionCompiler::open_try_region(Ctrl& c) {
  // No fusion may reach back over the region's start: one that takes ops
  // from before it into one op (fuse_rmw_add) would move the start.
  e_.last_op = e_.prev_op = UINT32_MAX;
  TryRegion r;
  r.start = here();
  r.end = here();
  r.next = enclosing_region(ctrls_.size() - 2);
  r.dst_slot = c.base_slot;
  c.exn_slot = kExnTag | exn_count_++;
  r.exn_slot = c.exn_slot;
  c.region = static_cast<int32_t>(regions_.size());
  regions_.push_back(std::move(r));
}

// The try body (or a handler) ends here: the region's code is what came before.
void FunctionCompiler::end_try_body() {
  Ctrl& c = ctrls_.back();
  if (c.kind == BlockKind::Try && c.region >= 0) regions_[c.region].end = here();
}

// catch / catch_all: ends the try body (or the previous handler) like
// `else`, then starts a handler that receives the tag's values.
bool FunctionCompiler::op_catch(bool all) {
  Ctrl& c = ctrls_.back();
  if (c.kind != BlockKind::Try && c.kind != BlockKind::Catch)
    return fail(all ? "catch_all without try" : "catch without try");
  uint32_t t = TryRegion::kCatchAll;
  if (!all && !read_tag(t)) return false;
  end_try_body();
  if (!pop_all(c.results, scratch_)) return false;
  if (vals_.size() != c.height) return fail("type mismatch");
  if (emitting()) {
    c.da_end &= da_;
    emit_exit_to_end(c);
  }
  // A handler starts from what the try's entry had written: the exception
  // may come from any point of the body, each of which had written at least
  // that (a handler's own exceptions go outward, not to the next handler).
  da_ = c.da_entry;
  c.unreachable = false;
  c.kind = all ? BlockKind::CatchAll : BlockKind::Catch;
  if (!c.dead && c.region >= 0) {
    bind_label();
    regions_[c.region].handlers.push_back({t, here()});
    counts_.emit_count_edge(true);  // counted without fuel: the handler's landing
  }
  if (!all)
    for (ValType v : tag_params(t)) push(v);
  return true;
}

}  // namespace wzvm::vm::lower
