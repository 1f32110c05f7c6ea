// The Wasi context: fd table, registration of the host functions, and the
// small functions (args, environ, clocks, random, proc, sched).
#include "wasi/wasi.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "vm/interp.h"
#include "vm/profiling.h"

namespace wzvm::wasi {

const char* errno_name(Errno e) {
  switch (e) {
#define WZVM_WASI_ERRNO(name, value) \
  case Errno::name:                  \
    return #name;
#include "wasi/errno.def"
#undef WZVM_WASI_ERRNO
  }
  return "unknown";
}

Errno from_host_errno(int e) {
  switch (e) {
    case 0:
      return Errno::success;
    case E2BIG:
      return Errno::e2big;
    case EACCES:
      return Errno::eacces;
    case EADDRINUSE:
      return Errno::eaddrinuse;
    case EADDRNOTAVAIL:
      return Errno::eaddrnotavail;
    case EAFNOSUPPORT:
      return Errno::eafnosupport;
    case EAGAIN:
      return Errno::eagain;
    case EALREADY:
      return Errno::ealready;
    case EBADF:
      return Errno::ebadf;
    case EBADMSG:
      return Errno::ebadmsg;
    case EBUSY:
      return Errno::ebusy;
    case ECANCELED:
      return Errno::ecanceled;
    case ECHILD:
      return Errno::echild;
    case ECONNABORTED:
      return Errno::econnaborted;
    case ECONNREFUSED:
      return Errno::econnrefused;
    case ECONNRESET:
      return Errno::econnreset;
    case EDEADLK:
      return Errno::edeadlk;
    case EDESTADDRREQ:
      return Errno::edestaddrreq;
    case EDOM:
      return Errno::edom;
    case EDQUOT:
      return Errno::edquot;
    case EEXIST:
      return Errno::eexist;
    case EFAULT:
      return Errno::efault;
    case EFBIG:
      return Errno::efbig;
    case EHOSTUNREACH:
      return Errno::ehostunreach;
    case EIDRM:
      return Errno::eidrm;
    case EILSEQ:
      return Errno::eilseq;
    case EINPROGRESS:
      return Errno::einprogress;
    case EINTR:
      return Errno::eintr;
    case EINVAL:
      return Errno::einval;
    case EIO:
      return Errno::eio;
    case EISCONN:
      return Errno::eisconn;
    case EISDIR:
      return Errno::eisdir;
    case ELOOP:
      return Errno::eloop;
    case EMFILE:
      return Errno::emfile;
    case EMLINK:
      return Errno::emlink;
    case EMSGSIZE:
      return Errno::emsgsize;
    case EMULTIHOP:
      return Errno::emultihop;
    case ENAMETOOLONG:
      return Errno::enametoolong;
    case ENETDOWN:
      return Errno::enetdown;
    case ENETRESET:
      return Errno::enetreset;
    case ENETUNREACH:
      return Errno::enetunreach;
    case ENFILE:
      return Errno::enfile;
    case ENOBUFS:
      return Errno::enobufs;
    case ENODEV:
      return Errno::enodev;
    case ENOENT:
      return Errno::enoent;
    case ENOEXEC:
      return Errno::enoexec;
    case ENOLCK:
      return Errno::enolck;
    case ENOLINK:
      return Errno::enolink;
    case ENOMEM:
      return Errno::enomem;
    case ENOMSG:
      return Errno::enomsg;
    case ENOPROTOOPT:
      return Errno::enoprotoopt;
    case ENOSPC:
      return Errno::enospc;
    case ENOSYS:
      return Errno::enosys;
    case ENOTCONN:
      return Errno::enotconn;
    case ENOTDIR:
      return Errno::enotdir;
    case ENOTEMPTY:
      return Errno::enotempty;
    case ENOTRECOVERABLE:
      return Errno::enotrecoverable;
    case ENOTSOCK:
      return Errno::enotsock;
    case ENOTSUP:
      return Errno::enotsup;  // == EOPNOTSUPP on Linux
    case ENOTTY:
      return Errno::enotty;
    case ENXIO:
      return Errno::enxio;
    case EOVERFLOW:
      return Errno::eoverflow;
    case EOWNERDEAD:
      return Errno::eownerdead;
    case EPERM:
      return Errno::eperm;
    case EPIPE:
      return Errno::epipe;
    case EPROTO:
      return Errno::eproto;
    case EPROTONOSUPPORT:
      return Errno::eprotonosupport;
    case EPROTOTYPE:
      return Errno::eprototype;
    case ERANGE:
      return Errno::erange;
    case EROFS:
      return Errno::erofs;
    case ESPIPE:
      return Errno::espipe;
    case ESRCH:
      return Errno::esrch;
    case ESTALE:
      return Errno::estale;
    case ETIMEDOUT:
      return Errno::etimedout;
    case ETXTBSY:
      return Errno::etxtbsy;
    case EXDEV:
      return Errno::exdev;
    default:
      return Errno::eio;
  }
}

namespace {

vm::FuncType parse_signature(const char* params, const char* results) {
  auto conv = [](const char* s) {
    std::vector<vm::ValType> v;
    for (; *s; ++s) v.push_back(*s == 'I' ? vm::ValType::I64 : vm::ValType::I32);
    return v;
  };
  return vm::FuncType{conv(params), conv(results)};
}

using Handler = Errno (Wasi::*)(Call&);
struct Row {
  FunctionInfo info;
  Handler handler;
};

const std::vector<Row>& table() {
  static const std::vector<Row> rows = {
#define WZVM_WASI_FUNC(name, params, results) {{#name, parse_signature(params, results)}, &Wasi::name},
#include "wasi/wasi_api.def"
#undef WZVM_WASI_FUNC
  };
  return rows;
}

vm::Error link_error(std::string message) {
  vm::Error e;
  e.kind = vm::Error::Kind::Link;
  e.message = std::move(message);
  e.section = "import";
  return e;
}

int64_t to_ns(const timespec& ts) { return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec; }

bool host_clock(uint32_t id, clockid_t& out) {
  switch (id) {
    case clockid::realtime:
      out = CLOCK_REALTIME;
      return true;
    case clockid::monotonic:
      out = CLOCK_MONOTONIC;
      return true;
    case clockid::process_cputime:
      out = CLOCK_PROCESS_CPUTIME_ID;
      return true;
    case clockid::thread_cputime:
      out = CLOCK_THREAD_CPUTIME_ID;
      return true;
  }
  return false;
}

}  // namespace

std::span<const FunctionInfo> functions() {
  static const std::vector<FunctionInfo> infos = [] {
    std::vector<FunctionInfo> v;
    for (const Row& r : table()) v.push_back(r.info);
    return v;
  }();
  return infos;
}

// ---- the context ----------------------------------------------------------

Wasi::Wasi(Config config) : config_(std::move(config)), sandbox_(config_.resolver) {
  if (config_.deterministic) det_ = std::make_unique<Deterministic>(config_.random_seed);
}

bool Wasi::executed(Call& c, uint64_t& out) {
  const vm::Profiling* p = c.host ? c.host->store.thread()->profiling : nullptr;
  if (!p || !p->fuel_set) {
    c.trap =
        "wasi: deterministic mode reads its clock from the fuel counter: lower the module with "
        "vm::LoadOptions::fuel and call vm::Profiling::set_fuel before running it";
    return false;
  }
  out = p->fuel_used();
  return true;
}

Wasi::~Wasi() {
  for (auto& [num, f] : fds_)
    if (f.owned && f.host >= 0) ::close(f.host);
}

Wasi::Fd Wasi::describe(int host, bool owned) {
  Fd f;
  f.host = host;
  f.owned = owned;
  struct stat st;
  if (fstat(host, &st) != 0) {
    f.base = rights::stream;
    return f;
  }
  if (S_ISREG(st.st_mode)) {
    f.type = filetype::regular_file;
    f.base = rights::file;
  } else if (S_ISDIR(st.st_mode)) {
    f.type = filetype::directory;
    f.base = rights::directory;
    f.inheriting = rights::all;
  } else if (S_ISSOCK(st.st_mode)) {
    int type = 0;
    socklen_t len = sizeof type;
    getsockopt(host, SOL_SOCKET, SO_TYPE, &type, &len);
    f.type = type == SOCK_DGRAM ? filetype::socket_dgram : filetype::socket_stream;
    f.base = rights::socket;
    // Only a listening socket can accept: fdstat then tells a guest handed
    // several sockets which one is the server's.
    int listening = 0;
    len = sizeof listening;
    if (getsockopt(host, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening)
      f.base &= ~rights::sock_accept;
  } else {
    // Character devices (ttys), block devices, pipes (WASI has no FIFO type).
    f.type = S_ISCHR(st.st_mode)   ? filetype::character_device
             : S_ISBLK(st.st_mode) ? filetype::block_device
                                   : filetype::unknown;
    f.base = S_ISBLK(st.st_mode) ? rights::file : rights::stream;
  }
  return f;
}

vm::Result<std::unique_ptr<Wasi>> Wasi::create(Config config) {
  std::unique_ptr<Wasi> w(new Wasi(std::move(config)));
  const Config& c = w->config_;
  int stdio[3] = {c.stdin_fd, c.stdout_fd, c.stderr_fd};
  for (uint32_t i = 0; i < 3; ++i) {
    if (stdio[i] < 0) continue;  // absent: the guest gets EBADF
    w->fds_[i] = describe(stdio[i], /*owned=*/false);
  }
  uint32_t next = 3;
  for (size_t i = 0; i < c.preopens.size(); ++i) {
    const Preopen& p = c.preopens[i];
    if (p.fd >= 0) {
      w->fds_[next++] = describe(p.fd, true);
      continue;
    }
    int fd = ::open(p.host_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      vm::Error e;
      e.kind = vm::Error::Kind::Io;
      e.message = "cannot open directory " + p.host_path + ": " + std::strerror(errno);
      // The host fds not yet in the table are ours too (the table's are closed by ~Wasi).
      for (size_t j = i + 1; j < c.preopens.size(); ++j)
        if (c.preopens[j].fd >= 0) ::close(c.preopens[j].fd);
      return e;
    }
    Fd f = describe(fd, true);
    f.preopen = p.guest_path;
    w->fds_[next++] = std::move(f);
  }
  return w;
}

Errno Wasi::get(uint32_t fd, uint64_t need, Fd*& out) {
  auto it = fds_.find(fd);
  if (it == fds_.end()) return Errno::ebadf;
  if ((it->second.base & need) != need) return Errno::enotcapable;
  out = &it->second;
  return Errno::success;
}

uint32_t Wasi::insert(Fd fd) {
  uint32_t n = 0;
  for (const auto& [num, f] : fds_) {
    if (num != n) break;
    ++n;
  }
  fds_[n] = std::move(fd);
  return n;
}

vm::Result<std::vector<vm::Extern>> Wasi::imports_for(vm::Store& store, const vm::Module& module) {
  std::vector<vm::Extern> out;
  for (const vm::Import& imp : module.imports) {
    auto e = import_for(store, module, imp);
    if (!e) return e.error();
    out.push_back(*e);
  }
  return out;
}

vm::Result<vm::Extern> Wasi::import_for(vm::Store& store, const vm::Module& module, const vm::Import& imp) {
  {
    const Row* row = nullptr;
    if (imp.module == kModuleName && imp.kind == vm::ExternKind::Func) {
      for (const Row& r : table())
        if (imp.field == r.info.name) row = &r;
    }
    if (!row) return link_error("unknown import " + imp.module + "." + imp.field);
    const vm::FuncType& want = module.types[imp.func_type];
    if (!(want == row->info.type)) {
      return link_error("incompatible import type for " + imp.module + "." + imp.field + ": module wants " +
                        want.to_string() + ", WASI defines " + row->info.type.to_string());
    }
    Handler h = row->handler;
    bool returns = !row->info.type.results.empty();
    // threads (wasi-threads): calls from several guest threads take turns on
    // the fd table, except the ones that may sleep (poll_oneoff: a thread's
    // sleep must not stop the others' I/O) or touch no shared state.
    bool locked = h != &Wasi::poll_oneoff && h != &Wasi::sched_yield && h != &Wasi::proc_exit &&
                  h != &Wasi::clock_time_get && h != &Wasi::random_get;
    vm::HostFn fn = [this, h, returns, locked](vm::HostContext& ctx, std::span<const vm::Value> args,
                                               std::span<vm::Value> results) -> vm::Trap {
      Call call{GuestMemory(ctx.memory), args, std::nullopt, &ctx, {}};
      Errno e;
      if (locked) {
        std::lock_guard lock(mu_);
        e = (this->*h)(call);
      } else {
        e = (this->*h)(call);
      }
      if (!call.trap.empty()) {
        vm::Trap t = vm::Trap::make(vm::TrapCode::HostError);
        t.message = call.trap;
        return t;
      }
      if (call.exit_code) {
        vm::Trap t = vm::Trap::make(vm::TrapCode::Exit);
        t.exit_code = *call.exit_code;
        return t;
      }
      if (returns) results[0] = vm::Value::from_i32(static_cast<uint16_t>(e));
      return {};
    };
    vm::Extern ext;
    ext.kind = vm::ExternKind::Func;
    ext.func = store.add_host_func(imp.module, imp.field, row->info.type, std::move(fn));
    return ext;
  }
}

// ---- args, environ --------------------------------------------------------

namespace {

// args_get / environ_get: an array of pointers into one buffer of NUL-terminated strings.
Errno write_strings(const GuestMemory& mem, const std::vector<std::string>& strs, uint32_t ptrs,
                    uint32_t buf) {
  uint64_t total = 0;
  for (const auto& s : strs) total += s.size() + 1;
  if (!mem.check(ptrs, uint64_t(strs.size()) * 4) || !mem.check(buf, total)) return Errno::efault;
  uint64_t at = buf;
  for (size_t i = 0; i < strs.size(); ++i) {
    mem.store<uint32_t>(ptrs + uint64_t(i) * 4, static_cast<uint32_t>(at));
    std::memcpy(mem.raw(at), strs[i].c_str(), strs[i].size() + 1);
    at += strs[i].size() + 1;
  }
  return Errno::success;
}

Errno write_sizes(const GuestMemory& mem, const std::vector<std::string>& strs, uint32_t count_ptr,
                  uint32_t size_ptr) {
  uint64_t total = 0;
  for (const auto& s : strs) total += s.size() + 1;
  if (total > UINT32_MAX) return Errno::eoverflow;
  if (!mem.check(count_ptr, 4) || !mem.check(size_ptr, 4)) return Errno::efault;
  mem.store<uint32_t>(count_ptr, static_cast<uint32_t>(strs.size()));
  mem.store<uint32_t>(size_ptr, static_cast<uint32_t>(total));
  return Errno::success;
}

}  // namespace

Errno Wasi::args_get(Call& c) { return write_strings(c.mem, config_.args, c.u32(0), c.u32(1)); }
Errno Wasi::args_sizes_get(Call& c) { return write_sizes(c.mem, config_.args, c.u32(0), c.u32(1)); }
Errno Wasi::environ_get(Call& c) { return write_strings(c.mem, config_.env, c.u32(0), c.u32(1)); }
Errno Wasi::environ_sizes_get(Call& c) { return write_sizes(c.mem, config_.env, c.u32(0), c.u32(1)); }

// ---- clocks, random, proc, sched -----------------------------------------

Errno Wasi::clock_res_get(Call& c) {
  if (det_) {
    uint64_t unused;
    if (!det_->now(c.u32(0), 0, unused)) return Errno::einval;
    return c.mem.store<uint64_t>(c.u32(1), 1) ? Errno::success : Errno::efault;
  }
  clockid_t id;
  if (!host_clock(c.u32(0), id)) return Errno::einval;
  timespec ts;
  if (clock_getres(id, &ts) != 0) return from_host_errno(errno);
  return c.mem.store<uint64_t>(c.u32(1), to_ns(ts)) ? Errno::success : Errno::efault;
}

Errno Wasi::clock_time_get(Call& c) {
  if (det_) {
    uint64_t ran, t;
    if (!executed(c, ran)) return Errno::success;
    if (!det_->now(c.u32(0), ran, t)) return Errno::einval;
    return c.mem.store<uint64_t>(c.u32(2), t) ? Errno::success : Errno::efault;
  }
  clockid_t id;
  if (!host_clock(c.u32(0), id)) return Errno::einval;
  // precision (arg 1) is a hint; the host clocks are already as precise as they get.
  timespec ts;
  if (clock_gettime(id, &ts) != 0) return from_host_errno(errno);
  return c.mem.store<uint64_t>(c.u32(2), to_ns(ts)) ? Errno::success : Errno::efault;
}

Errno Wasi::random_get(Call& c) {
  uint32_t buf = c.u32(0), len = c.u32(1);
  if (!c.mem.check(buf, len)) return Errno::efault;
  uint8_t* p = c.mem.raw(buf);
  if (det_) {
    det_->random_bytes(p, len);
    return Errno::success;
  }
  // getrandom(2) returns at most 32 MiB per call and may be interrupted.
  for (uint32_t done = 0; done < len;) {
    ssize_t n = getrandom(p + done, len - done, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return from_host_errno(errno);
    }
    done += static_cast<uint32_t>(n);
  }
  return Errno::success;
}

Errno Wasi::proc_exit(Call& c) {
  c.exit_code = static_cast<int>(c.u32(0));
  return Errno::success;
}

// Removed from later WASI snapshots; raising a signal in the host would hit
// the runtime rather than the guest.
Errno Wasi::proc_raise(Call&) { return Errno::enosys; }

Errno Wasi::sched_yield(Call&) {
  ::sched_yield();
  return Errno::success;
}

}  // namespace wzvm::wasi
