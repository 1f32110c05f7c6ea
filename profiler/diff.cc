// `wzvm report --diff` and `--format=benchmark-json` (profiler/diff.h).

#include "profiler/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>

#include "profiler/viewers.h"

namespace wzvm::profiler {
namespace {

namespace pb = perftools::profiles;
using nlohmann::json;

const std::string& str(const pb::Profile& p, int64_t i) { return profile_string(p, i); }

// "+5.30%", "-0.01%", "new" (from nothing), "" (nothing to nothing).
std::string change_percent(int64_t base, int64_t now) {
  if (base == 0) return now == 0 ? "" : "new";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2f%%",
                100.0 * static_cast<double>(now - base) / static_cast<double>(base));
  return buf;
}

std::string signed_value(int64_t v, const std::string& unit) {
  // In two steps: GCC 12 warns (-Wrestrict, wrongly) on `"+" + std::string&&`.
  std::string s = v > 0 ? "+" : v < 0 ? "-" : "";
  return s += format_value(v < 0 ? -v : v, unit);
}

std::string pad_left(const std::string& s, size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

int64_t value_of(const std::map<std::string, int64_t>& m, const std::string& name) {
  auto it = m.find(name);
  return it == m.end() ? 0 : it->second;
}

// Growth beyond `limit` percent; growth from nothing always exceeds it.
bool grew_beyond(int64_t base, int64_t now, double limit) {
  if (now <= base) return false;
  if (base == 0) return true;
  return 100.0 * static_cast<double>(now - base) / static_cast<double>(base) > limit;
}

}  // namespace

int sample_index(const pb::Profile& p, const std::string& type) {
  if (type.empty()) return default_sample_index(p);
  for (int i = 0; i < p.sample_type_size(); ++i)
    if (str(p, p.sample_type(i).type()) == type) return i;
  return -1;
}

std::vector<FunctionValues> function_values(const pb::Profile& p) {
  const int ntypes = p.sample_type_size();
  std::vector<FunctionValues> out(static_cast<size_t>(ntypes));
  for (int t = 0; t < ntypes; ++t) {
    out[t].type = str(p, p.sample_type(t).type());
    out[t].unit = str(p, p.sample_type(t).unit());
  }
  std::set<std::string> seen;  // a recursive function counts once toward cum
  for_each_sample_stack(p, [&](const pb::Sample& s, const std::vector<StackFrame>& stack) {
    if (stack.empty()) return;
    for (int t = 0; t < ntypes && t < s.value_size(); ++t) {
      const int64_t value = s.value(t);
      if (value == 0) continue;
      FunctionValues& v = out[t];
      seen.clear();
      for (const StackFrame& f : stack)
        if (seen.insert(f.name).second) v.cum[f.name] += value;
      v.self[stack.back().name] += value;
      v.total += value;
    }
  });
  return out;
}

Diff diff_profiles(const FunctionValues& base, const FunctionValues& now, const std::string& base_name,
                   const std::string& new_name, const DiffOptions& options) {
  Diff d;
  const std::string& unit = now.unit.empty() ? base.unit : now.unit;
  std::string& out = d.text;
  out += "Base: " + base_name + "\nNew:  " + new_name + "\n";
  out += "Sample type: " + (now.type.empty() ? base.type : now.type) + "/" + unit + "\n";
  out += "Total: " + format_value(base.total, unit) + " -> " + format_value(now.total, unit) + "  " +
         signed_value(now.total - base.total, unit) + " (" +
         (base.total == 0 && now.total == 0 ? "no change" : change_percent(base.total, now.total)) + ")\n";

  // Every function of either profile, by the size of its self change.
  struct Row {
    std::string name;
    int64_t self_base, self_new, cum_base, cum_new;
  };
  std::vector<Row> rows;
  std::set<std::string> names;
  for (const auto* m : {&base.cum, &now.cum})
    for (const auto& [n, value] : *m) names.insert(n);
  for (const std::string& n : names) {
    Row r{n, value_of(base.self, n), value_of(now.self, n), value_of(base.cum, n), value_of(now.cum, n)};
    if (r.self_base != r.self_new || r.cum_base != r.cum_new) rows.push_back(r);
  }
  // Ties by name (names is sorted, the sort stable): the same two profiles
  // always give the same report.
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::llabs(a.self_new - a.self_base) > std::llabs(b.self_new - b.self_base);
  });
  if (rows.empty()) {
    out += "\nNo function changed.\n";
  } else {
    out += "\nFunctions that changed, largest change of self value first (" + std::to_string(rows.size()) +
           " changed" + (rows.size() > options.top ? ", " + std::to_string(options.top) + " shown" : "") +
           "):\n";
    out += "  " + pad_left("self base", 14) + pad_left("self new", 14) + pad_left("change", 14) +
           pad_left("%", 10) + pad_left("cum %", 10) + "  function\n";
    for (size_t i = 0; i < rows.size() && i < options.top; ++i) {
      const Row& r = rows[i];
      out += "  " + pad_left(format_value(r.self_base, unit), 14) +
             pad_left(format_value(r.self_new, unit), 14) +
             pad_left(signed_value(r.self_new - r.self_base, unit), 14) +
             pad_left(change_percent(r.self_base, r.self_new), 10) +
             pad_left(change_percent(r.cum_base, r.cum_new), 10) + "  " + r.name + "\n";
    }
  }

  if (!options.fail_above) return d;
  const double limit = *options.fail_above;
  char lim[32];
  std::snprintf(lim, sizeof lim, "%.2f%%", limit);
  out += "\nGate: fail above +" + std::string(lim) + "\n";
  auto gate = [&](const std::string& what, int64_t b, int64_t n) {
    const bool fail = grew_beyond(b, n, limit);
    const std::string change = b == 0 && n == 0 ? "no change" : change_percent(b, n);
    out += std::string("  ") + (fail ? "FAIL" : "ok  ") + "  " + what + ": " + format_value(b, unit) +
           " -> " + format_value(n, unit) + " (" + change + ")\n";
    if (fail) d.failures.push_back(what + " grew " + change);
  };
  gate("total", base.total, now.total);
  for (const std::string& f : options.functions) {
    if (!base.cum.count(f) && !now.cum.count(f)) {
      out += "  FAIL  " + f + ": in neither profile\n";
      d.failures.push_back(f + ": in neither profile");
      continue;
    }
    gate(f + " (cumulative)", value_of(base.cum, f), value_of(now.cum, f));
  }
  return d;
}

std::string benchmark_json(const FunctionValues& v, const std::string& name) {
  json benchmarks = json::array();
  auto add = [&](const std::string& bench, int64_t cum, int64_t self) {
    json b = {{"name", bench},
              {"run_name", bench},
              {"run_type", "iteration"},
              {"repetitions", 1},
              {"repetition_index", 0},
              {"threads", 1},
              {"iterations", 1},
              {"real_time", cum},
              {"cpu_time", cum},
              {"time_unit", "ns"},
              {"cum", cum},
              {"self", self}};
    benchmarks.push_back(std::move(b));
  };
  add("(total)", v.total, v.total);
  for (const auto& [fn, cum] : v.cum) add(fn, cum, value_of(v.self, fn));
  json out = {{"context",
               {{"executable", "wzvm report"},
                {"library_build_type", "release"},
                {"wzvm_profile", name},
                {"wzvm_sample_type", v.type + "/" + v.unit},
                {"wzvm_note", "real_time and cpu_time hold the function's cumulative " + v.type + " (" +
                                  v.unit + "), not a time"}}},
              {"benchmarks", std::move(benchmarks)}};
  return out.dump(2) + "\n";
}

}  // namespace wzvm::profiler
