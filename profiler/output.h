#pragma once
// Writing profile files: gzip (libdeflate) and an atomic write (temporary
// file in the same directory, then rename), so a reader never sees half a
// profile and a failed write leaves nothing behind.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

struct libdeflate_compressor;

namespace wzvm::profiler {

// What gzip() and GzipFileWriter compress as one gzip member: a file is the
// members of its data's consecutive pieces of this size (the last one
// shorter; one empty member for no data). gzip readers read concatenated
// members as one stream (RFC 1952; Go's compress/gzip, zlib's gzread); a
// reader that inflates by hand must go on after each member's end
// (profiler/report.cc, read_profile). Each member has no file name and mtime
// 0, so equal inputs give equal bytes.
inline constexpr size_t kGzipMember = size_t{1} << 20;

bool gzip(std::string_view data, std::string& out, std::string& why);

// Replaces `path` with `data` as one step (rename(2) within its directory).
bool write_file_atomic(const std::string& path, std::string_view data, std::string& why);

// A gzip file written as its data comes, so that neither the data nor its
// gzip need be held whole: the bytes are those gzip() gives for all of it
// at once (the members cut the data at the same places however writes split
// it), written to a temporary file that finish() renames to `path`, as
// write_file_atomic does. A profile of a deep recursion is hundreds of
// megabytes of protobuf (docs/RATIONALE.md, "Profiling overhead").
struct MemberBuffer;  // output.cc

class GzipFileWriter {
 public:
  explicit GzipFileWriter(std::string path);
  ~GzipFileWriter();  // unfinished: the temporary file is removed
  GzipFileWriter(const GzipFileWriter&) = delete;
  GzipFileWriter& operator=(const GzipFileWriter&) = delete;
  // After an error, writes do nothing and finish() reports it.
  void write(std::string_view data);
  bool finish(std::string& why);

 private:
  void member(std::string_view piece);  // compresses one member and writes it
  std::string path_, tmp_, why_;
  int fd_ = -1;
  libdeflate_compressor* c_ = nullptr;  // null until allocated
  std::string pending_;                 // data not yet a whole member
  std::unique_ptr<MemberBuffer> out_;   // a member's compressed bytes
  bool wrote_ = false;                  // a member was written
};

}  // namespace wzvm::profiler
