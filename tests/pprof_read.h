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

inline std::string gunzip(const std::string& gz) {
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  EXPECT_EQ(inflateInit2(&zs, 15 + 32), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  std::string out;
  int rc = Z_OK;
  char chunk[1 << 16];
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(chunk);
    zs.avail_out = sizeof chunk;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(chunk, sizeof chunk - zs.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END);
  inflateEnd(&zs);
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
