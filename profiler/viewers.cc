#include "profiler/viewers.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "profiler/flamegraph_template.h"  // generated from profiler/flamegraph.html

namespace wzvm::profiler {
namespace {

namespace pb = perftools::profiles;
using nlohmann::json;

const std::string& str(const pb::Profile& p, int64_t i) { return profile_string(p, i); }

// Id -> message lookups (pprof ids are not indices).
struct Index {
  std::unordered_map<uint64_t, const pb::Location*> locations;
  std::unordered_map<uint64_t, const pb::Function*> functions;
  explicit Index(const pb::Profile& p) {
    for (const pb::Location& l : p.location()) locations[l.id()] = &l;
    for (const pb::Function& f : p.function()) functions[f.id()] = &f;
  }
};

std::vector<StackFrame> expand(const pb::Profile& p, const Index& ix, const pb::Sample& s) {
  std::vector<StackFrame> out;
  // location_id is leaf first, a Location's lines innermost first: walking
  // both backwards gives root first.
  for (int i = s.location_id_size() - 1; i >= 0; --i) {
    auto it = ix.locations.find(s.location_id(i));
    if (it == ix.locations.end()) continue;
    const pb::Location& loc = *it->second;
    if (loc.line_size() == 0) {  // an unsymbolized address
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(loc.address()));
      out.push_back({buf, "", 0, 0, false});
      continue;
    }
    for (int j = loc.line_size() - 1; j >= 0; --j) {
      const pb::Line& line = loc.line(j);
      StackFrame f;
      if (auto fi = ix.functions.find(line.function_id()); fi != ix.functions.end()) {
        f.name = str(p, fi->second->name());
        f.file = str(p, fi->second->filename());
        f.start_line = fi->second->start_line();
      }
      if (f.name.empty()) f.name = "(unknown)";
      f.line = line.line();
      f.inlined = j < loc.line_size() - 1;
      out.push_back(std::move(f));
    }
  }
  return out;
}

std::string escape_folded(const std::string& name) {
  std::string out;
  for (char c : name) {
    switch (c) {
      case '%':
        out += "%25";
        break;
      case ';':
        out += "%3B";
        break;
      case '\n':
        out += "%0A";
        break;
      case '\r':
        out += "%0D";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// speedscope's units; anything else (count, calls, ...) is 'none'.
const char* speedscope_unit(const std::string& unit) {
  for (const char* u : {"nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"})
    if (unit == u) return u;
  return "none";
}

// The key that makes two frames one box in a flame graph: a function, not a
// line (lines go to the tooltip), and whether it was inlined there.
std::string frame_key(const StackFrame& f) {
  return f.name + '\0' + f.file + '\0' + std::to_string(f.start_line) + (f.inlined ? "\1" : "\0");
}

}  // namespace

std::vector<StackFrame> sample_stack(const pb::Profile& profile, const pb::Sample& sample) {
  return expand(profile, Index(profile), sample);
}

void for_each_sample_stack(
    const pb::Profile& profile,
    const std::function<void(const pb::Sample&, const std::vector<StackFrame>&)>& visit) {
  const Index ix(profile);
  for (const pb::Sample& s : profile.sample()) visit(s, expand(profile, ix, s));
}

const std::string& profile_string(const pb::Profile& p, int64_t i) {
  static const std::string empty;
  return i > 0 && i < p.string_table_size() ? p.string_table(static_cast<int>(i)) : empty;
}

int default_sample_index(const pb::Profile& p) {
  if (p.default_sample_type() != 0)
    for (int i = 0; i < p.sample_type_size(); ++i)
      if (p.sample_type(i).type() == p.default_sample_type()) return i;
  return p.sample_type_size() - 1;
}

std::string sample_type_name(const pb::Profile& p, int index) {
  if (index < 0 || index >= p.sample_type_size()) return "";
  return str(p, p.sample_type(index).type()) + "/" + str(p, p.sample_type(index).unit());
}

std::string folded_text(const pb::Profile& p, int index) {
  if (index < 0) index = default_sample_index(p);
  if (index < 0) return "";
  Index ix(p);
  std::map<std::string, int64_t> stacks;  // sorted: equal profiles give equal files
  for (const pb::Sample& s : p.sample()) {
    if (index >= s.value_size() || s.value(index) == 0) continue;
    std::string line;
    for (const StackFrame& f : expand(p, ix, s)) {
      if (!line.empty()) line += ';';
      line += escape_folded(f.name);
    }
    if (line.empty()) line = "(no frames)";
    stacks[line] += s.value(index);
  }
  std::string out;
  for (const auto& [stack, value] : stacks) out += stack + " " + std::to_string(value) + "\n";
  return out;
}

std::string speedscope_json(const pb::Profile& p, const std::string& name) {
  Index ix(p);
  json frames = json::array();
  std::unordered_map<std::string, size_t> frame_ids;
  std::vector<std::vector<size_t>> stacks;  // per pprof sample, frame ids root first
  for (const pb::Sample& s : p.sample()) {
    std::vector<size_t> ids;
    for (const StackFrame& f : expand(p, ix, s)) {
      auto [it, inserted] = frame_ids.try_emplace(frame_key(f), frames.size());
      if (inserted) {
        json fr = {{"name", f.name}};
        if (!f.file.empty()) fr["file"] = f.file;
        if (f.start_line > 0) fr["line"] = f.start_line;
        frames.push_back(std::move(fr));
      }
      ids.push_back(it->second);
    }
    stacks.push_back(std::move(ids));
  }
  json profiles = json::array();
  int active = 0;
  const int dflt = default_sample_index(p);
  for (int t = 0; t < p.sample_type_size(); ++t) {
    // Speedscope's frames are functions, so pprof samples that differ only
    // in lines (one per instruction in an instructions profile) merge into
    // one stack, in order of first appearance.
    std::map<std::vector<size_t>, size_t> seen;
    std::vector<const std::vector<size_t>*> order;
    std::vector<int64_t> values;
    int64_t total = 0;
    for (int i = 0; i < p.sample_size(); ++i) {
      const pb::Sample& s = p.sample(i);
      if (t >= s.value_size() || s.value(t) == 0) continue;
      const std::vector<size_t>& stack = stacks[static_cast<size_t>(i)];
      auto [it, inserted] = seen.try_emplace(stack, order.size());
      if (inserted) {
        order.push_back(&stack);
        values.push_back(0);
      }
      values[it->second] += s.value(t);
      total += s.value(t);
    }
    json samples = json::array(), weights = json::array();
    for (size_t k = 0; k < order.size(); ++k) {
      samples.push_back(*order[k]);
      weights.push_back(values[k]);
    }
    if (total == 0) continue;
    if (t == dflt) active = static_cast<int>(profiles.size());
    const std::string unit = str(p, p.sample_type(t).unit());
    profiles.push_back({{"type", "sampled"},
                        {"name", name + " " + sample_type_name(p, t)},
                        {"unit", speedscope_unit(unit)},
                        {"startValue", 0},
                        {"endValue", total},
                        {"samples", std::move(samples)},
                        {"weights", std::move(weights)}});
  }
  json file = {{"$schema", "https://www.speedscope.app/file-format-schema.json"},
               {"exporter", "wzvm"},
               {"name", name},
               {"activeProfileIndex", active},
               {"shared", {{"frames", std::move(frames)}}},
               {"profiles", std::move(profiles)}};
  return file.dump() + "\n";
}

std::string flamegraph_html(const pb::Profile& p, const std::string& title) {
  // The call tree with self values per sample type, function-level frames.
  // Nodes are JSON arrays [frame, [self...], [children...], {line: [self...]}]
  // to keep large profiles small.
  struct Node {
    size_t frame = 0;
    std::vector<int64_t> self;
    std::map<int64_t, std::vector<int64_t>> lines;
    std::map<size_t, size_t> children;  // frame -> node index
  };
  const size_t ntypes = static_cast<size_t>(p.sample_type_size());
  Index ix(p);
  std::vector<Node> nodes(1);
  nodes[0].self.assign(ntypes, 0);
  json frames = json::array();
  std::unordered_map<std::string, size_t> frame_ids;
  for (const pb::Sample& s : p.sample()) {
    size_t n = 0;
    std::vector<StackFrame> stack = expand(p, ix, s);
    for (const StackFrame& f : stack) {
      auto [fit, fnew] = frame_ids.try_emplace(frame_key(f), frames.size());
      if (fnew) frames.push_back({f.name, f.file, f.start_line, f.inlined ? 1 : 0});
      auto [cit, cnew] = nodes[n].children.try_emplace(fit->second, nodes.size());
      if (cnew) {
        nodes.push_back({});
        nodes.back().frame = fit->second;
        nodes.back().self.assign(ntypes, 0);
      }
      n = cit->second;
    }
    Node& leaf = nodes[n];
    std::vector<int64_t>* line_vals = nullptr;
    if (!stack.empty() && stack.back().line > 0) {
      line_vals = &leaf.lines[stack.back().line];
      line_vals->resize(ntypes, 0);
    }
    for (size_t t = 0; t < ntypes && t < static_cast<size_t>(s.value_size()); ++t) {
      leaf.self[t] += s.value(static_cast<int>(t));
      if (line_vals) (*line_vals)[t] += s.value(static_cast<int>(t));
    }
  }
  // Children are built before parents are emitted: nodes only ever point to
  // later indices, so a reverse walk can assemble each subtree bottom up.
  std::vector<json> built(nodes.size());
  for (size_t i = nodes.size(); i-- > 0;) {
    Node& n = nodes[i];
    json children = json::array();
    for (auto& [frame, child] : n.children) children.push_back(std::move(built[child]));
    json node = json::array({i == 0 ? -1 : static_cast<int64_t>(n.frame), n.self, std::move(children)});
    if (!n.lines.empty()) {
      json lines = json::object();
      for (auto& [line, vals] : n.lines) lines[std::to_string(line)] = vals;
      node.push_back(std::move(lines));
    }
    built[i] = std::move(node);
  }
  json types = json::array();
  for (int t = 0; t < p.sample_type_size(); ++t)
    types.push_back({str(p, p.sample_type(t).type()), str(p, p.sample_type(t).unit())});
  json data = {{"title", title},
               {"types", std::move(types)},
               {"default", std::max(default_sample_index(p), 0)},
               {"frames", std::move(frames)},
               {"root", std::move(built[0])}};
  // Inside <script>, "</" could close the element: JSON allows "<\/".
  std::string payload = data.dump();
  for (size_t pos = 0; (pos = payload.find("</", pos)) != std::string::npos; pos += 3)
    payload.replace(pos, 2, "<\\/");
  std::string html_title;
  for (char c : title) {
    switch (c) {
      case '&':
        html_title += "&amp;";
        break;
      case '<':
        html_title += "&lt;";
        break;
      case '>':
        html_title += "&gt;";
        break;
      case '"':
        html_title += "&quot;";
        break;
      default:
        html_title += c;
    }
  }
  std::string page = kFlamegraphTemplate;
  auto put = [&page](const std::string& key, const std::string& value) {
    for (size_t pos = 0; (pos = page.find(key, pos)) != std::string::npos; pos += value.size())
      page.replace(pos, key.size(), value);
  };
  put("{{TITLE}}", html_title);
  put("{{DATA}}", payload);  // last: the data may itself contain "{{TITLE}}"
  return page;
}

}  // namespace wzvm::profiler
