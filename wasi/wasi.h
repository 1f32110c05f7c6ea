#pragma once
// WASI preview1 (wasi_snapshot_preview1) for wzvm: the host functions, the
// file-descriptor table and the preopened-directory sandbox.
//
//   wasi::Config cfg;  cfg.args = {"app.wasm"};  cfg.preopens = {wasi::Preopen::dir("/tmp/data", "/data")};
//   auto w = wasi::Wasi::create(cfg);                   // opens the preopens
//   auto imports = (*w)->imports_for(store, *module);   // one Extern per import
//   auto inst = store.instantiate(module, *imports);
//   vm::Trap t = store.invoke(_start, {}, results);     // proc_exit: t.code == TrapCode::Exit
//
// The function list is wasi/wasi_api.def; the record layouts are wasi/types.h.
// A Wasi must outlive every call into the instance it was linked to.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "vm/module.h"
#include "vm/result.h"
#include "vm/runtime.h"
#include "wasi/deterministic.h"
#include "wasi/guest_memory.h"
#include "wasi/sandbox.h"
#include "wasi/types.h"

struct pollfd;

namespace wzvm::wasi {

struct PollSub;  // wasi/poll.cc
struct PollEvent;

inline constexpr const char* kModuleName = "wasi_snapshot_preview1";

// One guest fd from 3 up: a host directory the Wasi opens, or an open host fd
// handed over as it is (a listening or connected socket, a file, a pipe).
// The CLI's --dir, --listen and --fd keep their command-line order this way.
struct Preopen {
  std::string host_path;   // directory on the host
  std::string guest_path;  // the name the guest sees (fd_prestat_dir_name)
  int fd = -1;             // >= 0: this host fd instead of a directory; the Wasi owns it
                           // from create() on, also when create() fails

  static Preopen dir(std::string host, std::string guest) { return {std::move(host), std::move(guest), -1}; }
  static Preopen host_fd(int fd) { return {{}, {}, fd}; }
};

struct Config {
  std::vector<std::string> args;  // argv; args[0] is the program name
  std::vector<std::string> env;   // "NAME=VALUE" strings, exactly what the guest sees
  std::vector<Preopen> preopens;  // fds 3, 4, ... in order
  // The guest's fds 0, 1, 2. Borrowed: fd_close forgets them without closing the host fd.
  int stdin_fd = 0, stdout_fd = 1, stderr_fd = 2;
  Resolver resolver = Resolver::Auto;
  // Deterministic mode (wasi/deterministic.h): random_get is a SplitMix64
  // stream seeded with random_seed, the clocks are virtual and advance with
  // the guest's instructions, poll_oneoff skips its sleeps, fd_readdir sorts.
  // The code must be lowered with vm::LoadOptions::fuel and run with a
  // vm::Profiling whose fuel was set with set_fuel (its use is the clock);
  // a clock read without one traps, naming this. The embedder keeps the
  // rest of the inputs fixed (env, args, no sockets, no wasi-threads).
  bool deterministic = false;
  uint64_t random_seed = 0;
};

// One row of wasi/wasi_api.def.
struct FunctionInfo {
  const char* name;
  vm::FuncType type;
};
std::span<const FunctionInfo> functions();

// The arguments of one host call and what it may leave besides its errno.
struct Call {
  GuestMemory mem;
  std::span<const vm::Value> args;
  std::optional<int> exit_code;     // set by proc_exit
  vm::HostContext* host = nullptr;  // the calling thread's store (deterministic clocks); null in unit tests
  std::string trap;                 // non-empty: the call traps with this message (a misconfigured embedding)
  uint32_t u32(size_t i) const { return args[i].i32; }
  uint64_t u64(size_t i) const { return args[i].i64; }
};

class Wasi {
 public:
  // Opens the preopened directories; an Io error names the one that failed.
  static vm::Result<std::unique_ptr<Wasi>> create(Config config);
  ~Wasi();
  Wasi(const Wasi&) = delete;
  Wasi& operator=(const Wasi&) = delete;

  // Host functions for every import of `module`, in import order. An import
  // of another module, or of a name WASI does not define, is a link error
  // "unknown import MODULE.FIELD"; a wrong signature is "incompatible import type".
  vm::Result<std::vector<vm::Extern>> imports_for(vm::Store& store, const vm::Module& module);
  // The host function for one import of `module` (the same errors).
  vm::Result<vm::Extern> import_for(vm::Store& store, const vm::Module& module, const vm::Import& imp);

  // The handlers, one per row of wasi/wasi_api.def (wasi.cc, fs.cc, poll.cc, sock.cc).
#define WZVM_WASI_FUNC(name, params, results) Errno name(Call& c);
#include "wasi/wasi_api.def"
#undef WZVM_WASI_FUNC

 private:
  struct DirEntry {
    uint64_t ino;
    uint8_t type;
    std::string name;
  };
  struct Fd {
    int host = -1;
    bool owned = true;  // false for the borrowed stdio fds
    uint8_t type = filetype::unknown;
    uint64_t base = 0, inheriting = 0;   // rights
    std::optional<std::string> preopen;  // guest name of a preopened directory
    std::vector<DirEntry> dir_cache;     // fd_readdir: entries read when cookie 0 was asked
  };

  explicit Wasi(Config config);
  // The fd entry if it exists and holds all of `need`; else badf / enotcapable.
  Errno get(uint32_t fd, uint64_t need, Fd*& out);
  uint32_t insert(Fd fd);                    // lowest free number
  static Fd describe(int host, bool owned);  // type and rights from fstat
  Errno iovecs(const GuestMemory& mem, uint32_t iovs, uint32_t n, std::vector<struct iovec>& out);
  Errno read_dir(Fd& f);
  Errno path_of(Call& c, uint32_t ptr, uint32_t len, std::string& out);
  Errno set_times(int fd, const char* name, int at_flags, uint64_t atim, uint64_t mtim, uint32_t flags);
  // Deterministic mode: instructions the calling thread has executed (its
  // fuel's use); false, with c.trap set, when nothing counts them.
  bool executed(Call& c, uint64_t& out);
  // poll_oneoff after its subscriptions are read: real time, or the virtual
  // clock of deterministic mode (wasi/poll.cc says how each decides what fires).
  Errno poll_host(std::vector<PollEvent>& events, std::vector<struct pollfd>& pfds,
                  const std::vector<const PollSub*>& fd_subs, const std::vector<const PollSub*>& clock_subs);
  Errno poll_virtual(Call& c, std::vector<PollEvent>& events, std::vector<struct pollfd>& pfds,
                     const std::vector<const PollSub*>& fd_subs,
                     const std::vector<const PollSub*>& clock_subs);

  Config config_;
  Sandbox sandbox_;
  std::map<uint32_t, Fd> fds_;
  std::unique_ptr<Deterministic> det_;  // deterministic mode
  std::mutex mu_;  // wasi-threads: one host call at a time on the fd table (see imports_for)
};

}  // namespace wzvm::wasi
