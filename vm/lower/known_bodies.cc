// find_known_bodies (vm/module.h): which defined functions have one of
// vm/known_bodies.def's bodies, byte for byte but for the rows' holes.

#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "vm/module.h"

namespace wzvm::vm {
namespace {

// A row's holes (vm/known_bodies.def).
enum class Hole : uint8_t { None, Func, Const, Captured, Mul64, MulAddWWW, Memcpy, Base, BaseOffset, Second };

struct Piece {
  std::vector<uint8_t> bytes;  // matched as they are
  Hole hole = Hole::None;      // then this immediate
  uint32_t k = 0;              // Base and BaseOffset: the hole is G + k
};

struct Template {
  KnownBody kind;
  std::vector<ValType> locals;  // declared locals, expanded
  std::vector<Piece> code;      // instructions through the final end
};

uint8_t hex_digit(char c) { return static_cast<uint8_t>(c <= '9' ? c - '0' : c - 'a' + 10); }

// A row's code entry: its run-length locals expanded, then the instructions
// in pieces, each ending at a hole (the last at the end). The rows are ours
// (lower-case hex, holes spelled as the .def says, locals counts below 128),
// so nothing here fails.
Template parse(KnownBody kind, std::string_view hex) {
  std::vector<Piece> pieces(1);
  for (size_t i = 0; i < hex.size();) {
    if (hex[i] == '{') {
      const size_t close = hex.find('}', i);
      const std::string_view name = hex.substr(i + 1, close - i - 1);
      if (name.size() > 2 && (name[0] == 'G' || name[0] == 'g') && name[1] == '+') {
        uint32_t k = 0;
        for (char c : name.substr(2)) k = k * 10 + static_cast<uint32_t>(c - '0');
        pieces.back().hole = name[0] == 'G' ? Hole::Base : Hole::BaseOffset;
        pieces.back().k = k;
        pieces.emplace_back();
        i = close + 1;
        continue;
      }
      pieces.back().hole = name == "f" || name == "e" ? Hole::Func
                           : name == "H"              ? Hole::Second
                           : name == "k"              ? Hole::Const
                           : name == "K"              ? Hole::Captured
                           : name == "Mul64"          ? Hole::Mul64
                           : name == "MulAddWWW"      ? Hole::MulAddWWW
                           : name == "memcpy"         ? Hole::Memcpy
                                                      : Hole::None;
      pieces.emplace_back();
      i = close + 1;
    } else {
      pieces.back().bytes.push_back(static_cast<uint8_t>(hex_digit(hex[i]) << 4 | hex_digit(hex[i + 1])));
      i += 2;
    }
  }
  Template t{kind, {}, {}};
  std::vector<uint8_t>& head = pieces.front().bytes;
  size_t at = 1;
  for (uint8_t group = 0; group < head[0]; ++group, at += 2)
    t.locals.insert(t.locals.end(), head[at], static_cast<ValType>(head[at + 1]));
  head.erase(head.begin(), head.begin() + static_cast<std::ptrdiff_t>(at));
  t.code = std::move(pieces);
  return t;
}

const std::vector<Template>& templates() {
  static const std::vector<Template> rows = {
#define WZVM_KNOWN_BODY(Kind, what, hex) parse(KnownBody::Kind, hex),
#include "vm/known_bodies.def"
#undef WZVM_KNOWN_BODY
  };
  return rows;
}

// An LEB128 immediate at p (before end): its value (sign-extended for an
// i64.const), and p moved past it; nothing when it runs past `end`.
std::optional<uint64_t> leb(const uint8_t*& p, const uint8_t* end, bool is_signed) {
  uint64_t v = 0;
  unsigned shift = 0;
  for (; p < end && shift < 70; shift += 7) {
    const uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << (shift & 63);
    if (!(b & 0x80)) {
      if (is_signed && shift + 7 < 64 && (b & 0x40)) v |= ~uint64_t{0} << (shift + 7);
      return v;
    }
  }
  return std::nullopt;
}

// The body [p, end) against `t`: what its holes keep, or nothing.
std::optional<KnownBodyMatch> match(const Module& m, const Template& t, const uint8_t* p,
                                    const uint8_t* end) {
  KnownBodyMatch found{t.kind, 0, 0};
  bool have_base = false, have_second = false;
  for (const Piece& piece : t.code) {
    if (static_cast<size_t>(end - p) < piece.bytes.size() ||
        std::memcmp(p, piece.bytes.data(), piece.bytes.size()) != 0)
      return std::nullopt;
    p += piece.bytes.size();
    if (piece.hole == Hole::None) continue;
    const bool is_signed = piece.hole == Hole::Const || piece.hole == Hole::Captured ||
                           piece.hole == Hole::Base || piece.hole == Hole::Second;
    const std::optional<uint64_t> v = leb(p, end, is_signed);
    if (!v) return std::nullopt;
    if (piece.hole == Hole::Captured) found.constant = *v;
    if (piece.hole == Hole::Base || piece.hole == Hole::BaseOffset || piece.hole == Hole::Second) {
      // an i32.const (sign-extended here) or an offset, as a 32-bit value
      const auto v32 = static_cast<uint32_t>(*v);
      if ((is_signed ? static_cast<uint64_t>(static_cast<int32_t>(v32)) : uint64_t{v32}) != *v)
        return std::nullopt;  // not a 32-bit immediate
      uint64_t& kept = piece.hole == Hole::Second ? found.callee_constant : found.constant;
      bool& have = piece.hole == Hole::Second ? have_second : have_base;
      const uint32_t value = piece.hole == Hole::Second ? v32 : v32 - piece.k;
      if (have && kept != value) return std::nullopt;
      kept = value;
      have = true;
    }
    if (piece.hole == Hole::Mul64 || piece.hole == Hole::MulAddWWW || piece.hole == Hole::Memcpy) {
      const KnownBodyMatch callee = m.known_match(*v > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(*v));
      const KnownBody want = piece.hole == Hole::Mul64       ? KnownBody::GoMul64
                             : piece.hole == Hole::MulAddWWW ? KnownBody::GoMulAddWWW
                                                             : KnownBody::LibcMemcpy;
      if (callee.kind != want) return std::nullopt;
      found.callee_constant = callee.constant;
    }
  }
  if (p != end) return std::nullopt;
  return found;
}

// The function type each kind's body is written for: Go's (i32) -> i32, and
// C's for the wasi-libc functions (strlen's and dlmalloc's (i32) -> i32 too,
// dlfree's (i32) -> ()).
bool has_type(const Module& m, uint32_t func_index, KnownBody kind) {
  const FuncType& t = m.func_type(func_index);
  if (kind == KnownBody::LibcDlfree)
    return t.params == std::vector<ValType>{ValType::I32} && t.results.empty();
  const bool three = runs_at_entry(kind) && kind != KnownBody::LibcStrlen && kind != KnownBody::LibcDlmalloc;
  return t.params == std::vector<ValType>(three ? 3 : 1, ValType::I32) &&
         t.results == std::vector<ValType>{ValType::I32};
}

}  // namespace

void find_known_bodies(Module& m) {
  m.known_bodies.clear();
  const auto& rows = templates();
  // Until nothing more is found: a {Mul64}, {MulAddWWW} or {memcpy} hole
  // names a function that a pass may reach after the one calling it (today's
  // rows chain three deep: one pass more than that at most).
  for (bool more = true; more;) {
    more = false;
    for (uint32_t i = 0; i < m.functions.size(); ++i) {
      const Function& f = m.functions[i];
      if (i < m.known_bodies.size() && m.known_bodies[i].kind != KnownBody::None) continue;
      for (const Template& t : rows) {
        if (f.locals != t.locals || !has_type(m, m.num_imported_funcs + i, t.kind)) continue;
        const std::optional<KnownBodyMatch> found =
            match(m, t, m.bytes.data() + f.body_offset, m.bytes.data() + f.body_end);
        if (!found) continue;
        m.known_bodies.resize(m.functions.size());
        m.known_bodies[i] = *found;
        more = true;
        break;
      }
    }
  }
}

}  // namespace wzvm::vm
