// `wzvm report` and --profile-summary: a text summary of a pprof profile.

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "profiler/diff.h"
#include "profiler/viewers.h"

namespace wzvm::profiler {
namespace {

namespace pb = perftools::profiles;

std::string percent(int64_t v, int64_t total) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f%%",
                total ? 100.0 * static_cast<double>(v) / static_cast<double>(total) : 0.0);
  return buf;
}

std::string pad_left(const std::string& s, size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

}  // namespace

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

std::string report_text(const pb::Profile& p, const std::string& name, size_t top) {
  std::string out = "Profile: " + name + "\n";
  std::string types;
  const int dflt = default_sample_index(p);
  for (int t = 0; t < p.sample_type_size(); ++t)
    types += (t ? ", " : "") + sample_type_name(p, t) + (t == dflt ? " (default)" : "");
  out += "Sample types: " + types + "\n";
  if (p.duration_nanos() > 0) out += "Duration: " + format_value(p.duration_nanos(), "nanoseconds") + "\n";

  const std::vector<FunctionValues> values = function_values(p);
  const size_t ntypes = values.size();
  for (size_t t = 0; t < ntypes; ++t) {
    const FunctionValues& v = values[t];
    if (v.total == 0) continue;
    out +=
        "\n" + sample_type_name(p, static_cast<int>(t)) + ": total " + format_value(v.total, v.unit) + "\n";
    // Every function on a stack, by name; ties keep that order (the sort is
    // stable): the same profile always prints the same report.
    struct Row {
      const std::string* name;
      int64_t self, cum;
    };
    std::vector<Row> sorted;
    for (const auto& [n, cum] : v.cum) {
      auto it = v.self.find(n);
      sorted.push_back({&n, it == v.self.end() ? 0 : it->second, cum});
    }
    for (int by_cum = 0; by_cum < 2; ++by_cum) {
      std::stable_sort(sorted.begin(), sorted.end(),
                       [&](const Row& a, const Row& b) { return by_cum ? a.cum > b.cum : a.self > b.self; });
      out += by_cum ? "  top " + std::to_string(top) + " by cumulative:\n"
                    : "  top " + std::to_string(top) + " by self:\n";
      out += "  " + pad_left("self", 12) + pad_left("self%", 9) + pad_left("cum", 12) + pad_left("cum%", 9) +
             "  function\n";
      size_t shown = 0;
      for (const Row& r : sorted) {
        if (shown == top) break;
        if ((by_cum ? r.cum : r.self) == 0) break;
        out += "  " + pad_left(format_value(r.self, v.unit), 12) + pad_left(percent(r.self, v.total), 9) +
               pad_left(format_value(r.cum, v.unit), 12) + pad_left(percent(r.cum, v.total), 9) + "  " +
               *r.name + "\n";
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
  if (data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
      static_cast<unsigned char>(data[1]) == 0x8b) {
    z_stream zs{};
    // 15 + 16: gzip only. A pprof file is one gzip member or several in a
    // row (wzvm writes a member per MiB: profiler/output.h).
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
      if (rc == Z_STREAM_END && zs.avail_in > 0 && inflateReset(&zs) == Z_OK) rc = Z_OK;  // the next member
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
