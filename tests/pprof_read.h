#pragma once
// Reading a written profile back in tests: gzip off, then protobuf.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "profiler/profile.pb.h"

namespace wzvm::test {

// Inflates a gzip stream, its members one after another (wzvm writes one
// per MiB: profiler/output.h); false when it is not whole (a cut file is an
// answer for some tests, so no expectations here).
inline bool try_gunzip(const std::string& gz, std::string& out) {
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, 15 + 32) != Z_OK) return false;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  int rc = Z_OK;
  char chunk[1 << 16];
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(chunk);
    zs.avail_out = sizeof chunk;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(chunk, sizeof chunk - zs.avail_out);
    if (rc == Z_STREAM_END && zs.avail_in > 0 && inflateReset(&zs) == Z_OK) rc = Z_OK;
  }
  inflateEnd(&zs);
  return rc == Z_STREAM_END;
}

inline std::string gunzip(const std::string& gz) {
  std::string out;
  EXPECT_TRUE(try_gunzip(gz, out)) << "not a whole gzip stream";
  return out;
}

inline perftools::profiles::Profile read_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string gz{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  perftools::profiles::Profile p;
  EXPECT_TRUE(p.ParseFromString(gunzip(gz))) << path;
  return p;
}

}  // namespace wzvm::test
