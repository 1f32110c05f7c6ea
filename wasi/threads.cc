#include "wasi/threads.h"

#include <new>
#include <string>
#include <system_error>

#include "vm/atomics.h"
#include "vm/interp.h"

namespace wzvm::wasi {
namespace {

// The proposal's tids are positive and below 2^29 (the upper bits are
// reserved for the libc's own flags). Far below that, a program that keeps
// spawning hits this cap instead of exhausting the host.
constexpr int32_t kMaxThreads = 4096;

const vm::FuncType& spawn_type() {
  static const vm::FuncType t{{vm::ValType::I32}, {vm::ValType::I32}};
  return t;
}
const vm::FuncType& start_type() {
  static const vm::FuncType t{{vm::ValType::I32, vm::ValType::I32}, {}};
  return t;
}

vm::Error link_error(std::string msg) {
  vm::Error e;
  e.kind = vm::Error::Kind::Link;
  e.message = std::move(msg);
  return e;
}

}  // namespace

Threads::Threads(vm::Store& store, Hooks hooks) : store_(store), hooks_(std::move(hooks)) {}

Threads::~Threads() { stop(); }

bool Threads::wanted(const vm::Module& module) {
  for (const vm::Import& imp : module.imports)
    if (imp.kind == vm::ExternKind::Func && imp.module == kThreadsModule && imp.field == kThreadSpawn)
      return true;
  return false;
}

bool Threads::handles(const vm::Import& imp) {
  return imp.kind == vm::ExternKind::Memory ||
         (imp.kind == vm::ExternKind::Func && imp.module == kThreadsModule && imp.field == kThreadSpawn);
}

vm::Result<vm::Extern> Threads::import_for(const vm::Module& module, const vm::Import& imp) {
  vm::Extern e;
  e.kind = imp.kind;
  if (imp.kind == vm::ExternKind::Memory) {
    e.memory = store_.add_memory(imp.memory);
    if (!e.memory) return link_error("cannot allocate the imported memory " + imp.module + "." + imp.field);
    return e;
  }
  const vm::FuncType& want = module.types[imp.func_type];
  if (!(want == spawn_type()))
    return link_error("incompatible import type for wasi.thread-spawn: module wants " + want.to_string() +
                      ", wasi-threads defines " + spawn_type().to_string());
  e.func = store_.add_host_func(
      kThreadsModule, kThreadSpawn, spawn_type(),
      [this](vm::HostContext&, std::span<const vm::Value> args, std::span<vm::Value> results) -> vm::Trap {
        results[0] = vm::Value::from_i32(static_cast<uint32_t>(spawn(args[0].i32)));
        return {};
      });
  return e;
}

void Threads::set_module(std::shared_ptr<const vm::Module> module, std::vector<vm::Extern> imports) {
  std::lock_guard lock(mu_);
  module_ = std::move(module);
  imports_ = std::move(imports);
}

void Threads::set_main(vm::Profiling* main) {
  std::lock_guard lock(mu_);
  main_ = main;
}

int32_t Threads::spawned() {
  std::lock_guard lock(mu_);
  return next_tid_ - 1;
}

std::optional<vm::Trap> Threads::ended() {
  std::lock_guard lock(mu_);
  return ended_;
}

// The flag order matters: take_sample reads interrupt_requested after
// clearing sample_pending (vm/profiling.h).
void Threads::interrupt(vm::Profiling* p) {
  if (!p) return;
  vm::set_flag(p->interrupt_requested, 1);
  p->raise();
}

int32_t Threads::spawn(uint32_t start_arg) {
  std::lock_guard lock(mu_);
  // A module without wasi_thread_start(i32, i32) cannot run a thread: an
  // error the guest sees (its pthread_create fails), not a trap.
  const vm::Module* m = module_.get();
  if (stopping_ || !m || next_tid_ > kMaxThreads) return -1;
  bool has_start = false;
  for (const vm::Export& e : m->exports)
    if (e.name == "wasi_thread_start" && e.kind == vm::ExternKind::Func &&
        m->func_type(e.index) == start_type())
      has_start = true;
  if (!has_start) return -1;
  auto rec = std::make_unique<Record>();
  rec->tid = next_tid_;
  Record* r = rec.get();
  try {
    rec->thread = std::thread([this, r, start_arg] { run(r, start_arg); });
  } catch (const std::system_error&) {
    return -1;  // the host has no thread to give (EAGAIN)
  }
  threads_.push_back(std::move(rec));
  return next_tid_++;
}

// A thread's end by the host running out of memory (its value stack, its
// instance, the profiler's tables): as a trap of the thread, which ends the
// process, rather than an exception leaving the thread, which terminates it
// (the run's own is already a trap: vm::execute).
void Threads::run(Record* rec, uint32_t start_arg) {
  try {
    run_guest(rec, start_arg);
  } catch (const std::bad_alloc&) {
    end_process(rec->tid, vm::Trap::make(vm::TrapCode::HostOutOfMemory));
  }
}

void Threads::run_guest(Record* rec, uint32_t start_arg) {
  vm::Thread th(store_.limits());
  vm::ThreadScope scope(store_, th);
  vm::Profiling bare;
  vm::Profiling* p = hooks_.attach ? hooks_.attach(rec->tid) : nullptr;
  if (!p) {
    p = &bare;
    th.profiling = p;
  }
  // However this ends (an exception too), nothing is left pointing at `p`,
  // which may be `bare`; before end_process, as the run's end.
  struct Detach {
    Threads& t;
    Record* rec;
    vm::Thread& th;
    ~Detach() {
      {
        std::lock_guard lock(t.mu_);
        rec->profiling = nullptr;
      }
      if (t.hooks_.detach) t.hooks_.detach(rec->tid);
      th.profiling = nullptr;
    }
  };
  vm::Trap trap;
  {
    Detach detach{*this, rec, th};
    std::shared_ptr<const vm::Module> module;
    std::vector<vm::Extern> imports;
    {
      std::lock_guard lock(mu_);
      rec->profiling = p;
      if (stopping_) interrupt(p);
      module = module_;
      imports = imports_;
    }
    auto inst = store_.instantiate(module, imports);
    if (!inst) {
      trap = inst.error().host_out_of_memory ? vm::Trap::make(vm::TrapCode::HostOutOfMemory)
                                             : vm::Trap::make(vm::TrapCode::HostError, inst.error().message);
    } else {
      std::vector<vm::Value> results;
      const vm::Value args[] = {vm::Value::from_i32(static_cast<uint32_t>(rec->tid)),
                                vm::Value::from_i32(start_arg)};
      trap = store_.invoke((*inst)->exported_func("wasi_thread_start"), args, results);
    }
  }
  if (trap) end_process(rec->tid, trap);
}

void Threads::end_process(int32_t tid, const vm::Trap& trap) {
  {
    std::lock_guard lock(mu_);
    // A thread interrupted because the process is already ending is not news.
    if (trap.code == vm::TrapCode::Interrupted && stopping_) return;
    if (!ended_) {
      ended_ = trap;
      if (trap.code != vm::TrapCode::Exit)
        ended_->message = "in thread " + std::to_string(tid) + ": " + trap.message;
    }
    stopping_ = true;
    interrupt(main_);
    for (auto& r : threads_) interrupt(r->profiling);
  }
  vm::interrupt_waits();
}

void Threads::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& r : threads_) interrupt(r->profiling);
  }
  vm::interrupt_waits();
  // No spawn adds to threads_ once stopping_ is set.
  for (auto& r : threads_)
    if (r->thread.joinable()) r->thread.join();
}

}  // namespace wzvm::wasi
