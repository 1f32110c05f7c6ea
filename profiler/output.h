#pragma once
// Writing profile files: gzip (zlib) and an atomic write (temporary file in
// the same directory, then rename), so a reader never sees half a profile and
// a failed write leaves nothing behind.

#include <memory>
#include <string>
#include <string_view>

struct z_stream_s;  // zlib's z_stream

namespace wzvm::profiler {

// gzip member with no file name and mtime 0, so equal inputs give equal bytes.
bool gzip(std::string_view data, std::string& out, std::string& why);

// Replaces `path` with `data` as one step (rename(2) within its directory).
bool write_file_atomic(const std::string& path, std::string_view data, std::string& why);

// A gzip file written as its data comes, so that neither the data nor its
// gzip need be held whole: the bytes are those gzip() gives for all of it
// at once (zlib's output does not depend on how its input is split when
// nothing is flushed before the end), written to a temporary file that
// finish() renames to `path`, as write_file_atomic does. A profile of a
// deep recursion is hundreds of megabytes of protobuf (docs/RATIONALE.md,
// "Profiling overhead").
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
  bool deflate_out(int flush);  // compresses zs_'s input, writes what comes out
  std::string path_, tmp_, why_;
  int fd_ = -1;
  std::unique_ptr<z_stream_s> zs_;  // null until deflateInit2 succeeded
  std::string out_;                 // zlib's output buffer
};

}  // namespace wzvm::profiler
