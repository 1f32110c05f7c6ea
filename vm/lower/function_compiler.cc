// The pass over one body: each instruction read, checked against its row of
// vm/opcodes.def and lowered by its concern; then the frame's layout (see
// function_compiler.h).

#include "vm/lower/function_compiler.h"

#include <algorithm>
#include <span>

namespace wzvm::vm::lower {

namespace {
bool counts_instructions(const LoadOptions& options) { return options.count_instructions || options.fuel; }

// known_body_blocks(kind): the blocks of the translated bodies (written by
// scripts/known_body_cc.py from vm/known_bodies.def at build time).
#include "vm/known_bodies_blocks.inc"
}  // namespace

FunctionCompiler::FunctionCompiler(const Module& m, uint32_t func_index, const LoadOptions& options)
    : m_(m),
      func_index_(func_index),
      fn_(m.functions[func_index - m.num_imported_funcs]),
      type_(m.func_type(func_index)),
      r_(m.bytes.data() + fn_.body_offset, m.bytes.data() + fn_.body_end, fn_.body_offset),
      multi_memory_(m.features.has(Feature::MultiMemory)),
      e_(counts_instructions(options)),
      counts_(e_, options.fuel,
              counts_instructions(options) && !options.fuel && options.probe_dispatch
                  ? options.probe_dispatch(m, func_index)
                  : 0) {
  swap_buffers();
}

// A thread lowering a module's functions one after another reuses one set of
// buffers: each body's code, source map, operand and control stacks grew from
// empty and were freed, and those reallocations (copies, and a fresh page
// faulted in for every big one) were a fifth of loading Go's 14 MB
// encoding/json test binary (perf). The constructor and the destructor both
// trade this compiler's buffers with the thread's spares (never shared), and
// each trade empties what the compiler gets: the spares a compiler gave back
// are emptied by the next one to take them. What compile() hands to its
// CompiledFunc is copied out at its exact size.
namespace {
struct SpareBuffers {
  std::vector<uint32_t> code, slot_words, local_slot, slot_reads, copy_ops, decode_ops, jump_pair_ops,
      local_map;
  std::vector<std::pair<uint32_t, uint32_t>> source_map;
  std::vector<uint64_t> consts;
  std::vector<Emitter::CountMark> count_marks;
  std::vector<Operand> vals, scratch, branch_vals;
  std::vector<uint32_t> depths;
  std::vector<Ctrl> ctrls;  // CtrlStack's blocks, whole: pushes reuse their vectors
  std::vector<ValType> local_types, block_params, block_results;
};
thread_local SpareBuffers spares;

template <class T>
void trade(std::vector<T>& mine, std::vector<T>& spare) {
  mine.swap(spare);
  mine.clear();
}
}  // namespace

void FunctionCompiler::swap_buffers() {
  SpareBuffers& s = spares;
  trade(e_.code, s.code);
  trade(e_.slot_words, s.slot_words);
  trade(e_.source_map, s.source_map);
  trade(e_.consts, s.consts);
  trade(e_.count_marks, s.count_marks);
  trade(local_slot_, s.local_slot);
  trade(slot_reads_, s.slot_reads);
  trade(local_map_, s.local_map);
  trade(copy_ops_, s.copy_ops);
  trade(decode_ops_, s.decode_ops);
  trade(jump_pair_ops_, s.jump_pair_ops);
  trade(vals_, s.vals);
  trade(scratch_, s.scratch);
  trade(branch_vals_, s.branch_vals);
  trade(depths_, s.depths);
  ctrls_.trade(s.ctrls);
  trade(local_types_, s.local_types);
  trade(block_params_, s.block_params);
  trade(block_results_, s.block_results);
}

FunctionCompiler::~FunctionCompiler() { swap_buffers(); }

// Frame slots of the parameters and locals; the body's control frame.
void FunctionCompiler::begin() {
  uint32_t slot = 0;
  for (ValType t : type_.params) {
    local_types_.push_back(t);
    local_slot_.push_back(slot);
    slot += slot_count(t);
  }
  param_slots_ = slot;
  for (ValType t : fn_.locals) {
    local_types_.push_back(t);
    local_slot_.push_back(slot);
    slot += slot_count(t);
  }
  local_slots_ = slot;
  max_slot_ = slot;
  slot_reads_.assign(local_slots_, 0);
  num_params_ = static_cast<uint32_t>(type_.params.size());
  da_tracked_ = static_cast<uint32_t>(std::min<size_t>(fn_.locals.size(), 64));
  da_ = needs_zero_ = 0;
  result_slots_ = 0;
  for (ValType t : type_.results) result_slots_ += slot_count(t);
  max_slot_ = std::max(max_slot_, result_slots_);  // results are written to fp[0..]

  e_.instr_offset = static_cast<uint32_t>(fn_.body_offset);
  counts_.begin_body();
  Ctrl& body = ctrls_.push();
  body.kind = BlockKind::Body;
  body.results.assign(type_.results.begin(), type_.results.end());
  body.base_slot = local_slots_;
}

Status FunctionCompiler::read_body() {
  while (!ctrls_.empty()) {
    if (r_.at_end()) {
      e_.instr_offset = static_cast<uint32_t>(r_.offset());
      return Status(error_.message.empty() ? (malformed("unexpected end of section or function"), error_)
                                           : error_);
    }
    if (!instruction()) {
      if (!failed_) check_reader();
      if (!failed_) malformed("unexpected end of section or function");
      return Status(error_);
    }
  }
  if (failed_) return Status(error_);  // an internal error in patch()
  if (!r_.at_end()) {
    e_.instr_offset = static_cast<uint32_t>(r_.offset());
    malformed("END opcode expected");  // bytes after the final `end`
    return Status(error_);
  }
  return Status();
}

Status FunctionCompiler::validate(CompiledFunc& stub) {
  begin();
  ctrls_.back().dead = true;  // nothing emitted; every check made (see Ctrl::dead)
  da_tracked_ = 0;            // no frame laid out: no definite assignment either
  if (Status s = read_body(); !s) return s;
  stub = CompiledFunc{};
  stub.code = {static_cast<uint32_t>(IOp::LowerFunction)};
  stub.param_slots = stub.local_slots = stub.const_base = param_slots_;
  stub.result_slots = result_slots_;
  stub.frame_init.assign(4, 0);  // init_frame copies four words at least
  stub.place_frame_image(param_slots_);
  stub.frame_slots = std::max(param_slots_ + 4, result_slots_);
  // Counted: the stub never runs. Its first call fails the frame check, and
  // the trap path lowers it and runs the call again, before anything of it
  // is counted (CompiledFunc::kUnlowered).
  if (counts_.counting()) stub.frame_slots = CompiledFunc::kUnlowered;
  // A sample or a backtrace in the stub names the body's start.
  stub.source_map = {{0, static_cast<uint32_t>(fn_.body_offset)}};
  return Status();
}

// The op at the entry of each kind that runs there: in plain code, and in
// code counted without fuel (IOp::Count: none; memmove calls memcpy, where a
// translation stops).
namespace {
struct EntryOps {
  KnownBody kind;
  IOp plain, counted;
};
constexpr EntryOps kEntryOps[] = {
    {KnownBody::LibcMemcpy, IOp::LibcMemcpy, IOp::LibcMemcpyCounted},
    {KnownBody::LibcMemmove, IOp::LibcMemmove, IOp::Count},
    {KnownBody::LibcMemset, IOp::LibcMemset, IOp::LibcMemsetCounted},
    {KnownBody::LibcMemcmp, IOp::LibcMemcmp, IOp::LibcMemcmpCounted},
    {KnownBody::LibcStrlen, IOp::LibcStrlen, IOp::LibcStrlenCounted},
    {KnownBody::LibcDlfree, IOp::LibcDlfree, IOp::LibcDlfreeCounted},
    {KnownBody::LibcDlmalloc, IOp::LibcDlmalloc, IOp::LibcDlmallocCounted},
};
}  // namespace

// A body of wasi-libc's that the VM knows (vm/known_bodies.def), in plain
// code: [libc.X skip][ret1 0 1] before the body ([libc.X skip G H] for the
// allocator's, and dlfree's ret0). The op runs the function natively, leaves
// its result in slot 0 (the first parameter's: memcpy's, memmove's and
// memset's result is that parameter) and goes on to the ret;
// when its fast path does not apply it skips to the body, which runs as
// written. The frame stays (the call made it): a CPU sample requested during
// the op is taken at the ret1, in this function, and a trap in the body
// has its backtrace. Not over shared memory: another thread may be writing
// what the op reads (vm/lower/calls.cc's Go ops refuse it alike).
void FunctionCompiler::begin_known_body() {
  const KnownBody kind = m_.known_body(func_index_);
  if (!runs_at_entry(kind) || m_.all_memories.empty() || m_.all_memories[0].limits.shared) return;
  const EntryOps* ops = std::find_if(std::begin(kEntryOps), std::end(kEntryOps),
                                     [kind](const EntryOps& o) { return o.kind == kind; });
  if (ops == std::end(kEntryOps)) return;  // not a kind that runs at its entry
  if (counts_.counting()) {
    begin_known_body_counted(kind, ops->counted);
    return;
  }
  const uint32_t at = emit_op(ops->plain);
  word(0);  // the words to the body
  if (kind == KnownBody::LibcDlfree || kind == KnownBody::LibcDlmalloc) {
    const KnownBodyMatch match = m_.known_match(func_index_);
    word(static_cast<uint32_t>(match.constant));         // G
    word(static_cast<uint32_t>(match.callee_constant));  // H
  }
  emit_ret(0, result_slots_);
  e_.code[at + 1] = e_.here() - at;
  bind_label();  // nothing of the body merges with the ret
}

// Counted code without fuel: [op.counted skip G H base][count.edge][ret]
// (vm/counted_ops.def) where the body has a translation
// (known_bodies_blocks.inc): its blocks become counters of the function,
// each the straight line of instructions the translation counts as it
// enters it (Instrumentation::native_blocks, at the end of compile()), and
// the count.edge takes back the body the entry counted. The string
// functions have the op here only: plain code's are by hand.
void FunctionCompiler::begin_known_body_counted(KnownBody kind, IOp op) {
  if (!counts_.edges() || op == IOp::Count || known_body_blocks(kind).empty()) return;
  const KnownBodyMatch match = m_.known_match(func_index_);
  const uint32_t at = emit_op(op);
  word(0);                                             // the words to the body
  word(static_cast<uint32_t>(match.constant));         // G
  word(static_cast<uint32_t>(match.callee_constant));  // H
  native_base_word_ = e_.here();
  word(0);  // the first block's counter (finish)
  counts_.emit_count_edge(false);
  emit_ret(0, result_slots_);
  e_.code[at + 1] = e_.here() - at;
  bind_label();
  native_blocks_ = true;
}

// The translation's blocks as ranges of module byte offsets, for the
// counters Instrumentation::finish makes of them.
void FunctionCompiler::end_known_body_counted() {
  if (!native_blocks_) return;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  for (const uint32_t(&b)[2] : known_body_blocks(m_.known_body(func_index_))) {
    if (b[1] >= instr_offsets_.size()) {
      fail("internal error: a known body's block past its end");
      return;
    }
    ranges.emplace_back(instr_offsets_[b[0]], instr_offsets_[b[1]]);
  }
  counts_.native_blocks(native_base_word_, std::move(ranges));
}

Status FunctionCompiler::compile(CompiledFunc& out) {
  begin();
  begin_known_body();
  const uint32_t param_slots = param_slots_, result_slots = result_slots_;
  if (Status s = read_body(); !s) return s;
  end_known_body_counted();
  resolve_threaded_jumps();
  pair_copy_jumps(e_, copy_ops_);   // every jump final now
  pair_decode(e_, decode_ops_);     // every op final now
  pair_copy_switch(e_, copy_ops_);  // and every copy run
  pair_lua_tail(e_, jump_pair_ops_);
  pair_stack_prologues(e_, copy_ops_);
  pair_go_frames(e_, copy_ops_);
  own_global_moves(e_, copy_ops_);
  if (failed_) return Status(error_);
  // Frame: [params][locals zeroed on entry][constants][exception slots]
  // [locals written before any read][value stack]; a call copies the image
  // of the first three parts (init_frame). Lowering numbered the locals
  // [param_slots, local_slots_) in order, named constants and exception
  // slots by tag, and stack slots from local_slots_: they move here.
  //
  // Constants no operand names any more (a fusion folded them into an
  // immediate or dropped their op: shifts_to_extend, rebase_switch_index,
  // fuse_rmw_add, jump threading's written constants) are dropped: every
  // call copies the area (Go's strconv tests: 40% of the constants copied
  // per call were such). A v128 constant's second slot is kept with its
  // first. More than 64 (a fusion's zero past kMaxConsts): all kept, rare.
  std::vector<uint64_t>& consts = e_.consts;
  uint8_t const_index[64];  // a used constant's index among those kept
  const bool compact = !consts.empty() && consts.size() <= 64;
  if (compact) {
    uint64_t used = 0;
    for (uint32_t pos : e_.slot_words)
      if (const uint32_t w = e_.code[pos]; (w & kConstTag) && (w & ~kConstTag) < 64)
        used |= uint64_t{1} << (w & ~kConstTag);
    used |= (used & e_.v128_consts) << 1;
    uint32_t n = 0;
    for (uint32_t k = 0; k < consts.size(); ++k) {
      const_index[k] = static_cast<uint8_t>(n);
      if (used >> k & 1) consts[n++] = consts[k];
    }
    consts.resize(n);
  }
  const uint32_t nconsts = static_cast<uint32_t>(consts.size());
  const uint32_t nexn = exn_count_;
  // Declared locals that every read finds written (definite assignment,
  // da_read) need no zeros: they go after the image (a v128's two slots
  // together). CPython's and Lua's calls copied 3.7 zeros each.
  uint32_t zeroed = local_slots_ - param_slots;  // slots of the locals that need zeros
  local_map_.clear();
  const uint64_t all = da_tracked_ == 64 ? ~uint64_t{0} : (uint64_t{1} << da_tracked_) - 1;
  if ((needs_zero_ & all) != all) {
    uint32_t nz = 0;  // slots of the locals zeroed
    for (uint32_t k = 0; k < local_types_.size() - num_params_; ++k)
      if (k >= da_tracked_ || needs_zero_ >> k & 1) nz += slot_count(local_types_[num_params_ + k]);
    local_map_.resize(local_slots_ - param_slots);
    uint32_t z = param_slots, rest = param_slots + nz + nconsts + nexn;
    for (uint32_t k = 0; k < local_types_.size() - num_params_; ++k) {
      const uint32_t x = num_params_ + k, n = slot_count(local_types_[x]);
      uint32_t& to = k >= da_tracked_ || needs_zero_ >> k & 1 ? z : rest;
      for (uint32_t j = 0; j < n; ++j) local_map_[local_slot_[x] - param_slots + j] = to + j;
      to += n;
    }
    zeroed = nz;
  }
  const uint32_t const_base = param_slots + zeroed;
  auto renumber = [&](uint32_t w) {
    if (w & kConstTag) return const_base + (compact ? const_index[w & ~kConstTag] : w & ~kConstTag);
    if (w & kExnTag) return const_base + nconsts + (w & ~kExnTag);
    if (w >= local_slots_) return w + nconsts + nexn;
    return w < param_slots || local_map_.empty() ? w : local_map_[w - param_slots];
  };
  if (nconsts || nexn || !local_map_.empty()) {
    for (uint32_t pos : e_.slot_words) e_.code[pos] = renumber(e_.code[pos]);
  }
  for (TryRegion& r : regions_) {
    r.dst_slot = renumber(r.dst_slot);
    r.exn_slot = renumber(r.exn_slot);
  }
  consts.resize(nconsts + nexn, 0);  // copied in on entry: exception slots start empty
  out.try_regions = std::move(regions_);
  counts_.finish(out);
  out.const_base = const_base;
  out.frame_init.assign(zeroed, 0);
  out.frame_init.insert(out.frame_init.end(), consts.begin(), consts.end());
  // Calls copy the image four words at a time, at least once (vm/interp.cc,
  // init_frame): it gets zeros up to a multiple of four, at least four,
  // which land on the locals written before read or the first value-stack
  // slots (nothing is there yet) and which the frame must cover.
  out.frame_init.resize(std::max<size_t>(4, (out.frame_init.size() + 3) & ~size_t{3}), 0);
  out.consts.assign(consts.begin(), consts.end());
  out.code.assign(e_.code.begin(), e_.code.end());
  out.param_slots = param_slots;
  out.place_frame_image(param_slots);
  out.local_slots = local_slots_;
  out.frame_slots = std::max<uint32_t>(max_slot_ + nconsts + nexn, param_slots + out.frame_init.size());
  out.result_slots = result_slots;
  out.source_map.assign(e_.source_map.begin(), e_.source_map.end());
  return Status();
}

bool FunctionCompiler::instruction() {
  e_.instr_offset = static_cast<uint32_t>(r_.offset());
  uint8_t opcode;
  if (!r_.u8(opcode)) return false;
  const OpTables& tables = tables_;
  const OpInfo* info = &tables.single[opcode];
  if (opcode == 0xFC || opcode == 0xFD || opcode == 0xFE) {
    uint32_t sub;
    if (!r_.u32(sub)) return false;
    size_t limit = opcode == 0xFC ? tables.fc.size() : opcode == 0xFD ? tables.fd.size() : tables.fe.size();
    if (sub >= limit) return malformed("illegal opcode");
    info = opcode == 0xFC ? &tables.fc[sub] : opcode == 0xFD ? &tables.fd[sub] : &tables.fe[sub];
  }
  if (!info->valid) return malformed("illegal opcode");
  if (info->feature >= 0 && !m_.features.has(static_cast<Feature>(info->feature)))
    return malformed("illegal opcode");
  if (!counts_.counting()) return info->kind != Kind::Special ? simple(*info) : special(*info);
  if (native_blocks_) instr_offsets_.push_back(e_.instr_offset);
  counts_.begin_instruction(*info, emitting());
  bool ok = info->kind != Kind::Special ? simple(*info) : special(*info);
  counts_.end_instruction(*info);
  return ok;
}

bool FunctionCompiler::simple(const OpInfo& info) {
  switch (info.kind) {
    case Kind::Unary:
    case Kind::Binary:
      return numeric(info);
    case Kind::Load:
      return load(info);
    case Kind::Store:
      return store(info);
    case Kind::AtomicLoad:
    case Kind::AtomicStore:
    case Kind::AtomicRmw:
    case Kind::AtomicCmpxchg:
      return atomic_access(info);
    case Kind::Special:
      break;
  }
  return fail("internal error: not a simple instruction");
}

// The concerns that lower Special rows, in the order special() asks them:
// the most frequent (locals, constants, control) first. One list, expanded
// twice: special() spells the calls out (calls through member pointers
// cost lowering instructions), the test hook below loops over them.
#define WZVM_LOWERING_CONCERNS(X) \
  X(values) X(control) X(calls) X(memory) X(tables) X(refs) X(exceptions) X(atomics) X(simd)

// Each concern lowers its own Special rows and answers nullopt for the others.
bool FunctionCompiler::special(const OpInfo& info) {
  // A hint first for the control and call rows (a fifth of Go's
  // instructions), which otherwise asked lower_values in vain: each ask is
  // a call of a big function (callgrind, validating json: 2.5% of it). The
  // chain below stays the authority: a row the hint names wrongly is still
  // lowered by its one concern (Lowering.EverySpecialRowHasExactlyOneConcern).
  switch (info.op) {
    // The values rows that are half of all instructions, straight to their
    // code in values.cc (lower_values calls the same): lower_values' frame
    // and switch cost ~30 host instructions each.
    case IOp::LocalGet:
      return op_local_get();
    case IOp::I32Const:
    case IOp::I64Const:
    case IOp::F32Const:
    case IOp::F64Const:
      return op_const(info);
    case IOp::Block:
    case IOp::Loop:
    case IOp::If:
    case IOp::Else:
    case IOp::End:
    case IOp::Br:
    case IOp::BrIf:
    case IOp::BrTable:
    case IOp::Return:
      if (Lowered done = lower_control(info)) return *done;
      break;
    case IOp::Call:
    case IOp::CallIndirect:
      if (Lowered done = lower_calls(info)) return *done;
      break;
    default:
      break;
  }
#define WZVM_ASK_(concern) \
  if (Lowered done = lower_##concern(info)) return *done;
  WZVM_LOWERING_CONCERNS(WZVM_ASK_)
#undef WZVM_ASK_
  return malformed("illegal opcode");
}

int FunctionCompiler::concerns_claiming(const Module& m, uint32_t func_index, const OpInfo& info) {
  using Lower = Lowered (FunctionCompiler::*)(const OpInfo&);
#define WZVM_MEMBER_(concern) &FunctionCompiler::lower_##concern,
  static constexpr Lower kConcerns[] = {WZVM_LOWERING_CONCERNS(WZVM_MEMBER_)};
#undef WZVM_MEMBER_
  int n = 0;
  for (Lower lower : kConcerns) {
    FunctionCompiler fc(m, func_index, LoadOptions{});
    fc.begin();
    n += (fc.*lower)(info).has_value();
  }
  return n;
}

void FunctionCompiler::emit_copy(uint32_t dst, uint32_t src, ValType t) {
  if (dst == src) return;
  if (slot_count(t) == 1 && merge_copy(e_, dst, src)) return;
  if (slot_count(t) == 1) {
    copy_ops_.push_back(emit_op(IOp::Copy));
    slot_word(dst);
    src_word(src);
  } else {
    emit_op(IOp::CopyN);
    slot_word(dst);
    src_word(src);
    word(slot_count(t));
  }
}

}  // namespace wzvm::vm::lower
