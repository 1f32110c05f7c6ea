#include "profiler/pprof.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "profiler/cpython.h"
#include "profiler/golang.h"
#include "profiler/output.h"
#include "profiler/symbolize.h"

namespace wzvm::profiler {
namespace {

namespace pb = perftools::profiles;

// Per mapping id: {value at leaf Locations with a line, total value}
// (modules_without_lines).
using LineWeights = std::map<uint64_t, std::pair<int64_t, int64_t>>;

void weigh_lines(std::pair<int64_t, int64_t>& w, const pb::Location& leaf, int64_t value) {
  w.second += value;
  if (leaf.line_size() > 0 && leaf.line(0).line() > 0) w.first += value;
}

std::vector<std::string> without_lines(const LineWeights& weights, const pb::Profile& profile) {
  std::vector<std::string> out;
  for (const pb::Mapping& m : profile.mapping()) {
    auto it = weights.find(m.id());
    if (it == weights.end() || it->second.second == 0) continue;
    if (2 * it->second.first < it->second.second)
      out.push_back(profile.string_table(static_cast<int>(m.filename())));
  }
  return out;
}

// Interns strings, mappings, functions and locations of one profile. Ids are
// handed out in order of first use, so a deterministic walk gives
// deterministic ids.
class Builder {
 public:
  explicit Builder(const Profiler& profiler) : prof_(profiler) { str(""); }

  pb::Profile& profile() { return p_; }

  // Samples go to p_, or, once stream_samples() is called, are serialized
  // one by one as they are made (end_sample) and never held: a deep
  // recursion's instruction profile has thousands of samples of hundreds of
  // frames each (calls 37: 12 000 samples, 2 M location ids, which as a
  // message are 16 MB of 8-byte ids to allocate, size, serialize and free).
  // One Sample is reused; the bytes are those of Profile.sample fields, given
  // to `out` a buffer at a time (Go's encoding/json tests: 217 MB of them,
  // which held whole and then gzipped whole made the run's peak memory).
  using Out = std::function<void(std::string_view)>;
  void stream_samples(int weight_index, Out out) {
    streaming_ = true;
    weight_index_ = weight_index;
    out_ = std::move(out);
  }
  pb::Sample* new_sample() {
    if (!streaming_) return p_.add_sample();
    scratch_.Clear();
    stream_leaf_ = 0;
    stream_mid_ = 0;
    return &scratch_;
  }
  void end_sample(const pb::Sample* s) {
    if (!streaming_) return;
    const uint64_t leaf_id = stream_leaf_ ? stream_leaf_ : s->location_id_size() ? s->location_id(0) : 0;
    if (leaf_id && weight_index_ < s->value_size()) {
      if (const uint64_t key = leaf_weighing(leaf_id); key >> 1) {
        if (key >> 1 != weight_mapping_) {
          weight_mapping_ = key >> 1;
          weight_ = &weights_[weight_mapping_];  // a map's entries never move
        }
        const int64_t v = s->value(weight_index_);
        weight_->second += v;  // as weigh_lines
        if (key & 1) weight_->first += v;
      }
    }
    write_head();
    // The field: tag, length, the Sample. Written in place at the end of
    // samples_, at most 10 bytes of tag and length. A stack add_stack kept
    // aside is field 1 of the Sample, written here as protobuf would (it
    // comes first: fields go in number order): its tag, length and packed
    // ids, the callers' bytes encoded once per node, not once per sample.
    using WFL = google::protobuf::internal::WireFormatLite;
    using COS = google::protobuf::io::CodedOutputStream;
    // The rest of the Sample, its values (field 2, packed), also by hand
    // when they are all it has besides that stack (instruction counts):
    // protobuf's size and serialize passes over a one-value message were
    // ~200 host instructions a sample (callgrind), more than the rest of
    // the sample's writing. Anything else goes through protobuf.
    const bool by_hand = stream_leaf_ && s->location_id_size() == 0 && s->label_size() == 0;
    size_t values = 0, rest;
    if (by_hand) {
      for (const int64_t v : s->value()) values += COS::VarintSize64(static_cast<uint64_t>(v));
      rest = s->value_size() ? 1 + COS::VarintSize64(values) + values : 0;
    } else {
      rest = s->ByteSizeLong();
    }
    size_t ids = 0, size = rest;
    if (stream_leaf_) {
      ids = COS::VarintSize64(stream_leaf_) + (stream_mid_ ? COS::VarintSize64(stream_mid_) : 0) +
            callers_size();
      size += 1 + COS::VarintSize64(ids) + ids;
    }
    uint8_t* const base = samples_room(10 + size);
    uint8_t* p = WFL::WriteTagToArray(pb::Profile::kSampleFieldNumber, WFL::WIRETYPE_LENGTH_DELIMITED, base);
    p = COS::WriteVarint32ToArray(static_cast<uint32_t>(size), p);
    if (stream_leaf_) {
      p = WFL::WriteTagToArray(pb::Sample::kLocationIdFieldNumber, WFL::WIRETYPE_LENGTH_DELIMITED, p);
      p = COS::WriteVarint32ToArray(static_cast<uint32_t>(ids), p);
      p = COS::WriteVarint64ToArray(stream_leaf_, p);
      if (stream_mid_) p = COS::WriteVarint64ToArray(stream_mid_, p);
      p = std::copy(callers_.begin() + static_cast<std::ptrdiff_t>(callers_begin_), callers_.end(), p);
    }
    if (!by_hand) {
      p = s->SerializeWithCachedSizesToArray(p);
    } else if (s->value_size()) {
      p = WFL::WriteTagToArray(pb::Sample::kValueFieldNumber, WFL::WIRETYPE_LENGTH_DELIMITED, p);
      p = COS::WriteVarint32ToArray(static_cast<uint32_t>(values), p);
      for (const int64_t v : s->value()) p = COS::WriteVarint64ToArray(static_cast<uint64_t>(v), p);
    }
    samples_size_ += static_cast<size_t>(p - base);
    if (samples_size_ >= kOutBuffer) flush_samples();
  }
  // Gives `out` the rest of what p_ serializes to with the streamed samples
  // in place: field 1 (sample_type) comes before them and the rest after, as
  // in the serialization of the whole message. Then p_ is spent.
  void finish_stream() {
    write_head();
    flush_samples();
    out_(p_.SerializeAsString());
  }
  const LineWeights& line_weights() const { return weights_; }

  int64_t str(const std::string& s) {
    auto [it, inserted] = strings_.try_emplace(s, static_cast<int64_t>(strings_.size()));
    if (inserted) p_.add_string_table(s);
    return it->second;
  }

  void value_type(pb::ValueType* vt, const char* type, const char* unit) {
    vt->set_type(str(type));
    vt->set_unit(str(unit));
  }

  // A sample's stack deeper than 2 * kStackEnd frames keeps its innermost
  // and outermost kStackEnd, with one "[frames-elided]" frame between them.
  // pprof's format shares no stack prefixes, so a recursion n deep costs
  // n * n location ids: 19 000 deep, 1.6 GB of protobuf that wzvm took 11 s
  // and 4.8 GB to write and `go tool pprof` could not load in 24 GB. Self
  // values stay exact (the leaf is kept), and so do cumulative ones for
  // every frame within kStackEnd of either end.
  static constexpr uint32_t kStackEnd = 128;
  uint64_t elided_location() {
    if (!elided_location_) {
      pb::Location* loc = p_.add_location();
      elided_location_ = static_cast<uint64_t>(p_.location_size());
      loc->set_id(elided_location_);
      const std::string name = "[frames-elided]";
      loc->add_line()->set_function_id(function(name, name, "", 0));
    }
    return elided_location_;
  }

  // The sample's stack: `leaf` first, then every caller up to the root, each
  // at the call it is in (the call site of the node above it).
  // The caller's Location of each node is kept by node: deep recursions
  // give every sample thousands of frames, most of them shared.
  // `tree`: the call tree of the thread the sample is from (the main one's
  // by default; threads: Profiler::threads()). Node ids are per tree, so the
  // cache starts over when the tree changes (the writers go thread by thread).
  // `mid`, if not 0, is a frame between the leaf and its callers: a
  // "[frames-elided]" standing for the frames between a C function deep
  // below a Python frame and `node`, the ancestor it is shown under
  // (instructions_profile).
  void add_stack(pb::Sample* s, uint64_t leaf, uint32_t node) { add_stack(s, leaf, node, prof_.tree()); }
  void add_stack(pb::Sample* s, uint64_t leaf, uint32_t node, const vm::CallTree& tree, uint64_t mid = 0) {
    if (streaming_ && s == &scratch_) {  // end_sample writes the ids
      stream_leaf_ = leaf;
      stream_mid_ = mid;
      if (stream_tree_ == &tree && stream_node_ == node) return;  // the callers are encoded
      if (stream_tree_ != &tree) forget_callers();                // node ids are the tree's
      encode_callers(tree, node);
      stream_tree_ = &tree;
      stream_node_ = node;
      return;
    }
    auto* ids = s->mutable_location_id();
    ids->Clear();
    const uint32_t frames = tree.node(node).depth;  // the leaf's frame and its callers
    const bool elide = frames > 2 * kStackEnd;
    ids->Reserve(static_cast<int>(elide ? 2 * kStackEnd + 1 : frames));
    ids->Add(leaf);
    if (mid) ids->Add(mid);
    // The writers go node by node (each node's sites are sorted by offset),
    // so a node's samples follow each other: the next one copies the
    // callers instead of walking them again (calls 37: 12 000 samples, 498
    // distinct caller stacks).
    if (last_sample_ && last_tree_ == &tree && last_node_ == node && last_mid_ == mid) {
      ids->Add(last_sample_->location_id().begin() + (mid ? 2 : 1), last_sample_->location_id().end());
    } else {
      for_each_caller(tree, node, [&](uint64_t id) { ids->Add(id); });
    }
    last_sample_ = s;
    last_tree_ = &tree;
    last_node_ = node;
    last_mid_ = mid;
  }
  // The streamed sample's callers (add_stack), as packed varints: the last
  // callers_size() bytes of callers_, innermost first, so the frames a node
  // shares with the last one encoded (its outer ones) stay where they are.
  // The writers go node by node in order of their making, so the next node
  // is mostly the last one's callee or a sibling of one of its callers:
  // only the frames below the deepest node both stacks hold are encoded
  // again, not the whole stack (json's test binary: 1.4 M nodes a hundred
  // frames deep, each walked to the root, were 6% of its instruction run).
  // callers_path_[d]: the last stack's node at depth d; callers_tail_[d]:
  // how many bytes at the end of callers_ are the callers of that node.
  std::string callers_;
  size_t callers_begin_ = 0;
  std::vector<uint32_t> callers_path_;
  std::vector<size_t> callers_tail_;
  size_t callers_size() const { return callers_.size() - callers_begin_; }
  void encode_callers(const vm::CallTree& tree, uint32_t node) {
    use_tree(tree);
    uint8_t bytes[10];
    auto prepend = [&](uint64_t id) {
      size_t n = 0;
      for (; id >= 0x80; id >>= 7) bytes[n++] = static_cast<uint8_t>(id | 0x80);
      bytes[n++] = static_cast<uint8_t>(id);
      if (callers_begin_ < n) {  // room in front: twice the size, the bytes at the end
        const size_t size = callers_size();
        std::string grown(2 * callers_.size() + 64, '\0');
        std::copy(callers_.begin() + static_cast<std::ptrdiff_t>(callers_begin_), callers_.end(),
                  grown.end() - static_cast<std::ptrdiff_t>(size));
        callers_.swap(grown);
        callers_begin_ = callers_.size() - size;
      }
      callers_begin_ -= n;
      std::copy(bytes, bytes + n, callers_.begin() + static_cast<std::ptrdiff_t>(callers_begin_));
    };
    const uint32_t depth = tree.node(node).depth;
    if (depth > 2 * kStackEnd) {
      // Elided (for_each_caller): the callers of the ancestor at depth
      // kStackEnd + 1 (encoded as any stack, sharing the last one's), then
      // "[frames-elided]" and the innermost kStackEnd - 1 callers, found
      // without walking the frames between (json's test binary recurses
      // thousands deep).
      encode_callers(tree, ancestor_at(tree, node, kStackEnd + 1));
      uint64_t inner[kStackEnd - 1];
      uint32_t c = node;
      for (uint32_t i = 0; i < kStackEnd - 1; ++i, c = tree.node(c).parent) {
        uint64_t& id = caller_location_[c];
        if (!id) id = caller_id(tree, c);
        inner[i] = id;
      }
      prepend(elided_location());
      for (uint32_t i = kStackEnd - 1; i-- > 0;)
        if (inner[i] != kNoFrame) prepend(inner[i]);
      return;  // the path stays the ancestor's: deeper nodes are not in it
    }
    // The nodes below the deepest one the last stack holds, innermost first.
    std::vector<uint32_t>& below = callers_below_;
    below.clear();
    uint32_t c = node;
    for (; c != vm::CallTree::kRoot; c = tree.node(c).parent) {
      const uint32_t d = tree.node(c).depth;
      if (d < callers_path_.size() && callers_path_[d] == c) break;
      below.push_back(c);
    }
    const uint32_t shared = c == vm::CallTree::kRoot ? 0 : tree.node(c).depth;
    if (callers_tail_.empty()) callers_tail_.assign(1, 0);
    callers_begin_ = callers_.size() - callers_tail_[shared];
    callers_path_.resize(depth + 1);
    callers_tail_.resize(depth + 1);
    for (auto it = below.rbegin(); it != below.rend(); ++it) {
      const uint32_t n = *it, d = tree.node(n).depth;
      if (tree.node(n).parent != vm::CallTree::kRoot) {
        uint64_t& id = caller_location_[n];
        if (!id) id = caller_id(tree, n);
        if (id != kNoFrame) prepend(id);
      }
      callers_path_[d] = n;
      callers_tail_[d] = callers_size();
    }
  }
  void forget_callers() {
    callers_path_.clear();
    callers_tail_.clear();
    callers_begin_ = callers_.size();
    ancestors_.clear();
  }
  // `node`'s ancestor at `depth` (kStackEnd + 1, the one depth asked),
  // kept per node on the way (0: not yet).
  std::vector<uint32_t> ancestors_;
  uint32_t ancestor_at(const vm::CallTree& tree, uint32_t node, uint32_t depth) {
    if (ancestors_.size() < tree.size()) ancestors_.resize(tree.size(), 0);
    std::vector<uint32_t>& walk = callers_below_;
    walk.clear();
    uint32_t c = node;
    for (; tree.node(c).depth > depth && !ancestors_[c]; c = tree.node(c).parent) walk.push_back(c);
    const uint32_t a = tree.node(c).depth == depth ? c : ancestors_[c];
    for (const uint32_t w : walk) ancestors_[w] = a;
    return a;
  }
  std::vector<uint32_t> callers_below_;
  // The Location ids of `node`'s callers, innermost first, elided as
  // add_stack says.
  template <typename F>
  void for_each_caller(const vm::CallTree& tree, uint32_t node, F add) {
    use_tree(tree);
    const uint32_t frames = tree.node(node).depth;  // the leaf's frame and its callers
    const bool elide = frames > 2 * kStackEnd;
    uint32_t i = 1;  // the caller's index in the stack (the leaf is 0)
    for (uint32_t c = node, n = tree.node(c).parent; n != vm::CallTree::kRoot;
         c = n, n = tree.node(n).parent, ++i) {
      if (elide && i >= kStackEnd && i < frames - kStackEnd) {
        if (i == kStackEnd) add(elided_location());
        continue;
      }
      uint64_t& id = caller_location_[c];
      if (!id) id = caller_id(tree, c);
      if (id != kNoFrame) add(id);
    }
  }
  // A CPython sample's stack (CpuSite::python): the wasm stack as
  // add_stack gives it, with each frame of the evaluation loop replaced by
  // the Python frames it runs (innermost first), matched up from the
  // outermost: an innermost loop frame with no group of its own (it has not
  // pushed its _PyCFrame yet, or has popped it) stays a C frame.
  // `leaf_func` at `leaf_offset` is the innermost frame, that of `node`
  // (a host function's, for host calls: the module is its caller's).
  void add_python_stack(pb::Sample* s, uint32_t node, const vm::FuncInst* leaf_func, int64_t leaf_offset,
                        uint32_t python, const Profiler& prof) {
    const vm::CallTree& tree = prof.tree();
    const std::vector<uint32_t>& stack = prof.python_stack(python);
    const size_t groups = std::count(stack.begin(), stack.end(), Profiler::kPythonGroupEnd);
    const vm::Instance* inst = leaf_func->instance;
    for (uint32_t n = tree.node(node).parent; !inst && n != vm::CallTree::kRoot; n = tree.node(n).parent)
      inst = tree.node(n).func->instance;
    const CPythonModule* py = prof.symbolizer(inst->module.get()).python();
    const vm::FuncInst* eval = inst->funcs[py->eval_function()];
    uint32_t evals = 0;
    for (uint32_t n = node; n != vm::CallTree::kRoot; n = tree.node(n).parent)
      evals += tree.node(n).func == eval;
    size_t keep = evals - groups, next = 0;  // loop frames kept as C; the next group's first frame
    // Each Python frame's Location is made once (frames are interned by the
    // profiler, so an index names one).
    std::vector<uint64_t>& frame_ids = python_frame_ids_[&prof];
    std::vector<uint64_t> ids;
    auto frame = [&](const vm::FuncInst* f, int64_t offset) {
      if (f != eval || keep > 0) {
        if (f == eval) --keep;
        ids.push_back(location(f, offset));
        return;
      }
      for (; next < stack.size() && stack[next] != Profiler::kPythonGroupEnd; ++next) {
        const uint32_t i = stack[next];
        if (i >= frame_ids.size()) frame_ids.resize(i + 1, 0);
        if (!frame_ids[i]) frame_ids[i] = python_location(prof.python_frame(i));
        ids.push_back(frame_ids[i]);
      }
      ++next;  // past the group's end
    };
    frame(leaf_func, leaf_offset);
    for (uint32_t c = node, n = tree.node(c).parent; n != vm::CallTree::kRoot; c = n, n = tree.node(n).parent)
      frame(tree.node(n).func, site_of(tree, c));
    auto* out = s->mutable_location_id();
    out->Clear();
    const bool elide = ids.size() > 2 * kStackEnd;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (elide && i >= kStackEnd && i < ids.size() - kStackEnd) {
        if (i == kStackEnd) out->Add(elided_location());
        continue;
      }
      out->Add(ids[i]);
    }
    last_sample_ = nullptr;  // add_stack's reuse does not apply to the next sample
  }
  // One Location per Python function and line, in no mapping (the Python
  // source is no part of the module).
  uint64_t python_location(const PyFrame& f) {
    const uint64_t fn = function(f.function, f.qualname, f.file, f.start_line);
    auto [it, inserted] = python_locations_.try_emplace({fn, f.line}, 0);
    if (!inserted) return it->second;
    pb::Location* loc = p_.add_location();
    it->second = static_cast<uint64_t>(p_.location_size());
    loc->set_id(it->second);
    pb::Line* line = loc->add_line();
    line->set_function_id(fn);
    line->set_line(f.line);
    return it->second;
  }

  // The compile units every location of some samples is in, read at once
  // (Symbolizer::prefetch): the leaves, and each caller's call site or, for
  // a caller known only as a function, its body. A writer adds each
  // sample's leaf (`offset` < 0: none) and node, then calls read().
  class Prefetch {
   public:
    Prefetch(Builder& b, const vm::CallTree& tree) : b_(b), tree_(tree), seen_(tree.size()) {}
    // The callers of `node` and its leaf in `leaf` at `offset` (-1: none;
    // kStart: the function's start).
    static constexpr int64_t kStart = -2;
    void add(uint32_t node, const vm::FuncInst* leaf, int64_t offset) {
      if (offset >= 0 || offset == kStart) at(leaf, offset);
      for (uint32_t c = node; c != vm::CallTree::kRoot && !seen_[c]; c = tree_.node(c).parent) {
        seen_[c] = true;
        const uint32_t site = tree_.node(c).site;
        if (site == vm::CallTree::kNoSite) at(tree_.node(tree_.node(c).parent).func, -1);
        else if (!vm::CallTree::is_context(site)) at(tree_.node(tree_.node(c).parent).func, site);
      }
    }
    void read() {
      for (auto& [m, a] : addresses_) b_.prof_.symbolizer(m).prefetch(a);
      addresses_.clear();
    }

   private:
    void at(const vm::FuncInst* f, int64_t offset) {
      if (const vm::Module* m = b_.module_of(f))
        addresses_[m].push_back(
            static_cast<uint32_t>(offset >= 0 ? offset : b_.body_offset(*m, f->func_index)));
    }
    Builder& b_;
    const vm::CallTree& tree_;
    std::vector<bool> seen_;
    std::map<const vm::Module*, std::vector<uint32_t>> addresses_;
  };
  void prefetch(const std::vector<CpuSite>& cpu_sites, const std::vector<HostSite>& host_sites,
                const vm::CallTree& tree) {
    Prefetch pf(*this, tree);
    for (const CpuSite& s : cpu_sites) pf.add(s.node, s.func, s.offset);
    for (const HostSite& h : host_sites) pf.add(h.node, nullptr, -1);
    pf.read();
  }

  // Interns the caller Locations of `node`'s stack before any sample's leaf:
  // a writer calls it for every sample's node first, so the few call sites
  // that recursions repeat thousands of times per stack get the low ids,
  // which take one byte each (a varint) instead of two. For `calls`' 12 000
  // samples of up to 410 frames that halves the profile before gzip.
  void intern_callers(uint32_t node, const vm::CallTree& tree) {
    use_tree(tree);
    // A cached node's callers are all cached: every walk goes to the root
    // or stops at a cached node.
    for (uint32_t c = node, n = tree.node(c).parent; n != vm::CallTree::kRoot && !caller_location_[c];
         c = n, n = tree.node(n).parent)
      caller_location_[c] = caller_id(tree, c);
  }

  // The Locations made since the first `first` (ids first + 1 on) numbered
  // again, the heaviest first by `weight` (indexed by id - first - 1; ties
  // keep their order), and every id this builder holds renumbered with them.
  // A stack's ids are varints, so which Locations get the ids below 128 and
  // 16 384 decides the size of a deep profile: intern_callers gives ids in
  // order of first use, which in a deep recursion leaves most callers at
  // two bytes (docs/RATIONALE.md, "Caller Locations numbered by weight").
  // Only Locations no sample has used yet may be renumbered.
  void renumber_locations(uint64_t first, const std::vector<uint64_t>& weight) {
    const uint64_t n = static_cast<uint64_t>(p_.location_size()) - first;
    if (n < 2 || weight.size() != n) return;
    std::vector<uint64_t> order(n);
    for (uint64_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](uint64_t a, uint64_t b) { return weight[a] > weight[b]; });
    std::vector<uint64_t> to(n);  // old id - first - 1 -> new id
    for (uint64_t i = 0; i < n; ++i) to[order[i]] = first + 1 + i;
    auto* locs = p_.mutable_location();
    std::vector<pb::Location> moved(n);
    for (uint64_t i = 0; i < n; ++i)
      moved[to[i] - first - 1].Swap(locs->Mutable(static_cast<int>(first + i)));
    for (uint64_t i = 0; i < n; ++i) {
      pb::Location* loc = locs->Mutable(static_cast<int>(first + i));
      loc->Swap(&moved[i]);
      loc->set_id(first + 1 + i);
    }
    auto remap = [&](uint64_t& id) {
      if (id > first && id <= first + n) id = to[id - first - 1];
    };
    for (auto& [k, id] : locations_) remap(id);
    for (auto& [k, id] : count_locations_) remap(id);
    for (auto& [k, ids] : index_locations_)
      for (uint64_t& id : ids) remap(id);
    for (auto& [k, g] : go_groups_)
      for (uint64_t& id : g.loc) remap(id);
    for (auto& [k, id] : line_locations_) remap(id);
    for (uint64_t& id : caller_location_) remap(id);  // kNoFrame is above every id
    for (auto& [k, id] : python_locations_) remap(id);
    for (auto& [k, ids] : python_frame_ids_)
      for (uint64_t& id : ids) remap(id);
    remap(elided_location_);
    remap(stream_leaf_);
    remap(stream_mid_);
    leaf_weighing_.clear();
    // The cached encodings of ids are stale.
    stream_tree_ = nullptr;
    forget_callers();
    last_sample_ = nullptr;
  }
  // intern_callers for every node of `nodes` (each the node of some
  // samples), then the caller Locations it made numbered by how many of
  // those nodes' stacks each is in (a node's subtree: children are made
  // after their parent, so one pass from the last node back sums it). What
  // a node's samples repeat is its callers: json's test binary, 1.8 M
  // samples about 105 frames deep, wrote 382 MB of ids, nearly all of two
  // bytes, in order of first use.
  void intern_callers_by_weight(const std::vector<uint32_t>& nodes, const vm::CallTree& tree) {
    const auto first = static_cast<uint64_t>(p_.location_size());
    for (const uint32_t node : nodes) intern_callers(node, tree);
    const uint64_t n = static_cast<uint64_t>(p_.location_size()) - first;
    if (n < 2) return;
    std::vector<uint64_t> stacks(tree.size(), 0);  // per node: stacks it is in
    for (const uint32_t node : nodes) ++stacks[node];
    for (uint32_t c = static_cast<uint32_t>(tree.size()) - 1; c > 0; --c) {
      const uint32_t parent = tree.node(c).parent;
      if (parent < c) stacks[parent] += stacks[c];
    }
    std::vector<uint64_t> weight(n, 0);
    for (uint32_t c = 1; c < tree.size() && c < caller_location_.size(); ++c) {
      const uint64_t id = caller_location_[c];
      if (id > first && id <= first + n) weight[id - first - 1] += stacks[c];
    }
    renumber_locations(first, weight);
  }

  // CPython's instruction counts (profiler/python_counts.cc): the profiler
  // whose tree's context nodes the next stacks have (the thread's).
  void use_contexts(const Profiler* p) { contexts_ = p; }
  // The Python frame a context node stands for, or null.
  const PyFrame* context_of(const vm::CallTree& tree, uint32_t n) const {
    return contexts_ && vm::CallTree::is_context(tree.node(n).site) ? contexts_->context_frame(n) : nullptr;
  }
  // The frame of `c`'s caller in its stack: the call in the parent's
  // function; the Python line that made the call, when the parent is a
  // context node; none (kNoFrame) for the evaluation loop's own frame
  // above its first context node, whose Python frames stand in its place.
  static constexpr uint64_t kNoFrame = UINT64_MAX;
  // A frame's lines hang from a node of the frame as a whole (under which
  // a recursive call hangs too, at the function's start line): only one of
  // the two is a frame of the stack.
  uint64_t caller_id(const vm::CallTree& tree, uint32_t c) {
    const uint32_t n = tree.node(c).parent;
    if (contexts_ && vm::CallTree::is_context(tree.node(n).site)) {
      bool whole = false, c_whole = false;
      const PyFrame* pf = contexts_->context_frame(n, &whole);
      // c is one of n's lines, not a recursive call's frame: n is not a frame of its own.
      const bool line_of_n = whole && contexts_->context_frame(c, &c_whole) && !c_whole;
      return !pf || line_of_n ? kNoFrame : python_location(*pf);
    }
    if (contexts_ && vm::CallTree::is_context(tree.node(c).site)) return kNoFrame;
    return location(tree.node(n).func, site_of(tree, c));
  }

  // The Location of `c`'s caller's frame in its stacks (caller_id), kept
  // per node.
  uint64_t caller_location(const vm::CallTree& tree, uint32_t c) {
    use_tree(tree);
    uint64_t& id = caller_location_[c];
    if (!id) id = caller_id(tree, c);
    return id;
  }

  void use_tree(const vm::CallTree& tree) {
    if (cached_tree_ != &tree) {
      caller_location_.clear();
      cached_tree_ = &tree;
    }
    if (caller_location_.size() < tree.size()) caller_location_.resize(tree.size(), 0);
  }

  // threads: the label of a sample from thread `tid` (0: main), in runs
  // that spawned threads only, so a single-threaded profile is unchanged.
  // A string label: pprof takes a numeric label of 0 for an absent one.
  void thread_label(pb::Sample* s, int32_t tid) {
    if (prof_.threads().empty()) return;
    pb::Label* l = s->add_label();
    l->set_key(str("thread"));
    l->set_str(str(std::to_string(tid)));
  }
  // Where the caller of `node` is: its call instruction, or -1 (the
  // function as a whole) for a call with no single site (vm/profiling.h).
  static int64_t site_of(const vm::CallTree& tree, uint32_t node) {
    uint32_t site = tree.node(node).site;
    return site == vm::CallTree::kNoSite ? -1 : int64_t{site};
  }

  // The leaf Location of an instruction count at `offset`: the
  // instruction's own (location()), except in a module with DWARF lines,
  // where every instruction of one source line (the same inlined frames at
  // the same lines) shares the Location of the first one counted. pprof
  // shows lines, not wasm addresses, and one sample per instruction made
  // CPython's profile 7.5 M samples that pprof needed 19 GB to load; per
  // line, a few times fewer.
  uint64_t count_location(const vm::FuncInst* f, int64_t offset) {
    auto [it, inserted] = count_locations_.try_emplace({f, offset}, 0);
    if (!inserted) return it->second;
    const vm::Module* m = module_of(f);
    std::vector<SourceFrame> frames;
    if (m && offset >= 0 && offset <= UINT32_MAX)
      frames = prof_.symbolizer(m).lookup(static_cast<uint32_t>(offset), f->func_index);
    if (frames.empty() || frames[0].line == 0) return it->second = location(f, offset);
    std::string key(reinterpret_cast<const char*>(&f), sizeof f);
    for (const SourceFrame& fr : frames) {
      const void* words[2] = {fr.function.data(), fr.file.data()};
      key.append(reinterpret_cast<const char*>(words), sizeof words);
      key.append(reinterpret_cast<const char*>(&fr.line), sizeof fr.line);
    }
    auto [lt, new_line] = line_locations_.try_emplace(std::move(key), 0);
    if (new_line) lt->second = location(f, offset);
    return it->second = lt->second;
  }

  // count_location of `f`'s instructions by index (0: not yet asked), when
  // `offsets` are its own (CompiledFunc::seg_offsets, as counting gives
  // them; a replay's are not): a node's instructions each took a hash
  // lookup, 6% of a CPython instruction run.
  std::vector<uint64_t>* index_locations(const vm::FuncInst* f, const uint32_t* offsets) {
    if (!f || !f->code || offsets != f->code->seg_offsets.data()) return nullptr;
    std::vector<uint64_t>& locs = index_locations_[f];
    if (locs.empty()) locs.assign(f->code->seg_offsets.size(), 0);
    return &locs;
  }

  // A Go function's instructions (by index in `offsets`, its own
  // seg_offsets) in groups: each a maximal stretch whose instructions share
  // one representative offset (GoModule::representative_offset), so one
  // leaf Location (made when first counted: ids stay in the order of use).
  // A node's run of instructions then adds one count per
  // group it crosses, a step per group and no search: what
  // GoModule::representative_counts, sorting its output and a Location
  // lookup per resume point cost per run (json's instruction profile: ~0.8 G
  // of host instructions). Made on the function's first node that ran;
  // nullptr when `offsets` are not its own (a replay's).
  struct GoGroups {
    std::vector<uint32_t> group;  // instruction index -> its group
    std::vector<uint32_t> end;    // group -> the index after its last instruction
    std::vector<uint32_t> rep;    // group -> the representative offset
    std::vector<uint64_t> loc;    // group -> count_location of it (0: not yet asked)
  };
  GoGroups* go_groups(const vm::FuncInst* f, const uint32_t* offsets, const GoModule& go) {
    if (!f || !f->code || offsets != f->code->seg_offsets.data()) return nullptr;
    auto [it, inserted] = go_groups_.try_emplace(f);
    GoGroups& g = it->second;
    if (!inserted) return &g;
    const uint32_t func = f->func_index - f->instance->module->num_imported_funcs;
    const size_t n = f->code->seg_offsets.size();
    g.group.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const uint32_t rep = go.representative_offset(func, offsets[i]);
      if (g.rep.empty() || rep != g.rep.back()) {
        if (!g.rep.empty()) g.end.push_back(static_cast<uint32_t>(i));
        g.rep.push_back(rep);
        g.loc.push_back(0);
      }
      g.group[i] = static_cast<uint32_t>(g.rep.size() - 1);
    }
    if (!g.rep.empty()) g.end.push_back(static_cast<uint32_t>(n));
    return &g;
  }

  // offset -1: the function as a whole (address = its first instruction).
  uint64_t location(const vm::FuncInst* f, int64_t offset) {
    auto [it, inserted] = locations_.try_emplace({f, offset}, 0);
    if (!inserted) return it->second;
    pb::Location* loc = p_.add_location();
    it->second = static_cast<uint64_t>(p_.location_size());
    loc->set_id(it->second);
    const vm::Module* m = module_of(f);
    if (!m) {  // a host function
      const std::string name = function_name(f);
      loc->add_line()->set_function_id(function(name, name, "", 0));
      return it->second;
    }
    uint64_t mapping_id = mapping(m);
    loc->set_mapping_id(mapping_id);
    uint64_t addr = offset >= 0 ? static_cast<uint64_t>(offset) : body_offset(*m, f->func_index);
    loc->set_address(addr);
    // Line entries innermost first, the physical function last (pprof's
    // order); each carries the line being executed in that frame. A frame
    // known only by its function (a recursive call, vm/profiling.h) sits at
    // the function's own start line.
    const Symbolizer& sym = prof_.symbolizer(m);
    std::vector<SourceFrame> frames;
    if (offset >= 0 && offset <= UINT32_MAX)
      frames = sym.lookup(static_cast<uint32_t>(offset), f->func_index);
    if (frames.empty()) {
      SourceFrame fn = sym.function(f->func_index);
      fn.file = fn.function_file;
      fn.line = fn.start_line;
      frames.push_back(fn);
    }
    pb::Mapping* mp = p_.mutable_mapping(static_cast<int>(mapping_id - 1));
    for (const SourceFrame& fr : frames) {
      pb::Line* line = loc->add_line();
      line->set_function_id(function(std::string(fr.function), std::string(fr.system_name),
                                     std::string(fr.function_file), fr.start_line));
      line->set_line(fr.line);
      // The flags say what the profile carries, not what the module could.
      if (fr.line) mp->set_has_line_numbers(true);
      if (!fr.function_file.empty() || !fr.file.empty()) mp->set_has_filenames(true);
    }
    if (frames.size() > 1) mp->set_has_inline_frames(true);
    return it->second;
  }

 private:
  static const vm::Module* module_of(const vm::FuncInst* f) {
    return f && !f->is_host() && f->instance ? f->instance->module.get() : nullptr;
  }
  static uint64_t body_offset(const vm::Module& m, uint32_t func_index) {
    if (func_index < m.num_imported_funcs) return 0;
    uint32_t i = func_index - m.num_imported_funcs;
    return i < m.functions.size() ? m.functions[i].body_offset : 0;
  }

  uint64_t mapping(const vm::Module* m) {
    auto [it, inserted] = mappings_.try_emplace(m, 0);
    if (!inserted) return it->second;
    pb::Mapping* mp = p_.add_mapping();
    it->second = static_cast<uint64_t>(p_.mapping_size());
    mp->set_id(it->second);
    mp->set_memory_start(0);
    mp->set_memory_limit(m->bytes.size());
    mp->set_file_offset(0);
    std::string name;
    if (const std::string* path = prof_.module_path(m)) name = *path;
    else if (!m->names.module.empty()) name = m->names.module;
    else name = "module-" + std::to_string(it->second);
    mp->set_filename(str(name));
    // Function names come from DWARF, the name section, exports or indices:
    // always there. File names, lines and inlined frames need DWARF; location()
    // sets them once a Location of this mapping carries them.
    mp->set_has_functions(true);
    mp->set_has_filenames(false);
    mp->set_has_line_numbers(false);
    mp->set_has_inline_frames(false);
    return it->second;
  }

  // One pprof Function per source function: an inlined function shared by
  // several wasm functions is one Function, so `pprof -list` sums it.
  uint64_t function(const std::string& name, const std::string& system_name, const std::string& file,
                    uint32_t start_line) {
    std::string key = name + '\0' + system_name + '\0' + file + '\0' + std::to_string(start_line);
    auto [it, inserted] = functions_.try_emplace(std::move(key), 0);
    if (!inserted) return it->second;
    pb::Function* fn = p_.add_function();
    it->second = static_cast<uint64_t>(p_.function_size());
    fn->set_id(it->second);
    fn->set_name(str(name));
    fn->set_system_name(str(system_name));
    fn->set_filename(str(file));
    fn->set_start_line(start_line);
    return it->second;
  }

  struct LocKey {
    const vm::FuncInst* f;
    int64_t offset;
    bool operator==(const LocKey&) const = default;
  };
  struct LocKeyHash {
    size_t operator()(const LocKey& k) const {
      return std::hash<const void*>()(k.f) * 31 + std::hash<int64_t>()(k.offset);
    }
  };

  const Profiler& prof_;
  pb::Profile p_;
  std::unordered_map<std::string, int64_t> strings_;
  // Lookup tables only: iteration order never reaches the output.
  std::unordered_map<const vm::Module*, uint64_t> mappings_;
  std::unordered_map<std::string, uint64_t> functions_;
  std::unordered_map<LocKey, uint64_t, LocKeyHash> locations_;
  std::unordered_map<LocKey, uint64_t, LocKeyHash> count_locations_;  // count_location()'s
  std::unordered_map<const vm::FuncInst*, std::vector<uint64_t>> index_locations_;
  std::unordered_map<const vm::FuncInst*, GoGroups> go_groups_;
  std::unordered_map<std::string, uint64_t> line_locations_;  // (function, frames) -> Location id
  std::vector<uint64_t> caller_location_;                     // node -> its caller's Location id (0: not yet)
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> python_locations_;  // (Function id, line) -> Location id
  // A thread's profiler -> the Location of each of its Python frames (0: not yet).
  std::map<const Profiler*, std::vector<uint64_t>> python_frame_ids_;
  uint64_t elided_location_ = 0;
  const vm::CallTree* cached_tree_ = nullptr;  // the tree caller_location_ is for
  const Profiler* contexts_ = nullptr;         // use_contexts()
  // The sample add_stack filled last, and its node in its tree.
  const pb::Sample* last_sample_ = nullptr;
  const vm::CallTree* last_tree_ = nullptr;
  uint32_t last_node_ = 0;
  uint64_t last_mid_ = 0;
  // stream_samples()
  bool streaming_ = false;
  int weight_index_ = 0;
  pb::Sample scratch_;
  // add_stack's stack of the streamed sample, kept out of scratch_: its
  // leaf's id (0: none, the ids are scratch_'s) and the node of
  // stream_tree_ whose callers' packed varints callers_ ends with.
  uint64_t stream_leaf_ = 0;
  uint64_t stream_mid_ = 0;  // add_stack's `mid`, after the leaf
  const vm::CallTree* stream_tree_ = nullptr;
  uint32_t stream_node_ = 0;
  static constexpr size_t kOutBuffer = size_t{1} << 20;
  // Serialized samples not yet given to out_, in a buffer that grows
  // without clearing (a std::string's resize zero-filled each sample's room).
  std::unique_ptr<uint8_t[]> samples_;
  size_t samples_size_ = 0, samples_cap_ = 0;
  // Room for `n` more bytes at the end of samples_.
  uint8_t* samples_room(size_t n) {
    if (samples_size_ + n > samples_cap_) {
      const size_t cap = std::max(samples_size_ + n, kOutBuffer + kOutBuffer / 2);
      auto bigger = std::make_unique_for_overwrite<uint8_t[]>(cap);
      std::copy_n(samples_.get(), samples_size_, bigger.get());
      samples_ = std::move(bigger);
      samples_cap_ = cap;
    }
    return samples_.get() + samples_size_;
  }
  void flush_samples() {
    out_(std::string_view(reinterpret_cast<const char*>(samples_.get()), samples_size_));
    samples_size_ = 0;
  }
  Out out_;
  bool head_written_ = false;
  // Field 1 (sample_type), before the first sample: the sample types are
  // all added before it and moved out of p_, which serializes the rest.
  void write_head() {
    if (head_written_) return;
    head_written_ = true;
    pb::Profile head;
    head.mutable_sample_type()->Swap(p_.mutable_sample_type());
    out_(head.SerializeAsString());
  }
  LineWeights weights_;
  uint64_t weight_mapping_ = 0;  // the entry of weights_ at weight_, 0: none yet
  std::pair<int64_t, int64_t>* weight_ = nullptr;
  // Per Location id - 1: 1 + its mapping id * 2 + whether its first line is
  // known, 0 for not yet read. end_sample weighs every sample's leaf, and
  // reading that from the Location was two or three cache misses per sample
  // (protobuf objects spread over the heap): 15% of writing the instruction
  // profile of `python.wasm -c pass` (perf). Locations are never changed
  // once made; ids are renumbered once (intern_callers_by_weight), which
  // empties this.
  std::vector<uint32_t> leaf_weighing_;
  uint64_t leaf_weighing(uint64_t id) {
    if (id > leaf_weighing_.size()) leaf_weighing_.resize(std::max<size_t>(id, 2 * leaf_weighing_.size()), 0);
    uint32_t& k = leaf_weighing_[id - 1];
    if (!k) {
      const pb::Location& leaf = p_.location(static_cast<int>(id - 1));
      const bool line = leaf.line_size() > 0 && leaf.line(0).line() > 0;
      k = 1 + static_cast<uint32_t>(leaf.mapping_id() << 1 | line);
    }
    return k - 1;
  }
};

// The main thread's profiler (tid 0), then each spawned thread's in tid order.
std::vector<std::pair<int32_t, const Profiler*>> per_thread(const Profiler& profiler) {
  std::vector<std::pair<int32_t, const Profiler*>> out{{0, &profiler}};
  for (const Profiler::ThreadProfile& t : profiler.threads()) out.emplace_back(t.tid, t.profiler.get());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

pb::Profile build_cpu_profile(const Profiler& profiler) {
  Builder b(profiler);
  pb::Profile& p = b.profile();
  b.value_type(p.add_sample_type(), "samples", "count");
  b.value_type(p.add_sample_type(), "cpu", "nanoseconds");
  b.value_type(p.add_sample_type(), "host", "nanoseconds");
  const unsigned hz = profiler.options().cpu_hz ? profiler.options().cpu_hz : kDefaultCpuHz;
  for (const auto& [tid, prof] : per_thread(profiler)) {
    const std::vector<CpuSite> cpu_sites = prof->cpu_sites();
    const std::vector<HostSite> host_sites = prof->host_sites();
    b.prefetch(cpu_sites, host_sites, prof->tree());
    for (const CpuSite& s : cpu_sites) b.intern_callers(s.node, prof->tree());
    for (const HostSite& h : host_sites) b.intern_callers(h.node, prof->tree());
    for (const CpuSite& s : cpu_sites) {
      pb::Sample* ps = p.add_sample();
      if (s.python) b.add_python_stack(ps, s.node, s.func, s.offset, s.python, *prof);
      else b.add_stack(ps, b.location(s.func, s.offset), s.node, prof->tree());
      ps->add_value(static_cast<int64_t>(s.count));
      ps->add_value(static_cast<int64_t>(s.cpu_ns));
      ps->add_value(0);
      b.thread_label(ps, tid);
      if (s.goroutine) {
        pb::Label* l = ps->add_label();
        l->set_key(b.str("goroutine"));
        l->set_str(b.str(std::to_string(s.goroutine)));
      }
    }
    for (const HostSite& h : host_sites) {
      pb::Sample* ps = p.add_sample();
      const vm::FuncInst* host = prof->tree().node(h.node).func;
      if (h.python) b.add_python_stack(ps, h.node, host, -1, h.python, *prof);
      else b.add_stack(ps, b.location(host, -1), h.node, prof->tree());
      ps->add_value(0);
      ps->add_value(0);
      ps->add_value(static_cast<int64_t>(h.wall_ns));
      // The number of calls is not a sample count: it goes in a label, so
      // `-sample_index=samples` keeps counting CPU samples only.
      pb::Label* l = ps->add_label();
      l->set_key(b.str("calls"));
      l->set_num(static_cast<int64_t>(h.count));
      l->set_num_unit(b.str("calls"));
      b.thread_label(ps, tid);
    }
  }
  b.value_type(p.mutable_period_type(), "cpu", "nanoseconds");
  p.set_period(static_cast<int64_t>(1000000000u / hz));
  p.set_time_nanos(static_cast<int64_t>(profiler.start_unix_ns()));
  p.set_duration_nanos(static_cast<int64_t>(profiler.duration_ns()));
  p.set_default_sample_type(b.str("cpu"));
  if (profiler.options().deterministic)
    p.add_comment(
        b.str("deterministic run: the guest's clocks were virtual, but this profile measures real "
              "CPU time and differs from run to run"));
  return std::move(p);
}

namespace {

// One node's counts, per instruction (sorted by offset, in `scratch`), from
// its runs (vm::Profiling::for_each_node_runs). Go functions: the
// instructions that resolve to one Go PC (a resume point's first,
// profiler/golang.h) become one count at one offset, not one per wasm
// instruction with identical frames: a Go test binary's profile had tens of
// times more samples than it has lines, and pprof takes seconds per million.
// They are summed run by run, never spread over instructions (json's test
// binary: 36 M instructions a pass, 5.8 M runs). Counts of other modules
// stay per instruction.
struct NodeCounts {
  std::vector<vm::Profiling::InstructionCount> counts;
  std::vector<std::pair<uint32_t, uint64_t>> pcs;  // Go: (representative offset, count), unsorted

  // The Go tables of `f`'s module when `f` is a function defined in it.
  static const GoModule* go(const vm::FuncInst* f, const Profiler& profiler) {
    const vm::Module* m = f && f->instance ? f->instance->module.get() : nullptr;
    const GoModule* go = m ? profiler.symbolizer(m).go() : nullptr;
    return go && f->func_index >= m->num_imported_funcs ? go : nullptr;
  }

  const std::vector<vm::Profiling::InstructionCount>& of(uint32_t node, const uint32_t* offsets,
                                                         const std::vector<vm::Profiling::CountRun>& runs,
                                                         const vm::CallTree& tree, const Profiler& profiler) {
    counts.clear();
    const vm::FuncInst* f = tree.node(node).func;
    const GoModule* go = this->go(f, profiler);
    if (!go) {
      for (const vm::Profiling::CountRun& r : runs)
        for (uint32_t i = r.from; i < r.to; ++i) counts.push_back({node, offsets[i], r.count});
      return counts;
    }
    pcs.clear();
    const uint32_t func = f->func_index - f->instance->module->num_imported_funcs;
    for (const vm::Profiling::CountRun& r : runs)
      go->representative_counts(func, offsets + r.from, offsets + r.to, r.count, pcs);
    std::sort(pcs.begin(), pcs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [offset, count] : pcs) {
      if (!counts.empty() && counts.back().offset == offset) counts.back().count += count;
      else counts.push_back({node, offset, count});
    }
    return counts;
  }
};

// build_instructions_profile's, into `b` (streaming its samples or not).
// The counts are made node by node, twice (a deep recursion's, held whole,
// were most of the memory and time of writing its profile): first to read
// the symbols every sample needs and intern their callers, then for the
// samples.
void instructions_profile(Builder& b, const Profiler& profiler) {
  pb::Profile& p = b.profile();
  b.value_type(p.add_sample_type(), "instructions", "count");
  // One sample per call stack and instruction: pprof sums them per line
  // (-lines, -list) or per function.
  // Thread by thread in tid order (the order they were spawned): the
  // profile stays deterministic wherever each thread's work is.
  NodeCounts scratch;
  for (const auto& [thread, prof] : per_thread(profiler)) {
    // A copy the lambda below can capture (clang 14 cannot capture a
    // structured binding).
    const int32_t tid = thread;
    const vm::CallTree& tree = prof->tree();
    // CPython's context nodes (profiler/python_counts.cc) stand for a
    // Python function at a line: one sample each, its counts summed over
    // the loop's instructions.
    b.use_contexts(prof->has_contexts() ? prof : nullptr);
    // CPython by Python line: the C frames kept below each Python frame
    // (Options::python_c_frames). shown[n]: the node whose callers n's
    // samples show, n itself or, for a node more than `keep` C frames
    // below its Python frame, its ancestor keep + 1 frames below it, after
    // a "[frames-elided]" (the ancestor's own frame, at the call that led
    // to n, is the last one kept).
    const uint32_t keep = prof->has_contexts() ? profiler.options().python_c_frames : 0;
    std::vector<uint32_t> shown;
    if (keep) {
      shown.resize(tree.size());
      std::vector<uint32_t> below(tree.size(), 0);  // C frames since the last Python frame (or the root)
      for (uint32_t n = 1; n < tree.size(); ++n) {  // parents come first
        const vm::CallTree::Node& node = tree.node(n);
        below[n] = vm::CallTree::is_context(node.site) ? 0 : below[node.parent] + 1;
        shown[n] = below[n] <= keep + 1 ? n : shown[node.parent];
      }
    }
    std::vector<uint32_t> nodes;   // those with counts, in order
    std::vector<uint64_t> totals;  // keep: their totals, which are all their samples need
    {
      // A function's instructions are all in its unit: one leaf each, so
      // only its first node's runs are made here (json's test binary: most
      // nodes are a recursion's, of functions already seen).
      Builder::Prefetch pf(b, tree);
      std::unordered_set<const vm::FuncInst*> leaf_seen;
      if (keep) {
        // Python lines and C functions at their start: totals only (no
        // sweep of each node's counters into runs), read once for both
        // passes (objects.py: 32 K nodes of the evaluation loop's 2,000
        // counters each, half of writing the profile).
        prof->for_each_node_total([&](uint32_t n, uint64_t total) {
          const vm::FuncInst* f = tree.node(n).func;
          const bool c_leaf = !vm::CallTree::is_context(tree.node(n).site) && leaf_seen.insert(f).second;
          pf.add(n, f, c_leaf ? Builder::Prefetch::kStart : -1);
          nodes.push_back(n);
          totals.push_back(total);
        });
      } else {
        prof->for_each_node(
            [&](uint32_t n) { return !leaf_seen.count(tree.node(n).func); },
            [&](uint32_t n, const uint32_t* offsets, const std::vector<vm::Profiling::CountRun>& runs) {
              const vm::FuncInst* f = tree.node(n).func;
              if (!runs.empty() && leaf_seen.insert(f).second)
                pf.add(n, f, scratch.of(n, offsets, runs, tree, profiler).front().offset);
              else pf.add(n, f, -1);
              nodes.push_back(n);
            });
      }
      pf.read();
    }
    if (keep) {
      std::vector<uint32_t> shows = nodes;  // the stacks the samples show
      for (uint32_t& n : shows) n = shown[n];
      b.intern_callers_by_weight(shows, tree);
    } else {
      b.intern_callers_by_weight(nodes, tree);
    }
    // Node by node: one sample per leaf Location (count_location), in
    // the order of their first instruction.
    struct Leaf {
      uint64_t loc, count;
    };
    std::vector<Leaf> leaves;
    // Go: a node's counts by group (Builder::go_groups), then sorted.
    struct GroupCount {
      uint32_t rep, group;
      uint64_t count;
    };
    std::vector<GroupCount> pcs;
    // Per Location id: 1 + its index in `leaves`, 0 for none; put back to 0
    // after each node, entry by entry (a hash map's clear() costs all its
    // buckets, as many as the largest node ever needed, at every node).
    std::vector<uint32_t> leaf_slot;
    // The samples of nodes shown under an ancestor ([frames-elided]), by
    // (ancestor, leaf), written after the rest in order of first count.
    struct Elided {
      uint32_t under;
      uint64_t loc, count;
    };
    std::vector<Elided> elided;
    std::unordered_map<uint64_t, size_t> elided_at;  // ancestor << 32 | leaf Location -> index in `elided`
    // The ancestor's own frame is elided too, so ancestors that are called
    // from the same frame (a call through a pointer: one site, many
    // callees) show the same stack: the first of them stands for all.
    std::unordered_map<uint64_t, uint32_t> same_stack;  // parent << 32 | caller Location -> ancestor
    // The node's samples, one per leaf.
    auto write_leaves = [&](uint32_t node) {
      for (const Leaf& leaf : leaves) {
        pb::Sample* ps = b.new_sample();
        b.add_stack(ps, leaf.loc, node, tree);
        ps->add_value(static_cast<int64_t>(leaf.count));
        b.thread_label(ps, tid);
        b.end_sample(ps);
      }
    };
    // A node shown as one leaf, whose total is all it needs: a Python line,
    // or with C frames kept (keep) a C function at its start line. False
    // for any other.
    auto one_leaf = [&](uint32_t node, uint64_t total) {
      if (const PyFrame* pf = b.context_of(tree, node)) {
        leaves.push_back({b.python_location(*pf), total});
        return true;
      }
      if (!keep) return false;
      const vm::FuncInst* f = tree.node(node).func;
      uint32_t under = shown[node];
      if (under != node) {  // under an ancestor: no leaf of its own
        if (const uint64_t site = b.caller_location(tree, under); site != Builder::kNoFrame)
          under = same_stack.try_emplace(uint64_t{tree.node(under).parent} << 32 | site, under).first->second;
        const uint64_t loc = b.location(f, -1);
        auto [it, added] = elided_at.try_emplace(uint64_t{under} << 32 | loc, elided.size());
        if (added) elided.push_back({under, loc, 0});
        elided[it->second].count += total;
        return true;
      }
      leaves.push_back({b.location(f, -1), total});
      return true;
    };
    // Every node is one leaf then, made from its total.
    if (keep) {
      for (size_t i = 0; i < nodes.size(); ++i) {
        leaves.clear();
        one_leaf(nodes[i], totals[i]);
        write_leaves(nodes[i]);
      }
    } else
      prof->for_each_node_runs([&](uint32_t node, const uint32_t* offsets,
                                   const std::vector<vm::Profiling::CountRun>& runs) {
        leaves.clear();
        if (!one_leaf(node, vm::Profiling::total_of(runs))) {
          auto add = [&](uint64_t loc, uint64_t count) {
            if (loc >= leaf_slot.size()) leaf_slot.resize(std::max<size_t>(loc + 1, 2 * leaf_slot.size()), 0);
            uint32_t& slot = leaf_slot[loc];
            if (!slot) {
              leaves.push_back({loc, 0});
              slot = static_cast<uint32_t>(leaves.size());
            }
            leaves[slot - 1].count += count;
          };
          const vm::FuncInst* f = tree.node(node).func;
          const GoModule* go = scratch.go(f, profiler);
          if (Builder::GoGroups* g = go ? b.go_groups(f, offsets, *go) : nullptr) {
            // A step per group crossed (Builder::go_groups), then by
            // representative offset, as NodeCounts::of orders them: the
            // leaves, and the Locations first made here, come in that order.
            pcs.clear();
            for (const vm::Profiling::CountRun& r : runs)
              for (uint32_t i = r.from; i < r.to;) {
                const uint32_t k = g->group[i];
                const uint32_t end = std::min(r.to, g->end[k]);
                pcs.push_back({g->rep[k], k, r.count * (end - i)});
                i = end;
              }
            std::sort(pcs.begin(), pcs.end(),
                      [](const GroupCount& a, const GroupCount& c) { return a.rep < c.rep; });
            for (const GroupCount& c : pcs) {
              uint64_t& loc = g->loc[c.group];
              if (!loc) loc = b.count_location(f, c.rep);
              add(loc, c.count);
            }
          } else if (std::vector<uint64_t>* locs = go ? nullptr : b.index_locations(f, offsets)) {
            for (const vm::Profiling::CountRun& r : runs)
              for (uint32_t i = r.from; i < r.to; ++i) {
                uint64_t& loc = (*locs)[i];
                if (!loc) loc = b.count_location(f, offsets[i]);
                add(loc, r.count);
              }
          } else {
            for (const vm::Profiling::InstructionCount& c : scratch.of(node, offsets, runs, tree, profiler))
              add(b.count_location(f, c.offset), c.count);
          }
          for (const Leaf& leaf : leaves) leaf_slot[leaf.loc] = 0;
        }
        write_leaves(node);
      });
    std::stable_sort(elided.begin(), elided.end(),
                     [](const Elided& x, const Elided& y) { return x.under < y.under; });
    for (const Elided& e : elided) {
      pb::Sample* ps = b.new_sample();
      b.add_stack(ps, e.loc, e.under, tree, b.elided_location());
      ps->add_value(static_cast<int64_t>(e.count));
      b.thread_label(ps, tid);
      b.end_sample(ps);
    }
    b.use_contexts(nullptr);
  }
  // Every instruction is counted: the period is 1.
  b.value_type(p.mutable_period_type(), "instructions", "count");
  p.set_period(1);
  p.set_default_sample_type(b.str("instructions"));
}

}  // namespace

pb::Profile build_instructions_profile(const Profiler& profiler) {
  Builder b(profiler);
  instructions_profile(b, profiler);
  return std::move(b.profile());
}

namespace {

// The instructions profile's bytes, given to `out` as they are made.
void stream_instructions_profile(const Profiler& profiler, std::vector<std::string>* modules_without_lines,
                                 const std::function<void(std::string_view)>& out) {
  Builder b(profiler);
  b.stream_samples(0, out);  // the one sample type, instructions
  instructions_profile(b, profiler);
  if (modules_without_lines) *modules_without_lines = without_lines(b.line_weights(), b.profile());
  b.finish_stream();
}

}  // namespace

std::string serialize_instructions_profile(const Profiler& profiler,
                                           std::vector<std::string>* modules_without_lines) {
  std::string raw;
  stream_instructions_profile(profiler, modules_without_lines, [&](std::string_view s) { raw += s; });
  return raw;
}

bool write_instructions_profile(const Profiler& profiler, const std::string& path, std::string& why,
                                std::vector<std::string>* modules_without_lines) {
  GzipFileWriter file(path);
  stream_instructions_profile(profiler, modules_without_lines, [&](std::string_view s) { file.write(s); });
  return file.finish(why);
}

pb::Profile build_memory_profile(const Profiler& profiler, const char* default_type) {
  Builder b(profiler);
  pb::Profile& p = b.profile();
  // Go's four heap types first, in Go's order: pprof's -sample_index and
  // -inuse_space/-alloc_space flags and its defaults find them by name, and
  // tools that assume a heap profile's layout see the same one.
  b.value_type(p.add_sample_type(), "alloc_objects", "count");
  b.value_type(p.add_sample_type(), "alloc_space", "bytes");
  b.value_type(p.add_sample_type(), "inuse_objects", "count");
  b.value_type(p.add_sample_type(), "inuse_space", "bytes");
  b.value_type(p.add_sample_type(), "grows", "count");
  b.value_type(p.add_sample_type(), "grow_space", "bytes");
  const vm::CallTree& tree = profiler.tree();
  const MemoryProfiler* mem = profiler.memory();
  // Sampled values are estimates: rounded here, and never below zero (the
  // weights of frees are subtracted in floating point).
  auto value = [](double v) { return v > 0 ? static_cast<int64_t>(std::llround(v)) : int64_t{0}; };
  const std::vector<MemSite> sites = mem ? mem->sites() : std::vector<MemSite>{};
  const std::vector<GrowEvent> grows = mem ? mem->grows() : std::vector<GrowEvent>{};
  {
    // The leaves and callers below, as build_cpu_profile reads them.
    Builder::Prefetch pf(b, tree);
    for (const MemSite& s : sites) {
      const uint32_t leaf = tree.node(s.node).parent;
      if (leaf == vm::CallTree::kRoot) pf.add(s.node, tree.node(s.node).func, -1);
      else pf.add(leaf, tree.node(leaf).func, b.site_of(tree, s.node));
    }
    for (const GrowEvent& g : grows) pf.add(g.node, tree.node(g.node).func, g.offset);
    pf.read();
  }
  for (const MemSite& s : sites) {
    // The stack starts at the allocator's caller, as in Go's heap profile:
    // `-top` then names who allocates, not malloc. An allocator entered
    // straight from the embedder keeps its own frame.
    // The leaf is at the call to the allocator.
    uint32_t leaf = tree.node(s.node).parent;
    int64_t at = b.site_of(tree, s.node);
    if (leaf == vm::CallTree::kRoot) leaf = s.node, at = -1;
    pb::Sample* ps = p.add_sample();
    if (s.python) b.add_python_stack(ps, leaf, tree.node(leaf).func, at, s.python, profiler);
    else b.add_stack(ps, b.location(tree.node(leaf).func, at), leaf);
    ps->add_value(value(s.alloc_objects));
    ps->add_value(value(s.alloc_bytes));
    ps->add_value(value(s.inuse_objects));
    ps->add_value(value(s.inuse_bytes));
    ps->add_value(0);
    ps->add_value(0);
    pb::Label* l = ps->add_label();
    l->set_key(b.str("allocator"));
    l->set_str(b.str(function_name(tree.node(s.node).func)));
  }
  // One sample per memory.grow, at the instruction, in the order they
  // happened: the memory's size after it and the time are labels, so
  // `-raw` lists the memory's growth over time and `-tags` its sizes.
  for (const GrowEvent& g : grows) {
    pb::Sample* ps = p.add_sample();
    if (g.python) b.add_python_stack(ps, g.node, tree.node(g.node).func, g.offset, g.python, profiler);
    else b.add_stack(ps, b.location(tree.node(g.node).func, g.offset), g.node);
    for (int i = 0; i < 4; ++i) ps->add_value(0);
    ps->add_value(1);
    ps->add_value(static_cast<int64_t>(g.new_bytes - g.old_bytes));
    pb::Label* size = ps->add_label();
    size->set_key(b.str("memory_size"));
    size->set_num(static_cast<int64_t>(g.new_bytes));
    size->set_num_unit(b.str("bytes"));
    if (!profiler.options().deterministic) {
      pb::Label* at = ps->add_label();
      at->set_key(b.str("elapsed"));
      at->set_num(static_cast<int64_t>(g.elapsed_ns));
      at->set_num_unit(b.str("nanoseconds"));
    }
  }
  b.value_type(p.mutable_period_type(), "space", "bytes");
  p.set_period(mem && mem->sample_bytes() ? static_cast<int64_t>(mem->sample_bytes()) : 1);
  if (!profiler.options().deterministic) {
    p.set_time_nanos(static_cast<int64_t>(profiler.start_unix_ns()));
    p.set_duration_nanos(static_cast<int64_t>(profiler.duration_ns()));
  }
  p.set_default_sample_type(b.str(default_type));
  return std::move(p);
}

std::vector<std::string> modules_without_lines(const pb::Profile& profile) {
  // pprof's default: the named default sample type, else the last one.
  int index = profile.sample_type_size() - 1;
  for (int i = 0; i < profile.sample_type_size(); ++i)
    if (profile.default_sample_type() != 0 && profile.sample_type(i).type() == profile.default_sample_type())
      index = i;
  if (index < 0) return {};
  std::unordered_map<uint64_t, const pb::Location*> locations;
  for (const pb::Location& l : profile.location()) locations[l.id()] = &l;
  LineWeights weights;
  for (const pb::Sample& s : profile.sample()) {
    if (s.location_id_size() == 0 || index >= s.value_size() || s.value(index) == 0) continue;
    auto it = locations.find(s.location_id(0));
    if (it == locations.end() || it->second->mapping_id() == 0) continue;
    weigh_lines(weights[it->second->mapping_id()], *it->second, s.value(index));
  }
  return without_lines(weights, profile);
}

bool write_profile(const pb::Profile& profile, const std::string& path, std::string& why) {
  std::string raw;
  if (!profile.SerializeToString(&raw)) {
    why = "cannot serialize the profile";
    return false;
  }
  return write_serialized_profile(raw, path, why);
}

bool write_serialized_profile(std::string_view raw, const std::string& path, std::string& why) {
  std::string gz;
  if (!gzip(raw, gz, why)) return false;
  return write_file_atomic(path, gz, why);
}

std::vector<std::pair<std::string, uint64_t>> instruction_totals(const Profiler& profiler) {
  std::unordered_map<const vm::FuncInst*, uint64_t> by_func;
  std::map<std::string, uint64_t> by_python;
  // threads: every thread's counts (each spawned thread's instance has
  // FuncInsts of its own; they merge by name below).
  for (const auto& [tid, prof] : per_thread(profiler)) {
    const vm::CallTree& tree = prof->tree();
    const std::vector<uint64_t> totals = prof->instruction_totals();
    for (uint32_t n = 1; n < totals.size(); ++n) {
      if (!totals[n]) continue;
      // CPython's context nodes are Python functions (profiler/python_counts.cc).
      if (const PyFrame* pf = vm::CallTree::is_context(tree.node(n).site) ? prof->context_frame(n) : nullptr)
        by_python[pf->function] += totals[n];
      else by_func[tree.node(n).func] += totals[n];
    }
  }
  std::map<std::string, uint64_t> by_name = std::move(by_python);
  for (const auto& [f, c] : by_func) by_name[function_name(f)] += c;
  std::vector<std::pair<std::string, uint64_t>> out(by_name.begin(), by_name.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace wzvm::profiler
