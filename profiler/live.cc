#include "profiler/live.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "profiler/clock.h"
#include "profiler/http.h"
#include "profiler/output.h"
#include "profiler/pprof.h"
#include "profiler/viewers.h"
#include "vm/runtime.h"

namespace wzvm::profiler {

namespace pb = perftools::profiles;

LiveProfiler::LiveProfiler(Profiler& profiler) : profiler_(profiler) { profiler_.profiling().sink = this; }

LiveProfiler::~LiveProfiler() {
  ticker_.stop();
  if (profiler_.profiling().sink == this) profiler_.profiling().sink = &profiler_;
}

void LiveProfiler::enable_windows() {
  profiler_.profiling().cpu = true;
  windows_ = true;
}

LiveProfiler::Stack LiveProfiler::stack_of(uint32_t node) const {
  Stack s;
  const vm::CallTree& tree = profiler_.tree();
  for (uint32_t n = node; n != vm::CallTree::kRoot; n = tree.node(n).parent)
    s.push_back({tree.node(n).func, tree.node(n).site});
  std::reverse(s.begin(), s.end());
  return s;
}

void LiveProfiler::on_cpu_sample(uint32_t node, const vm::FuncInst* func, int64_t offset, uint64_t cpu_ns) {
  // With only a window asking, the Profiler gets no samples: it was not
  // asked for a CPU profile, and its tables would grow for nothing.
  const bool window = cpu_open_.load(std::memory_order_relaxed);
  GuestState state;
  if (window) state = profiler_.guest_state(node, func);
  if (profiler_.options().cpu) {
    // Without a window (the usual run) the sample's Python stack is found
    // by its frames' words (Profiler::python_id), not read out as names.
    if (window) profiler_.add_cpu_sample(node, func, offset, cpu_ns, state);
    else profiler_.on_cpu_sample(node, func, offset, cpu_ns);
    samples_.fetch_add(1, std::memory_order_relaxed);
  }
  if (window) {
    std::lock_guard lock(mu_);
    if (cpu_.open) {
      if (!profiler_.options().cpu) samples_.fetch_add(1, std::memory_order_relaxed);
      if (!cpu_.started) {
        // This tick's weight is CPU time from before the window: it only
        // marks the start.
        cpu_.started = true;
        cpu_.start_unix_ns = unix_ns();
        cpu_.start_mono_ns = monotonic_ns();
      } else {
        cpu_.samples.push_back({node, func, offset, cpu_ns, std::move(state)});
        if (!cpu_.stacks.contains(node)) cpu_.stacks.emplace(node, stack_of(node));
      }
    }
  }
  if (instr_busy_.load(std::memory_order_relaxed)) {
    std::lock_guard lock(mu_);
    poll_instructions_locked();
  }
  if (mem_wanted_.load(std::memory_order_relaxed)) {
    std::lock_guard lock(mu_);
    if (mem_served_ < mem_requests_) take_memory_locked();
  }
}

void LiveProfiler::on_host_enter(uint32_t node) {
  (void)node;
  if (!windows_) return;
  std::lock_guard lock(mu_);
  if (mem_served_ < mem_requests_) take_memory_locked();
  paused_ = true;
}

void LiveProfiler::on_reentry(bool entering) {
  if (!windows_) return;
  std::lock_guard lock(mu_);
  paused_ = !entering;
}

bool LiveProfiler::graft(vm::Profiling& p, const vm::FuncInst* callee, uint32_t& node) {
  return profiler_.graft(p, callee, node);
}

void LiveProfiler::on_host_call(uint32_t node, uint64_t wall_ns) {
  if (windows_) {
    // Back from the host function: from here on the tables are the
    // interpreter's again (a server thread may have read them meanwhile).
    std::lock_guard lock(mu_);
    paused_ = false;
    if (mem_served_ < mem_requests_) take_memory_locked();
  }
  profiler_.on_host_call(node, wall_ns);
  if (cpu_open_.load(std::memory_order_relaxed)) {
    std::lock_guard lock(mu_);
    if (cpu_.open && cpu_.started) {
      HostCalls& h = cpu_.host[node];
      h.count++;
      h.wall_ns += wall_ns;
      if (!cpu_.stacks.contains(node)) cpu_.stacks.emplace(node, stack_of(node));
    }
  }
  // A guest blocked in a host call reaches no safe point: the end of the call
  // is where an instruction window waiting on it gets its counters.
  if (instr_busy_.load(std::memory_order_relaxed)) {
    std::lock_guard lock(mu_);
    poll_instructions_locked();
  }
}

void LiveProfiler::on_hooked_call(uint8_t hook, uint32_t node, const uint64_t* args, vm::MemInst* memory,
                                  const vm::FuncInst* func) {
  profiler_.on_hooked_call(hook, node, args, memory, func);
}

void LiveProfiler::on_hooked_return(uint8_t hook, uint32_t node, const uint64_t* results, vm::MemInst* memory,
                                    const vm::FuncInst* func) {
  profiler_.on_hooked_return(hook, node, results, memory, func);
}

void LiveProfiler::on_memory_grow(uint32_t node, const vm::FuncInst* func, int64_t offset,
                                  vm::MemInst* memory, uint64_t old_bytes) {
  profiler_.on_memory_grow(node, func, offset, memory, old_bytes);
}

void LiveProfiler::take_memory_locked() {
  auto snap = std::make_shared<MemSnapshot>();
  if (const MemoryProfiler* mem = profiler_.memory()) {
    snap->sites = mem->sites();
    snap->grows = mem->grows();
    for (const MemSite& s : snap->sites) {
      if (!snap->stacks.contains(s.node)) snap->stacks.emplace(s.node, stack_of(s.node));
      if (s.python && !snap->python.contains(s.python))
        snap->python.emplace(s.python, profiler_.python_groups(s.python));
    }
    for (const GrowEvent& g : snap->grows) {
      if (!snap->stacks.contains(g.node)) snap->stacks.emplace(g.node, stack_of(g.node));
      if (g.python && !snap->python.contains(g.python))
        snap->python.emplace(g.python, profiler_.python_groups(g.python));
    }
  }
  snap->start_unix_ns = profiler_.start_unix_ns();
  snap->duration_ns = monotonic_ns() - profiler_.start_mono_ns();
  mem_snapshot_ = std::move(snap);
  mem_served_ = mem_requests_;
  mem_wanted_.store(false, std::memory_order_relaxed);
  cv_.notify_all();
}

void LiveProfiler::poll_instructions_locked() {
  if (instr_.state == InstrState::WantStart) {
    instr_.baseline = profiler_.profiling().snapshot();
    instr_.state = InstrState::Running;
    cv_.notify_all();
  } else if (instr_.state == InstrState::WantEnd) {
    close_instructions_locked();
  }
}

void LiveProfiler::close_instructions_locked() {
  instr_.counts.clear();
  if (instr_.state == InstrState::Running || instr_.state == InstrState::WantEnd) {
    // Counts since the baseline, per stack and instruction. A trap takes back
    // the rest of the segment it cut short, so a counter can go down; a
    // window never reports less than nothing.
    uint32_t last = vm::CallTree::kRoot;
    Stack stack;
    for (const auto& c : profiler_.profiling().instruction_counts(&instr_.baseline)) {
      if (c.node != last) stack = stack_of(last = c.node);
      instr_.counts.push_back({stack, c.offset, c.count});
    }
  }
  instr_.state = InstrState::Done;
  cv_.notify_all();
}

void LiveProfiler::finish() {
  std::lock_guard lock(mu_);
  finished_ = true;
  if (instr_.state != InstrState::Idle && instr_.state != InstrState::Done) close_instructions_locked();
  if (mem_served_ < mem_requests_) take_memory_locked();
  cv_.notify_all();
}

void LiveProfiler::ticks(bool on) {
  // --profile=cpu runs the Profiler's own sampler for the whole run.
  if (profiler_.options().cpu) return;
  std::lock_guard lock(ticks_mu_);
  if (on && tick_users_++ == 0) {
    std::string why;
    // A failure leaves the window without samples; the profile says so by
    // being empty, which is all an HTTP client could be told anyway.
    ticker_.start(profiler_.profiling(), profiler_.options().cpu_hz, why);
  } else if (!on && --tick_users_ == 0) {
    ticker_.stop();
  }
}

std::unique_ptr<Profiler> LiveProfiler::replay_profiler(bool instructions) const {
  Options o = profiler_.options();
  o.cpu = !instructions;
  o.instructions = instructions;
  return std::make_unique<Profiler>(o);
}

namespace {
// Module names for a replay Profiler's mappings, as the real one has them.
void add_modules(const Profiler& from, Profiler& to, const std::vector<LiveFrame>& stack) {
  for (const auto& [f, site] : stack) {
    if (!f || f->is_host() || !f->instance || !f->instance->module) continue;
    const vm::Module* m = f->instance->module.get();
    if (to.module_path(m)) continue;
    if (const std::string* p = from.module_path(m)) to.add_module(m, *p);
  }
}
// The copy of a node of the live tree: the same functions at the same call sites.
uint32_t enter_stack(Profiler& p, const std::vector<LiveFrame>& stack) {
  uint32_t node = vm::CallTree::kRoot;
  for (const auto& [f, site] : stack) node = p.profiling().tree.child(node, f, site);
  return node;
}
}  // namespace

LiveProfiler::Status LiveProfiler::cpu_profile(double seconds, pb::Profile& out, std::string& why) {
  {
    std::lock_guard lock(mu_);
    if (finished_) {
      why = "the guest has finished";
      return Status::Finished;
    }
    if (cpu_.open) {
      why = "a CPU profile is already being taken; wzvm takes one at a time, try again when it is done";
      return Status::Busy;
    }
    cpu_ = CpuWindow{};
    cpu_.open = true;
    cpu_open_.store(true, std::memory_order_relaxed);
  }
  const uint64_t requested_mono = monotonic_ns();
  ticks(true);
  CpuWindow w;
  {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return finished_; });
    cpu_open_.store(false, std::memory_order_relaxed);
    w = std::move(cpu_);
    cpu_ = CpuWindow{};
  }
  ticks(false);
  // Build from the copy alone: nothing here reads the live call tree.
  std::unique_ptr<Profiler> p = replay_profiler(false);
  for (const auto& [node, stack] : w.stacks) add_modules(profiler_, *p, stack);
  std::unordered_map<uint32_t, uint32_t> nodes;  // live node -> replay node
  auto node_of = [&](uint32_t n) {
    auto [it, inserted] = nodes.try_emplace(n, 0);
    if (inserted) it->second = enter_stack(*p, w.stacks[n]);
    return it->second;
  };
  for (const CpuSample& s : w.samples)
    p->add_cpu_sample(node_of(s.node), s.func, s.offset, s.cpu_ns, s.state);
  for (const auto& [n, h] : w.host) {
    // The Profiler counts calls one by one; its total wall time is the sum.
    uint32_t rn = node_of(n);
    p->on_host_call(rn, h.wall_ns);
    for (uint64_t i = 1; i < h.count; ++i) p->on_host_call(rn, 0);
  }
  out = build_cpu_profile(*p);
  const uint64_t start_mono = w.started ? w.start_mono_ns : requested_mono;
  out.set_time_nanos(
      static_cast<int64_t>(w.started ? w.start_unix_ns : unix_ns() - (monotonic_ns() - requested_mono)));
  out.set_duration_nanos(static_cast<int64_t>(monotonic_ns() - start_mono));
  return Status::Ok;
}

LiveProfiler::Status LiveProfiler::instructions_profile(double seconds, pb::Profile& out, std::string& why) {
  if (!profiler_.options().instructions) {
    why =
        "instruction counting is off: start wzvm with --profile=instructions as well (counting costs up to "
        "20% of the guest's speed, so --pprof-addr alone does not turn it on)";
    return Status::Unavailable;
  }
  {
    std::lock_guard lock(mu_);
    if (finished_) {
      why = "the guest has finished";
      return Status::Finished;
    }
    if (instr_.state != InstrState::Idle) {
      why =
          "an instructions profile is already being taken; wzvm takes one at a time, try again when it is "
          "done";
      return Status::Busy;
    }
    instr_ = InstrWindow{};
    instr_.state = InstrState::WantStart;
    instr_busy_.store(true, std::memory_order_relaxed);
  }
  ticks(true);
  InstrWindow w;
  {
    std::unique_lock lock(mu_);
    // The interpreter takes the baseline at its next tick or host call
    // return; the window's N seconds start then.
    cv_.wait(lock, [&] { return instr_.state != InstrState::WantStart; });
    cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return finished_; });
    if (instr_.state == InstrState::Running) instr_.state = InstrState::WantEnd;
    cv_.wait(lock, [&] { return instr_.state == InstrState::Done; });
    w = std::move(instr_);
    instr_ = InstrWindow{};
    instr_busy_.store(false, std::memory_order_relaxed);
  }
  ticks(false);
  std::unique_ptr<Profiler> p = replay_profiler(true);
  for (const auto& c : w.counts) add_modules(profiler_, *p, c.stack);
  std::vector<vm::Profiling::InstructionCount> counts;
  for (const auto& c : w.counts) counts.push_back({enter_stack(*p, c.stack), c.offset, c.count});
  // Sorted as instruction_counts() is (stacks entered in order keep it).
  std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
    return a.node != b.node ? a.node < b.node : a.offset < b.offset;
  });
  p->set_instruction_counts(std::move(counts));
  out = build_instructions_profile(*p);
  return Status::Ok;
}

LiveProfiler::Status LiveProfiler::memory_profile(bool allocs, pb::Profile& out, std::string& why) {
  if (!profiler_.memory()) {
    why =
        "memory profiling is off: start wzvm with --profile=mem as well (hooking the allocators costs "
        "allocation-heavy guests up to a third of their speed, so --pprof-addr alone does not turn it on)";
    return Status::Unavailable;
  }
  std::shared_ptr<const MemSnapshot> snap;
  {
    std::unique_lock lock(mu_);
    if (finished_) {
      why = "the guest has finished";
      return Status::Finished;
    }
    const uint64_t mine = ++mem_requests_;
    if (paused_) {
      // Inside a host call (perhaps blocked for good, like a server in
      // poll_oneoff): the interpreter cannot touch the tables before it
      // takes mu_, which we hold.
      take_memory_locked();
    } else if (mem_served_ < mine) {
      mem_wanted_.store(true, std::memory_order_relaxed);
      lock.unlock();
      ticks(true);  // so that a guest in a long computation reaches a safe point soon
      lock.lock();
      cv_.wait(lock, [&] { return mem_served_ >= mine; });
      lock.unlock();
      ticks(false);
      lock.lock();
    }
    snap = mem_snapshot_;
  }
  // Replayed into a Profiler of its own: nothing here reads the live tables.
  Options o = profiler_.options();
  o.cpu = o.instructions = false;
  Profiler p(o);
  for (const auto& [node, stack] : snap->stacks) add_modules(profiler_, p, stack);
  for (MemSite s : snap->sites) {
    s.node = enter_stack(p, snap->stacks.at(s.node));
    if (s.python) s.python = p.intern_python(snap->python.at(s.python));
    p.memory()->add_site(s);
  }
  for (GrowEvent g : snap->grows) {
    g.node = enter_stack(p, snap->stacks.at(g.node));
    if (g.python) g.python = p.intern_python(snap->python.at(g.python));
    p.memory()->on_grow(g);
  }
  out = build_memory_profile(p, allocs ? "alloc_space" : "inuse_space");
  out.set_time_nanos(static_cast<int64_t>(snap->start_unix_ns));
  out.set_duration_nanos(static_cast<int64_t>(snap->duration_ns));
  return Status::Ok;
}

// ---- HTTP ----

struct PprofServer::Impl {
  std::unique_ptr<HttpServer> server;
};

PprofServer::PprofServer(LiveProfiler& live) : live_(live) {}
PprofServer::~PprofServer() { stop(); }

namespace {

constexpr const char* kIndex = R"(<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>/debug/pprof/</title></head>
<body>
<h1>/debug/pprof/ (wzvm)</h1>
<p>Profiles of the running guest, in pprof's format: <code>go tool pprof URL</code>.
Add <code>?debug=1</code> for a text summary.</p>
<table>
<tr><td><a href="profile?seconds=30">profile</a></td>
<td>CPU profile of the guest for <code>seconds</code> (default 30): guest CPU time, and host-call wall time in its own sample type</td></tr>
<tr><td><a href="instructions?seconds=30">instructions</a></td>
<td>Exact count of executed wasm instructions per call stack for <code>seconds</code> (needs wzvm started with --profile=instructions)</td></tr>
<tr><td><a href="heap">heap</a></td><td>Memory in use, by allocating call stack, and memory.grow (needs wzvm started with --profile=mem)</td></tr>
<tr><td><a href="allocs">allocs</a></td><td>All allocations so far, by call stack: the heap profile with alloc_space as its default (needs --profile=mem)</td></tr>
</table>
</body></html>
)";

void text_error(HttpResponse& res, int status, const std::string& msg) {
  res.status = status;
  res.headers.emplace_back("X-Content-Type-Options", "nosniff");
  res.body = msg + "\n";
  res.content_type = "text/plain; charset=utf-8";
}

// seconds=N as Go's handler reads it: a positive number, default 30.
bool parse_seconds(const HttpRequest& req, double& seconds, std::string& why) {
  seconds = 30;
  if (!req.has("seconds")) return true;
  const std::string v = req.param("seconds");
  char* end = nullptr;
  seconds = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(seconds) || seconds <= 0 || seconds > 86400) {
    why = "bad seconds '" + v + "': expected a number of seconds, more than 0 and at most 86400";
    return false;
  }
  return true;
}

void send_profile(const HttpRequest& req, HttpResponse& res, const pb::Profile& p, const char* name) {
  if (req.has("debug") && req.param("debug") != "0") {
    res.body = report_text(p, name);
    res.content_type = "text/plain; charset=utf-8";
    return;
  }
  std::string raw, gz, why;
  if (!p.SerializeToString(&raw) || !gzip(raw, gz, why)) {
    text_error(res, 500, "cannot encode the profile: " + why);
    return;
  }
  res.headers.emplace_back("Content-Disposition", std::string("attachment; filename=\"") + name + "\"");
  res.body = std::move(gz);
  res.content_type = "application/octet-stream";
}

void send_status(HttpResponse& res, LiveProfiler::Status st, const std::string& why) {
  switch (st) {
    case LiveProfiler::Status::Busy:
      text_error(res, 409, why);
      break;  // Conflict: one at a time
    case LiveProfiler::Status::Unavailable:
      text_error(res, 501, why);
      break;  // not enabled in this run
    case LiveProfiler::Status::Finished:
      text_error(res, 503, why);
      break;  // shutting down
    case LiveProfiler::Status::Ok:
      break;
  }
}

}  // namespace

bool PprofServer::start(const std::string& addr, std::string& why) {
  // HOST:PORT, [V6]:PORT, :PORT (loopback: a profiling endpoint is not
  // exposed to the network unless the user names an address).
  std::string host, port_s;
  if (auto colon = addr.rfind(':'); colon != std::string::npos) {
    host = addr.substr(0, colon);
    port_s = addr.substr(colon + 1);
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "127.0.0.1";
  char* end = nullptr;
  long port = std::strtol(port_s.c_str(), &end, 10);
  if (port_s.empty() || *end != '\0' || port < 0 || port > 65535) {
    why = "--pprof-addr " + addr + ": expected HOST:PORT (e.g. 127.0.0.1:6060, or port 0 for any free port)";
    return false;
  }
  impl_ = std::make_unique<Impl>();
  impl_->server = make_http_server(why);
  if (!impl_->server) {
    why = "--pprof-addr: " + why;
    impl_.reset();
    return false;
  }
  HttpServer& s = *impl_->server;
  s.get("/debug/pprof/?", [](const HttpRequest&, HttpResponse& res) {
    res.body = kIndex;
    res.content_type = "text/html; charset=utf-8";
  });
  s.get("/debug/pprof/profile", [this](const HttpRequest& req, HttpResponse& res) {
    double seconds;
    std::string why;
    if (!parse_seconds(req, seconds, why)) return text_error(res, 400, why);
    pb::Profile p;
    LiveProfiler::Status st = live_.cpu_profile(seconds, p, why);
    if (st != LiveProfiler::Status::Ok) return send_status(res, st, why);
    send_profile(req, res, p, "profile");
  });
  s.get("/debug/pprof/instructions", [this](const HttpRequest& req, HttpResponse& res) {
    double seconds;
    std::string why;
    if (!parse_seconds(req, seconds, why)) return text_error(res, 400, why);
    pb::Profile p;
    LiveProfiler::Status st = live_.instructions_profile(seconds, p, why);
    if (st != LiveProfiler::Status::Ok) return send_status(res, st, why);
    send_profile(req, res, p, "instructions");
  });
  // Go serves one profile under both names; only the default sample type differs.
  for (bool allocs : {false, true}) {
    s.get(allocs ? "/debug/pprof/allocs" : "/debug/pprof/heap", [this, allocs](const HttpRequest& req,
                                                                               HttpResponse& res) {
      if (req.has("seconds"))
        return text_error(res, 400,
                          "seconds= (a delta profile) is not supported for heap and allocs: wzvm serves the "
                          "profile so far; take two and compare them with go tool pprof -diff_base");
      pb::Profile p;
      std::string why;
      LiveProfiler::Status st = live_.memory_profile(allocs, p, why);
      if (st != LiveProfiler::Status::Ok) return send_status(res, st, why);
      send_profile(req, res, p, allocs ? "allocs" : "heap");
    });
  }
  s.get("/debug/pprof/(.*)", [](const HttpRequest& req, HttpResponse& res) {
    text_error(res, 404, "unknown profile " + req.matches.at(1) + " (see /debug/pprof/)");
  });
  int bound = s.bind(host, static_cast<int>(port));
  if (bound < 0) {
    why =
        "--pprof-addr " + addr + ": cannot listen there (address in use, or not an address of this machine)";
    impl_.reset();
    return false;
  }
  url_ = "http://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(bound);
  s.serve();
  return true;
}

void PprofServer::stop() {
  if (!impl_) return;
  impl_->server->stop();
  impl_.reset();
}

}  // namespace wzvm::profiler
