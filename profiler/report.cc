// `wzvm report` and --profile-summary: a text summary of a pprof profile.

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "profiler/viewers.h"

namespace wzvm::profiler {
namespace {

namespace pb = perftools::profiles;

const std::string& str(const pb::Profile& p, int64_t i) {
  static const std::string empty;
  return i > 0 && i < p.string_table_size() ? p.string_table(static_cast<int>(i)) : empty;
}

// Values as pprof prints them: times and sizes scaled, counts exact (shell
// tests compare instruction counts as strings).
std::string format_value(int64_t v, const std::string& unit) {
  char buf[64];
  const double d = static_cast<double>(v);
  if (unit == "nanoseconds") {
    if (v < 1000) std::snprintf(buf, sizeof buf, "%lldns", static_cast<long long>(v));
    else if (v < 1000000) std::snprintf(buf, sizeof buf, "%.2fus", d / 1e3);
    else if (v < 1000000000) std::snprintf(buf, sizeof buf, "%.2fms", d / 1e6);
    else std::snprintf(buf, sizeof buf, "%.2fs", d / 1e9);
  } else if (unit == "bytes") {
    if (v < 1024) std::snprintf(buf, sizeof buf, "%lldB", static_cast<long long>(v));
    else if (v < (1 << 20)) std::snprintf(buf, sizeof buf, "%.2fKiB", d / 1024);
    else if (v < (1 << 30)) std::snprintf(buf, sizeof buf, "%.2fMiB", d / (1 << 20));
    else std::snprintf(buf, sizeof buf, "%.2fGiB", d / (1 << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  }
  return buf;
}

std::string percent(int64_t v, int64_t total) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f%%", total ? 100.0 * static_cast<double>(v) / static_cast<double>(total) : 0.0);
  return buf;
}

std::string pad_left(const std::string& s, size_t w) { return s.size() >= w ? s : std::string(w - s.size(), ' ') + s; }

}  // namespace

std::string report_text(const pb::Profile& p, const std::string& name, size_t top) {
  std::string out = "Profile: " + name + "\n";
  std::string types;
  const int dflt = default_sample_index(p);
  for (int t = 0; t < p.sample_type_size(); ++t)
    types += (t ? ", " : "") + sample_type_name(p, t) + (t == dflt ? " (default)" : "");
  out += "Sample types: " + types + "\n";
  if (p.duration_nanos() > 0) out += "Duration: " + format_value(p.duration_nanos(), "nanoseconds") + "\n";

  // Per sample: the distinct function names of its stack (cumulative counts
  // a recursive function once) and its leaf (self).
  struct Row {
    std::vector<int64_t> self, cum;
  };
  const size_t ntypes = static_cast<size_t>(p.sample_type_size());
  std::map<std::string, Row> rows;
  std::vector<int64_t> totals(ntypes, 0);
  for (const pb::Sample& s : p.sample()) {
    std::vector<StackFrame> stack = sample_stack(p, s);
    if (stack.empty()) continue;
    std::set<std::string> seen;
    for (const StackFrame& f : stack) {
      Row& r = rows[f.name];
      r.self.resize(ntypes, 0);
      r.cum.resize(ntypes, 0);
      if (!seen.insert(f.name).second) continue;
      for (size_t t = 0; t < ntypes && t < static_cast<size_t>(s.value_size()); ++t) r.cum[t] += s.value(static_cast<int>(t));
    }
    Row& leaf = rows[stack.back().name];
    for (size_t t = 0; t < ntypes && t < static_cast<size_t>(s.value_size()); ++t) {
      leaf.self[t] += s.value(static_cast<int>(t));
      totals[t] += s.value(static_cast<int>(t));
    }
  }
  for (size_t t = 0; t < ntypes; ++t) {
    if (totals[t] == 0) continue;
    const std::string unit = str(p, p.sample_type(static_cast<int>(t)).unit());
    out += "\n" + sample_type_name(p, static_cast<int>(t)) + ": total " + format_value(totals[t], unit) + "\n";
    std::vector<std::pair<std::string, const Row*>> sorted;
    for (const auto& [n, r] : rows) sorted.emplace_back(n, &r);
    // Ties by name (rows is a sorted map and the sort is stable): the same
    // profile always prints the same report.
    for (int by_cum = 0; by_cum < 2; ++by_cum) {
      std::stable_sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) {
        return (by_cum ? a.second->cum[t] > b.second->cum[t] : a.second->self[t] > b.second->self[t]);
      });
      out += by_cum ? "  top " + std::to_string(top) + " by cumulative:\n" : "  top " + std::to_string(top) + " by self:\n";
      out += "  " + pad_left("self", 12) + pad_left("self%", 9) + pad_left("cum", 12) + pad_left("cum%", 9) + "  function\n";
      size_t shown = 0;
      for (const auto& [n, r] : sorted) {
        if (shown == top) break;
        if ((by_cum ? r->cum[t] : r->self[t]) == 0) break;
        out += "  " + pad_left(format_value(r->self[t], unit), 12) + pad_left(percent(r->self[t], totals[t]), 9) +
               pad_left(format_value(r->cum[t], unit), 12) + pad_left(percent(r->cum[t], totals[t]), 9) + "  " + n + "\n";
        ++shown;
      }
    }
  }
  return out;
}

bool read_profile(const std::string& path, pb::Profile& profile, std::string& why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why = "cannot open file";
    return false;
  }
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string raw;
  if (data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f && static_cast<unsigned char>(data[1]) == 0x8b) {
    z_stream zs{};
    // 15 + 16: gzip only (pprof files are gzip members).
    if (inflateInit2(&zs, 15 + 16) != Z_OK) {
      why = "zlib: inflateInit2 failed";
      return false;
    }
    zs.next_in = reinterpret_cast<Bytef*>(data.data());
    zs.avail_in = static_cast<uInt>(data.size());
    char buf[1 << 16];
    int rc = Z_OK;
    while (rc == Z_OK) {
      zs.next_out = reinterpret_cast<Bytef*>(buf);
      zs.avail_out = sizeof buf;
      rc = inflate(&zs, Z_NO_FLUSH);
      raw.append(buf, sizeof buf - zs.avail_out);
      if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;
    }
    inflateEnd(&zs);
    if (rc != Z_STREAM_END) {
      why = "not a valid gzip file (truncated or corrupt)";
      return false;
    }
  } else {
    raw = std::move(data);
  }
  if (!profile.ParseFromString(raw) || profile.string_table_size() == 0) {
    why = "not a pprof profile";
    return false;
  }
  return true;
}

}  // namespace wzvm::profiler
