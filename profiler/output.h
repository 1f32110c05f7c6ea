#pragma once
// Writing profile files: gzip (zlib) and an atomic write (temporary file in
// the same directory, then rename), so a reader never sees half a profile and
// a failed write leaves nothing behind.

#include <string>
#include <string_view>

namespace wzvm::profiler {

// gzip member with no file name and mtime 0, so equal inputs give equal bytes.
bool gzip(std::string_view data, std::string& out, std::string& why);

// Replaces `path` with `data` as one step (rename(2) within its directory).
bool write_file_atomic(const std::string& path, std::string_view data, std::string& why);

}  // namespace wzvm::profiler
