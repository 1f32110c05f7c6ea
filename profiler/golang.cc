#include "profiler/golang.h"

#include <sys/mman.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <optional>
#include <string>

namespace wzvm::profiler {

namespace {

constexpr uint32_t kNone = UINT32_MAX;
constexpr uint64_t kPcFBase = 0x1000;                               // PC_F of defined function 0
constexpr uint8_t kMagic[] = {0xF1, 0xFF, 0xFF, 0xFF, 0x00, 0x00};  // pcHeader, Go 1.20+
// runtime/symtab.go, internal/abi: the pcdata / funcdata slots read here.
constexpr uint32_t kPcdataInlTreeIndex = 2;
constexpr uint32_t kFuncdataInlTree = 3;
constexpr uint8_t kFlagTopFrame = 1, kFlagSPWrite = 2;  // abi.FuncFlag
constexpr uint32_t kFuncFixed = 44;                     // _func without its pcdata/funcdata arrays
constexpr uint32_t kInlinedCall = 16;                   // abi.InlinedCall
constexpr int kMaxWalk = 100000;                        // frames; a deeper Go stack is cut
// moduledata (runtime/symtab.go), in 8-byte words: the fields checked or used.
enum Md : uint32_t {
  kPcHeader = 0,
  kFuncnametab = 1,
  kCutab = 4,
  kFiletab = 7,
  kPctab = 10,
  kPclntable = 13,
  kFtab = 16,
  kGofunc = 40,
  kMdWords = 41
};

// The immediates of the instructions Go's compiler emits (wasm 1.0, sign
// extension, saturating conversions, bulk memory): enough to find
// instruction boundaries. Returns false on anything else. In line in
// map_regions' two loops, which walk every instruction of each function a
// profile saw: called, it was 54% of their instructions (callgrind,
// strconv's Itoa tests, --profile=instructions).
__attribute__((always_inline)) inline bool skip_instruction(const uint8_t*& p, const uint8_t* end,
                                                            uint8_t& op) {
  auto u = [&](uint64_t* out = nullptr) {
    uint64_t v = 0;
    for (int shift = 0; p < end && shift < 70; shift += 7) {
      uint8_t b = *p++;
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) {
        if (out) *out = v;
        return true;
      }
    }
    return false;
  };
  if (p >= end) return false;
  op = *p++;
  switch (op) {
    case 0x02:
    case 0x03:
    case 0x04: {  // block, loop, if: blocktype
      if (p >= end) return false;
      uint8_t b = *p;
      if (b == 0x40 || (b >= 0x7B && b <= 0x7F) || b == 0x70 || b == 0x6F) return ++p, true;
      return u();
    }
    case 0x0C:
    case 0x0D:
    case 0x10:
    case 0x12:
    case 0x20:
    case 0x21:
    case 0x22:
    case 0x23:
    case 0x24:
    case 0x25:
    case 0x26:
    case 0xD2:
    case 0x3F:
    case 0x40:
    case 0x41:
    case 0x42:
      return u();
    case 0x11:
    case 0x13:
      return u() && u();
    case 0x0E: {
      uint64_t n = 0;
      if (!u(&n)) return false;
      for (uint64_t i = 0; i <= n; ++i)
        if (!u()) return false;
      return true;
    }
    case 0x1C: {
      uint64_t n = 0;
      if (!u(&n) || uint64_t(end - p) < n) return false;
      p += n;
      return true;
    }
    case 0x43:
      if (end - p < 4) return false;
      p += 4;
      return true;
    case 0x44:
      if (end - p < 8) return false;
      p += 8;
      return true;
    case 0xD0:
      if (p >= end) return false;
      ++p;
      return true;
    case 0xFC: {
      uint64_t sub = 0;
      if (!u(&sub)) return false;
      if (sub <= 7) return true;
      if (sub == 8 || sub == 10 || sub == 12 || sub == 14) return u() && u();
      if (sub <= 17) return u();
      return false;
    }
    default:
      if (op >= 0x28 && op <= 0x3E) {  // loads and stores: memarg
        uint64_t align = 0;
        if (!u(&align)) return false;
        if ((align & 0x40) && !u()) return false;  // multi-memory index
        return u();
      }
      return op <= 0x01 || op == 0x05 || op == 0x0B || op == 0x0F || op == 0x1A || op == 0x1B ||
             (op >= 0x45 && op <= 0xC4) || op == 0xD1;
  }
}

}  // namespace

// Linear memory as the data segments initialise it (Go's tables are
// constants, written by active segments at constant offsets).
struct GoModule::Image {
  // Mapped with its pages faulted in by one system call (MAP_POPULATE):
  // load() writes every byte of it, and a fault per 4 KiB page was most of
  // what `--profile=cpu` added to a short Go run (json's tests: 1,440 of
  // the 2,100 faults more than a plain run; perf). load() zeroes the gaps
  // between segments itself, as it did in memory from new[].
  struct Bytes {
    struct Unmap {
      size_t n;
      void operator()(uint8_t* p) const { munmap(p, n); }
    };
    std::unique_ptr<uint8_t[], Unmap> p{nullptr, Unmap{0}};
    size_t n = 0;
    bool allocate(size_t size) {
      n = size;
      const size_t mapped = std::max<size_t>(size, 1);  // never null, as new[] was
      void* m =
          mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
      if (m == MAP_FAILED) return false;
      p = std::unique_ptr<uint8_t[], Unmap>(static_cast<uint8_t*>(m), Unmap{mapped});
      return true;
    }
    const uint8_t* data() const { return p.get(); }
    uint8_t* data() { return p.get(); }
    size_t size() const { return n; }
    uint8_t operator[](size_t i) const { return p[i]; }
  } bytes;
  bool read(uint64_t addr, void* out, size_t n) const {
    if (addr > bytes.size() || n > bytes.size() - addr) return false;
    std::memcpy(out, bytes.data() + addr, n);
    return true;
  }
  template <class T>
  bool get(uint64_t addr, T& out) const {
    return read(addr, &out, sizeof out);
  }
  template <class T>
  T at(uint64_t addr) const {
    T v{};
    get(addr, v);
    return v;
  }
};

struct GoModule::Func {
  uint64_t entry = 0;
  uint64_t addr = 0;  // of its _func
  std::string_view name;
  uint32_t pcsp = 0, pcfile = 0, pcln = 0, npcdata = 0, cu_offset = 0;
  int32_t start_line = 0;
  uint8_t flag = 0, nfuncdata = 0;
  // Resume points: where each starts in the module, the first PC_B of each,
  // and the offset of the call that ends it (kNone: none).
  std::vector<uint32_t> region_start, region_pc, region_call;
  uint32_t body_offset = 0;
};

GoModule::~GoModule() = default;

size_t GoModule::num_functions() const { return funcs_.size(); }

std::unique_ptr<GoModule> GoModule::read(const vm::Module& module, std::string& note) {
  bool is_go = false;
  for (const vm::CustomSection& c : module.customs) is_go |= c.name == "go:buildid";
  if (!is_go) return nullptr;
  std::unique_ptr<GoModule> g(new GoModule());
  std::string why;
  if (!g->load(module, why)) {
    note = "a Go module, but its runtime tables could not be read (" + why + "): profiled at the wasm level";
    return nullptr;
  }
  return g;
}

bool GoModule::load(const vm::Module& module, std::string& why) {
  image_ = std::make_unique<Image>();
  Image::Bytes& mem = image_->bytes;
  // Sized first: Go splits its data at runs of zeros (100,000 segments for
  // encoding/json's tests), and growing the image segment by segment copied
  // it again and again.
  auto placed = [](const vm::DataSegment& d, uint64_t& at) {
    if (d.mode != vm::SegmentMode::Active || d.memory != 0 || d.offset.code.size() != 1 ||
        d.offset.code[0].op != vm::ConstInstr::Op::I32Const)
      return false;
    at = static_cast<uint32_t>(d.offset.code[0].value);
    return at + d.size <= (uint64_t{1} << 32);
  };
  uint64_t size = 0, at = 0;
  // Go writes its segments in rising, disjoint order: then each gap is
  // zeroed once; any other order (overlaps, where the later segment wins)
  // zeroes everything first and copies in module order.
  bool ascending = true;
  for (const vm::DataSegment& d : module.datas) {
    if (!placed(d, at)) continue;
    ascending &= at >= size;
    size = std::max<uint64_t>(size, at + d.size);
  }
  if (!mem.allocate(size)) {
    why = "no memory for an image of " + std::to_string(size) + " bytes of data";
    return false;
  }
  uint64_t filled = 0;
  if (!ascending) std::memset(mem.data(), 0, size);
  for (const vm::DataSegment& d : module.datas) {
    if (!placed(d, at)) continue;
    if (ascending) std::memset(mem.data() + filled, 0, at - filled);
    std::memcpy(mem.data() + at, module.bytes.data() + d.data_offset, d.size);
    filled = at + d.size;
  }
  if (ascending) std::memset(mem.data() + filled, 0, size - filled);
  const Image& im = *image_;
  const size_t nfunc = module.functions.size();

  // The image is searched from its end: Go's linker places pclntab and the
  // text of strings in read-only data, and what points at them
  // (runtime.firstmoduledata, runtime.buildVersion) and class_to_size in
  // the writable data after it, in the last 5% of json's tests' 5.9 MB.
  // Two forward passes over the whole image (pcHeader's magic, then the
  // words pointing at it and at the version text) were 26 M instructions
  // of every profiled run of json's tests, and more before (118 M). Each
  // step is one unchecked 8-byte load; word_at(i) reads 8 bytes at i, which
  // the loops keep inside the image.
  auto word_at = [&](size_t i) {
    uint64_t v;
    std::memcpy(&v, mem.data() + i, 8);
    return v;
  };
  uint64_t magic_word = 0;
  std::memcpy(&magic_word, kMagic, sizeof kMagic);
  constexpr uint64_t kMagicMask = (uint64_t{1} << (8 * sizeof kMagic)) - 1;
  // runtime.class_to_size: uint16s 0, 8, 16, 24, 32, 48, ... rising to
  // 32768 (the largest small object). Found by its start, read to its end.
  static constexpr uint16_t kStart[] = {0, 8, 16, 24, 32, 48, 64, 80, 96, 112, 128};
  uint64_t class_word = 0;
  std::memcpy(&class_word, kStart, 8);
  auto read_table = [&](size_t i) {
    if (i + sizeof kStart > mem.size() || word_at(i) != class_word ||
        std::memcmp(mem.data() + i, kStart, sizeof kStart) != 0)
      return;
    std::vector<uint16_t> t;
    for (size_t j = i; j + 2 <= mem.size() && t.size() < 256; j += 2) {
      uint16_t v = im.at<uint16_t>(j);
      if (!t.empty() && v <= t.back()) break;
      t.push_back(v);
      if (v == 32768) {
        size_classes_ = std::move(t);
        break;
      }
    }
  };
  // moduledata at m, pointing at a pcHeader: magic, pads, minLC, ptrSize,
  // then 8-byte words nfunc, nfiles, textStart, and the offsets of
  // funcnametab, cutab, filetab, pctab and pclntab from the header (words 4
  // to 8), which moduledata's slices repeat. w is m's first word.
  auto is_moduledata = [&](size_t m, uint64_t h) {
    // h is any word of the data: h + 72 must not wrap (a word of -8, common
    // in Go's data, passed and read before the image).
    if (h % 8 || h > mem.size() || mem.size() - h < 72 || m + kMdWords * 8 > mem.size()) return false;
    if ((word_at(h) & kMagicMask) != magic_word || mem[h + 6] != 1 || mem[h + 7] != 8 ||
        word_at(h + 8) != nfunc)
      return false;
    auto word = [&](uint32_t k) { return word_at(m + 8ull * k); };
    auto off = [&](uint32_t k) { return h + word_at(h + 8ull * k); };
    return word(kFuncnametab) == off(4) && word(kCutab) == off(5) && word(kFiletab) == off(6) &&
           word(kPctab) == off(7) && word(kPclntable) == off(8) && word(kFtab) == off(8) &&
           word(kFtab + 1) == nfunc + 1;
  };
  // runtime.buildVersion at m: a Go string {ptr, len} whose text is "go1.N[.M]".
  auto version_at = [&](size_t m, uint64_t ptr) {
    const uint64_t len = word_at(m + 8);
    if (len < 5 || len > 32 || len > mem.size() || ptr > mem.size() - len ||
        std::memcmp(mem.data() + ptr, "go1.", 4) != 0)
      return false;
    for (uint64_t k = 4; k < len; ++k)
      if (!std::isdigit(mem[ptr + k]) && mem[ptr + k] != '.') return false;
    if (mem[ptr + len - 1] == '.') return false;
    version_.assign(reinterpret_cast<const char*>(mem.data() + ptr), len);
    return true;
  };
  std::optional<uint64_t> found;
  const size_t top =
      mem.size() < 16 ? 0 : (mem.size() - 16) / 8 * 8 + 8;  // one past the last word with a word after it
  for (size_t m = top; m > 0 && (!found || version_.empty() || size_classes_.empty());) {
    m -= 8;
    const uint64_t w = word_at(m);
    if (!found && is_moduledata(m, w)) {
      found = m;
      ph_ = w;
    }
    if (version_.empty()) version_at(m, w);
    if (__builtin_expect(w == class_word, 0) && size_classes_.empty()) read_table(m);
  }
  if (!found) {
    why = "no pclntab (Go 1.20+ format) with a moduledata pointing at it";
    return false;
  }
  // Go's linker aligns a table this size to 8 bytes at least; every 2-byte
  // position is tried only if no aligned one starts it.
  for (size_t i = 0; i + sizeof kStart <= mem.size() && size_classes_.empty(); i += 2) read_table(i);
  auto word = [&](uint32_t w) { return im.at<uint64_t>(*found + 8ull * w); };
  funcnametab_ = word(kFuncnametab);
  cutab_ = word(kCutab);
  filetab_ = word(kFiletab);
  pctab_ = word(kPctab);
  pctab_size_ = word(kPctab + 1);
  pclntab_ = word(kPclntable);
  gofunc_ = word(kGofunc);
  const uint64_t text_start = im.at<uint64_t>(ph_ + 24);

  funcs_.resize(nfunc);
  for (uint32_t k = 0; k < nfunc; ++k) {
    uint32_t entry_off = im.at<uint32_t>(pclntab_ + 8ull * k),
             func_off = im.at<uint32_t>(pclntab_ + 8ull * k + 4);
    Func& f = funcs_[k];
    f.entry = text_start + entry_off;
    if (f.entry != (kPcFBase + k) << 16) {
      why = "function " + std::to_string(k) + " has entry PC " + std::to_string(f.entry) +
            ", not (0x1000 + " + std::to_string(k) + ") << 16";
      return false;
    }
    f.addr = pclntab_ + func_off;
    uint8_t fixed[kFuncFixed];
    if (!im.read(f.addr, fixed, sizeof fixed)) {
      why = "function " + std::to_string(k) + "'s _func lies outside the data";
      return false;
    }
    auto u32 = [&](size_t o) {
      uint32_t v;
      std::memcpy(&v, fixed + o, 4);
      return v;
    };
    if (u32(0) != entry_off) {
      why = "function " + std::to_string(k) + "'s _func disagrees with the function table";
      return false;
    }
    f.name = cstring(funcnametab_ + u32(4));
    f.pcsp = u32(16);
    f.pcfile = u32(20);
    f.pcln = u32(24);
    f.npcdata = u32(28);
    f.cu_offset = u32(32);
    f.start_line = static_cast<int32_t>(u32(36));
    f.flag = fixed[41];
    f.nfuncdata = fixed[43];
    f.body_offset = module.functions[k].body_offset;
  }
  // Resume points are found per function when first needed: walking every
  // body here was a third of reading the tables (json's 7,600 functions,
  // 8.8 MB of code), and a profile needs the functions it saw.
  module_ = &module;
  mapped_ = std::make_unique<std::atomic<bool>[]>(nfunc);

  // g.goid: after stack, stackguard0/1, _panic, _defer, m, sched (a gobuf of
  // 7 words at 56), syscallsp, syscallpc, [syscallbp, new in 1.23],
  // stktopsp, param and atomicstatus (4 bytes, padded): runtime/runtime2.go.
  if (version_.rfind("go1.21", 0) == 0 || version_.rfind("go1.22", 0) == 0) goid_offset_ = 152;
  else if (version_.rfind("go1.23", 0) == 0) goid_offset_ = 160;
  return true;
}

const GoModule::Func& GoModule::regions(uint32_t k) const {
  if (!mapped_[k].load(std::memory_order_acquire)) {
    std::lock_guard lock(map_mu_);
    if (!mapped_[k].load(std::memory_order_relaxed)) {
      map_regions(k);
      mapped_[k].store(true, std::memory_order_release);
    }
  }
  return funcs_[k];
}

// Finds function k's resume points from its code (see golang.h). A body of
// another shape keeps one region at PC_B 0, so its samples still land in the
// right function, at its entry line.
void GoModule::map_regions(uint32_t k) const {
  const vm::Module& module = *module_;
  Func& f = const_cast<Func&>(funcs_[k]);  // only its regions, written once under map_mu_ (regions())
  const vm::Function& fn = module.functions[k];
  const uint8_t* p = module.bytes.data() + fn.body_offset;
  const uint8_t* end = module.bytes.data() + fn.body_end;
  auto one_region = [&] {
    f.region_start = {fn.body_offset};
    f.region_pc = {0};
    f.region_call = {kNone};
  };
  uint8_t op = 0;
  uint32_t open = 0;  // leading block / loop
  const uint8_t* q = p;
  // Functions with the PC_B parameter first copy the SP global into their
  // local SP cache: global.get 0; local.set 1.
  if (end - q >= 4 && q[0] == 0x23 && q[1] == 0x00 && q[2] == 0x21 && q[3] == 0x01) q += 4;
  for (;;) {
    const uint8_t* at = q;
    if (!skip_instruction(q, end, op)) return one_region();
    if (op == 0x02 || op == 0x03) {
      ++open;
      continue;
    }
    q = at;
    break;
  }
  // local.get 0; br_table
  if (q + 2 > end || q[0] != 0x20 || q[1] != 0x00) return one_region();
  q += 2;
  if (q >= end || *q != 0x0E) return one_region();
  ++q;
  std::vector<uint32_t> labels;
  {
    uint64_t n = 0;
    auto u = [&](uint64_t& v) {
      v = 0;
      for (int shift = 0; q < end && shift < 35; shift += 7) {
        uint8_t b = *q++;
        v |= uint64_t(b & 0x7F) << shift;
        if (!(b & 0x80)) return true;
      }
      return false;
    };
    if (!u(n) || n > 0x10000) return one_region();
    for (uint64_t i = 0; i <= n; ++i) {
      uint64_t l;
      if (!u(l)) return one_region();
      labels.push_back(static_cast<uint32_t>(l));
    }
  }
  uint32_t nblocks = *std::max_element(labels.begin(), labels.end()) + 1;
  if (nblocks > open) return one_region();
  // The first PC_B of each resume point.
  std::vector<uint32_t> first(nblocks, kNone);
  for (uint32_t pc = 0; pc + 1 < labels.size(); ++pc)
    if (first[labels[pc]] == kNone) first[labels[pc]] = pc;
  // Walk the body: each `end` closing the innermost open resume block starts
  // the next resume point.
  uint32_t depth = open, resume_depth = open, region = 0;
  const uint32_t last_resume_depth = open - nblocks + 1;
  uint32_t last_call = kNone;
  f.region_start.clear();
  f.region_start.reserve(nblocks);
  f.region_pc.reserve(nblocks);
  f.region_call.reserve(nblocks);
  while (q < end) {
    const uint8_t* at = q;
    if (!skip_instruction(q, end, op)) return one_region();
    uint32_t off = static_cast<uint32_t>(at - module.bytes.data());
    switch (op) {
      case 0x02:
      case 0x03:
      case 0x04:
        ++depth;
        break;
      case 0x10:
      case 0x11:
        last_call = off;
        break;
      case 0x0B:
        if (depth == resume_depth && resume_depth >= last_resume_depth && region < nblocks) {
          if (!f.region_start.empty()) f.region_call.push_back(last_call);
          f.region_start.push_back(static_cast<uint32_t>(q - module.bytes.data()));
          f.region_pc.push_back(first[region] == kNone ? (region ? f.region_pc.back() : 0) : first[region]);
          ++region;
          --resume_depth;
          last_call = kNone;
        }
        if (depth == 0) break;  // the body's own end
        --depth;
        break;
      default:
        break;
    }
  }
  if (f.region_start.empty()) {
    one_region();
    return;
  }
  f.region_call.push_back(last_call);
}

std::string_view GoModule::cstring(uint64_t addr) const {
  const auto& mem = image_->bytes;
  if (addr >= mem.size()) return {};
  const void* z = std::memchr(mem.data() + addr, 0, mem.size() - addr);
  size_t n = z ? static_cast<const uint8_t*>(z) - (mem.data() + addr) : 0;
  return {reinterpret_cast<const char*>(mem.data() + addr), n};
}

// runtime.pcvalue: the value of pc-value table `table_off` (in pctab) at `pc`
// of the function starting at `entry`; -1 when the table has none.
int32_t GoModule::pcvalue(uint32_t table_off, uint64_t entry, uint64_t pc) const {
  if (table_off == 0 || table_off >= pctab_size_) return -1;
  const auto& mem = image_->bytes;
  uint64_t p = pctab_ + table_off;
  const uint64_t end = std::min<uint64_t>(mem.size(), pctab_ + pctab_size_);
  auto varint = [&](uint32_t& v) {
    v = 0;
    for (int shift = 0; p < end && shift < 35; shift += 7) {
      uint8_t b = mem[p++];
      v |= uint32_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  };
  int32_t val = -1;
  uint64_t cur = entry;
  for (bool first = true;; first = false) {
    if (p >= end) return -1;
    uint32_t uvdelta;
    if (mem[p] == 0 && !first) return -1;
    if (!varint(uvdelta)) return -1;
    val += static_cast<int32_t>(-(uvdelta & 1) ^ (uvdelta >> 1));
    uint32_t pcdelta;
    if (!varint(pcdelta)) return -1;
    cur += pcdelta;  // PCQuantum is 1 on wasm (pcHeader.minLC, checked)
    if (pc < cur) return val;
  }
}

std::string_view GoModule::file_name(const Func& f, int32_t fileno) const {
  if (fileno < 0) return {};
  uint32_t off;
  if (!image_->get(cutab_ + 4ull * (uint64_t(f.cu_offset) + uint64_t(fileno)), off) || off == kNone)
    return {};
  return cstring(filetab_ + off);
}

bool GoModule::func_of(uint64_t pc, uint32_t& func) const {
  uint64_t pcf = pc >> 16;
  if (pcf < kPcFBase || pcf - kPcFBase >= funcs_.size()) return false;
  func = static_cast<uint32_t>(pcf - kPcFBase);
  return true;
}

uint64_t GoModule::pc_at(uint32_t func, uint32_t offset) const {
  if (func >= funcs_.size()) return 0;
  const Func& f = regions(func);
  auto it = std::upper_bound(f.region_start.begin(), f.region_start.end(), offset);
  size_t r = it == f.region_start.begin() ? 0 : size_t(it - f.region_start.begin()) - 1;
  uint64_t pcb = f.region_pc[r];
  // The call that ends a resume point runs at the PC just before the next one.
  if (offset == f.region_call[r] && r + 1 < f.region_pc.size() && f.region_pc[r + 1] > 0)
    pcb = f.region_pc[r + 1] - 1;
  return f.entry | pcb;
}

uint32_t GoModule::representative_offset(uint32_t func, uint32_t offset) const {
  if (func >= funcs_.size()) return offset;
  const Func& f = regions(func);
  auto it = std::upper_bound(f.region_start.begin(), f.region_start.end(), offset);
  if (it == f.region_start.begin())
    return f.region_start.empty() ? offset : f.region_start[0];  // the dispatch at entry
  size_t r = size_t(it - f.region_start.begin()) - 1;
  return offset == f.region_call[r] ? offset : f.region_start[r];
}

void GoModule::representative_counts(uint32_t func, const uint32_t* first, const uint32_t* last,
                                     uint64_t count, std::vector<std::pair<uint32_t, uint64_t>>& out) const {
  const Func* f = func < funcs_.size() ? &regions(func) : nullptr;
  if (!f || f->region_start.empty()) {  // no resume points: each instruction stands for itself
    for (; first < last; ++first) out.emplace_back(*first, count);
    return;
  }
  const std::vector<uint32_t>& start = f->region_start;
  // Before the first resume point: the dispatch at entry.
  const uint32_t* p = std::lower_bound(first, last, start[0]);
  if (p != first) out.emplace_back(start[0], count * static_cast<uint64_t>(p - first));
  while (p < last) {
    // The last resume point starting at or before *p, and where the next starts.
    const size_t r =
        static_cast<size_t>(std::upper_bound(start.begin(), start.end(), *p) - start.begin()) - 1;
    const uint32_t* end = r + 1 < start.size() ? std::lower_bound(p, last, start[r + 1]) : last;
    auto n = static_cast<uint64_t>(end - p);
    // The call that ends the resume point keeps its own offset (its own PC).
    const uint32_t call = f->region_call[r];
    if (call != kNone && std::binary_search(p, end, call)) {
      out.emplace_back(call, count);
      --n;
    }
    if (n) out.emplace_back(start[r], count * n);
    p = end;
  }
}

bool GoModule::call_offset(uint64_t ret_pc, uint32_t& offset) const {
  uint32_t k = 0;
  if (!func_of(ret_pc, k)) return false;
  const Func& f = regions(k);
  uint32_t pcb = static_cast<uint32_t>(ret_pc & 0xFFFF);
  // The resume point that starts at the return PC; the call ends the one before.
  for (size_t r = 1; r < f.region_pc.size(); ++r) {
    if (f.region_pc[r] == pcb && f.region_call[r - 1] != kNone) {
      offset = f.region_call[r - 1];
      return true;
    }
  }
  return false;
}

bool GoModule::region_offset(uint64_t pc, uint32_t& offset) const {
  uint32_t k = 0;
  if (!func_of(pc, k)) return false;
  const Func& f = regions(k);
  uint32_t pcb = static_cast<uint32_t>(pc & 0xFFFF);
  auto it = std::upper_bound(f.region_pc.begin(), f.region_pc.end(), pcb);
  offset = f.region_start[it == f.region_pc.begin() ? 0 : size_t(it - f.region_pc.begin()) - 1];
  return true;
}

bool GoModule::sp_delta(uint64_t pc, int32_t& out) const {
  uint32_t k = 0;
  if (!func_of(pc, k)) return false;
  out = pcvalue(funcs_[k].pcsp, funcs_[k].entry, pc);
  return out >= 0;
}

bool GoModule::is_top_of_stack(uint32_t func) const {
  return func < funcs_.size() && (funcs_[func].flag & (kFlagTopFrame | kFlagSPWrite));
}

std::vector<GoFrame> GoModule::frames(uint64_t pc) const {
  std::vector<GoFrame> out;
  uint32_t k = 0;
  if (!func_of(pc, k)) return out;
  const Func& f = funcs_[k];
  uint64_t inltree = 0;
  uint32_t inl_pcdata = 0;
  if (f.npcdata > kPcdataInlTreeIndex && f.nfuncdata > kFuncdataInlTree) {
    uint32_t fd = image_->at<uint32_t>(f.addr + kFuncFixed + 4ull * f.npcdata + 4ull * kFuncdataInlTree);
    inl_pcdata = image_->at<uint32_t>(f.addr + kFuncFixed + 4ull * kPcdataInlTreeIndex);
    if (fd != kNone) inltree = gofunc_ + fd;
  }
  uint64_t cur = pc;
  for (int guard = 0; inltree && guard < 256; ++guard) {
    int32_t ix = pcvalue(inl_pcdata, f.entry, cur);
    if (ix < 0) break;
    uint8_t ic[kInlinedCall];
    if (!image_->read(inltree + uint64_t(ix) * kInlinedCall, ic, sizeof ic)) break;
    int32_t name_off, parent_pc, start_line;
    std::memcpy(&name_off, ic + 4, 4);
    std::memcpy(&parent_pc, ic + 8, 4);
    std::memcpy(&start_line, ic + 12, 4);
    GoFrame g;
    g.function = cstring(funcnametab_ + uint32_t(name_off));
    g.file = file_name(f, pcvalue(f.pcfile, f.entry, cur));
    g.line = static_cast<uint32_t>(std::max(0, pcvalue(f.pcln, f.entry, cur)));
    g.start_line = static_cast<uint32_t>(std::max(0, start_line));
    g.inlined = true;
    out.push_back(g);
    cur = f.entry + uint32_t(parent_pc);
  }
  GoFrame g;
  g.function = f.name;
  g.file = file_name(f, pcvalue(f.pcfile, f.entry, cur));
  g.line = static_cast<uint32_t>(std::max(0, pcvalue(f.pcln, f.entry, cur)));
  g.start_line = static_cast<uint32_t>(std::max(0, f.start_line));
  out.push_back(g);
  return out;
}

GoFrame GoModule::function(uint32_t func) const {
  GoFrame g;
  if (func >= funcs_.size()) return g;
  const Func& f = funcs_[func];
  g.function = f.name;
  g.file = file_name(f, pcvalue(f.pcfile, f.entry, f.entry));
  g.start_line = static_cast<uint32_t>(std::max(0, f.start_line));
  return g;
}

// The Go callers of the function that Go's wasm_pc_f_loop is about to call:
// a goroutine resuming after a switch, or a function its callee returned to
// after one (the wasm frames below them were unwound). The loop takes the
// resume PC from SP - 8, so that is where the walk starts: frame by frame up
// Go's stack in linear memory, using pclntab's frame sizes, until a function
// the runtime marks as the top of a stack (goexit, mstart, ...) or anything
// that does not check out (then what was found so far is kept: the frames
// nearest the callee, which are right).
bool GoModule::resume_pc(const uint8_t* mem, uint64_t mem_size, uint64_t sp, uint32_t func,
                         uint64_t& pc) const {
  // wasm_pc_f_loop calls the function whose PC it finds at SP - 8.
  if (sp < 8 || sp > mem_size) return false;
  std::memcpy(&pc, mem + sp - 8, 8);
  uint32_t k = 0;
  return func_of(pc, k) && k == func;
}

bool GoModule::caller(const uint8_t* mem, uint64_t mem_size, uint64_t sp, uint64_t pc, uint64_t& caller_sp,
                      uint64_t& caller_pc) const {
  uint32_t k = 0;
  int32_t delta;
  if (!func_of(pc, k) || is_top_of_stack(k) || !sp_delta(pc, delta)) return false;
  const uint64_t fp = sp + uint64_t(delta) + 8;
  if (fp > mem_size || fp < 8) return false;
  std::memcpy(&caller_pc, mem + fp - 8, 8);
  caller_sp = fp;
  return caller_pc != 0 && func_of(caller_pc, k);
}

bool GoModule::walk(const uint8_t* mem, uint64_t mem_size, uint64_t sp, uint32_t func,
                    std::vector<std::pair<uint32_t, uint32_t>>& callers) const {
  callers.clear();
  uint64_t pc;
  if (!resume_pc(mem, mem_size, sp, func, pc)) return false;
  for (int depth = 0; depth < kMaxWalk; ++depth) {
    uint64_t ret, fp;
    if (!caller(mem, mem_size, sp, pc, fp, ret)) break;
    uint32_t k = 0, site = 0;
    if (!func_of(ret, k)) break;  // not a PC of this module: the stack ends (or is not Go's)
    // A return PC that no call precedes is one the runtime made up: a new
    // goroutine "returns" to goexit + 1. The frame is real; it is placed at
    // the start of the resume point holding that PC.
    if (!call_offset(ret, site) && !(is_top_of_stack(k) && region_offset(ret, site))) break;
    callers.emplace_back(k, site);
    pc = ret;
    sp = fp;
  }
  std::reverse(callers.begin(), callers.end());
  return true;
}

bool GoModule::allocation(const uint8_t* mem, uint64_t mem_size, uint64_t sp, uint32_t ret, uint64_t& ptr,
                          uint64_t& bytes) const {
  if (ret != 0 || sp > mem_size || mem_size - sp < 32) return false;
  uint64_t size, typ;
  std::memcpy(&size, mem + sp, 8);
  std::memcpy(&typ, mem + sp + 8, 8);
  std::memcpy(&ptr, mem + sp + 24, 8);
  if (size == 0 || ptr == 0) return false;  // zero-sized: &runtime.zerobase, no object
  constexpr uint64_t kTiny = 16, kPage = 8192;
  // abi.Type: Size_ @0, PtrBytes @8; no type, or no pointers: noscan.
  uint64_t ptr_bytes = 0;
  if (typ && typ <= mem_size - 16) std::memcpy(&ptr_bytes, mem + typ + 8, 8);
  if (ptr_bytes == 0 && size < kTiny) {
    if (ptr % kTiny != 0) return false;  // placed in the current tiny block
    bytes = kTiny;
    return true;
  }
  if (size_classes_.empty() || size > size_classes_.back()) {
    bytes = size_classes_.empty() ? size : (size + kPage - 1) / kPage * kPage;
    return true;
  }
  bytes = *std::lower_bound(size_classes_.begin(), size_classes_.end(), size);
  return true;
}

bool GoModule::goroutine_id(const uint8_t* mem, uint64_t mem_size, uint64_t g, uint64_t& id) const {
  if (!goid_offset_ || g == 0 || g > mem_size || mem_size - g < goid_offset_ + 8) return false;
  std::memcpy(&id, mem + g + goid_offset_, 8);
  return id != 0;
}

bool GoModule::resumes_goroutines(const vm::Module& module, uint32_t func_index) {
  if (func_index < module.num_imported_funcs) return false;
  bool is_go = false;
  for (const vm::CustomSection& c : module.customs) is_go |= c.name == "go:buildid";
  // By name: Go's linker names it in the name section (a module linked with
  // -ldflags=-s has none, and keeps the wasm-level stacks).
  return is_go && module.function_name(func_index) == "wasm_pc_f_loop";
}

}  // namespace wzvm::profiler
