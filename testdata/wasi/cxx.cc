// A C++ (libc++) WASI program: iostreams, fstream, containers, <chrono>,
// <random>. (Debian's wasm32 libc++ is built without std::filesystem.)
// Usage: cxx DIR WORD...   (tests/wasi_test.cc checks its output)
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::string dir = argv[1];
  const char* greeting = std::getenv("GREETING");
  std::cout << "GREETING=" << (greeting ? greeting : "(unset)") << "\n";
  // Count words from the arguments into a file, read it back through ifstream.
  std::map<std::string, int> counts;
  for (int i = 2; i < argc; ++i) ++counts[argv[i]];
  {
    std::ofstream out(dir + "/counts.txt");
    for (const auto& [w, n] : counts) out << w << ' ' << n << '\n';
  }
  std::ifstream in(dir + "/counts.txt");
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  std::sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.size() < b.size() || (a.size() == b.size() && a < b); });
  for (const auto& l : lines) std::cout << l << "\n";
  mkdir((dir + "/sub").c_str(), 0755);
  std::ofstream(dir + "/sub/x") << "x";
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) names.push_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  std::ostringstream joined;
  for (const auto& n : names) joined << n << ';';
  std::cout << "dir: " << joined.str() << "\n";
  auto t0 = std::chrono::steady_clock::now();
  std::random_device rd;
  std::mt19937 gen(rd());
  std::uniform_int_distribution<int> dist(1, 6);
  int roll = dist(gen);
  std::cout << "die in range: " << (roll >= 1 && roll <= 6) << "\n";
  std::cout << "clock ok: " << (std::chrono::steady_clock::now() >= t0) << "\n";
  std::cerr << "to stderr\n";
  return 3;
}
