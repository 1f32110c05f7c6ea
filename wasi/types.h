#pragma once
// wasi_snapshot_preview1 types: constants and the byte layouts of the records
// the guest passes by pointer, from the witx
// (https://github.com/WebAssembly/WASI/blob/main/legacy/preview1/docs.md).
// Layouts are written as offsets, never as host structs, so host padding and
// alignment cannot leak into guest memory.

#include <cstdint>

namespace wzvm::wasi {

enum class Errno : uint16_t {
#define WZVM_WASI_ERRNO(name, value) name = value,
#include "wasi/errno.def"
#undef WZVM_WASI_ERRNO
};
const char* errno_name(Errno e);  // "ebadf"

// Host errno -> WASI errno (EXDEV from RESOLVE_BENEATH becomes enotcapable
// at the sandbox, not here).
Errno from_host_errno(int e);

namespace filetype {
constexpr uint8_t unknown = 0, block_device = 1, character_device = 2, directory = 3, regular_file = 4,
                  socket_dgram = 5, socket_stream = 6, symbolic_link = 7;
}

namespace clockid {
constexpr uint32_t realtime = 0, monotonic = 1, process_cputime = 2, thread_cputime = 3;
}

namespace whence {
constexpr uint32_t set = 0, cur = 1, end = 2;
}

namespace fdflags {
constexpr uint16_t append = 1, dsync = 2, nonblock = 4, rsync = 8, sync = 16;
constexpr uint16_t all = 31;
}  // namespace fdflags

namespace oflags {
constexpr uint16_t creat = 1, directory = 2, excl = 4, trunc = 8;
constexpr uint16_t all = 15;
}  // namespace oflags

namespace lookupflags {
constexpr uint32_t symlink_follow = 1;
}

namespace fstflags {
constexpr uint16_t atim = 1, atim_now = 2, mtim = 4, mtim_now = 8;
}

namespace eventtype {
constexpr uint8_t clock = 0, fd_read = 1, fd_write = 2;
}

namespace riflags {
constexpr uint16_t recv_peek = 1, recv_waitall = 2;
}
namespace roflags {
constexpr uint16_t recv_data_truncated = 1;
}
namespace sdflags {
constexpr uint8_t rd = 1, wr = 2;
}

// Rights (witx `rights`, u64): bit N.
namespace rights {
constexpr uint64_t fd_datasync = 1ull << 0, fd_read = 1ull << 1, fd_seek = 1ull << 2,
                   fd_fdstat_set_flags = 1ull << 3, fd_sync = 1ull << 4, fd_tell = 1ull << 5,
                   fd_write = 1ull << 6, fd_advise = 1ull << 7, fd_allocate = 1ull << 8,
                   path_create_directory = 1ull << 9, path_create_file = 1ull << 10,
                   path_link_source = 1ull << 11, path_link_target = 1ull << 12, path_open = 1ull << 13,
                   fd_readdir = 1ull << 14, path_readlink = 1ull << 15, path_rename_source = 1ull << 16,
                   path_rename_target = 1ull << 17, path_filestat_get = 1ull << 18,
                   path_filestat_set_size = 1ull << 19, path_filestat_set_times = 1ull << 20,
                   fd_filestat_get = 1ull << 21, fd_filestat_set_size = 1ull << 22,
                   fd_filestat_set_times = 1ull << 23, path_symlink = 1ull << 24,
                   path_remove_directory = 1ull << 25, path_unlink_file = 1ull << 26,
                   poll_fd_readwrite = 1ull << 27, sock_shutdown = 1ull << 28, sock_accept = 1ull << 29;
constexpr uint64_t all = (1ull << 30) - 1;
// What makes sense on a regular file / a directory / a stream (tty, pipe,
// socket): a file opened from a directory gets the inherited rights masked by
// its kind, as wasmtime and wasi-libc expect.
constexpr uint64_t file = fd_datasync | fd_read | fd_seek | fd_fdstat_set_flags | fd_sync | fd_tell |
                          fd_write | fd_advise | fd_allocate | fd_filestat_get | fd_filestat_set_size |
                          fd_filestat_set_times | poll_fd_readwrite;
constexpr uint64_t directory =
    fd_datasync | fd_fdstat_set_flags | fd_sync | path_create_directory | path_create_file |
    path_link_source | path_link_target | path_open | fd_readdir | path_readlink | path_rename_source |
    path_rename_target | path_filestat_get | path_filestat_set_size | path_filestat_set_times |
    fd_filestat_get | fd_filestat_set_times | path_symlink | path_remove_directory | path_unlink_file;
// No seek/tell: wasi-libc's isatty() is "character device without seek/tell".
constexpr uint64_t stream = fd_datasync | fd_read | fd_fdstat_set_flags | fd_sync | fd_write | fd_advise |
                            fd_filestat_get | poll_fd_readwrite;
constexpr uint64_t socket = stream | sock_shutdown | sock_accept;
}  // namespace rights

// Record sizes and field offsets (witx-calculated, as in wasi-libc's api.h).
namespace layout {
constexpr uint32_t iovec_size = 8;    // buf u32 @0, buf_len u32 @4
constexpr uint32_t fdstat_size = 24;  // filetype u8 @0, flags u16 @2, rights_base u64 @8, inheriting u64 @16
constexpr uint32_t filestat_size =
    64;  // dev @0, ino @8, filetype u8 @16, nlink @24, size @32, atim @40, mtim @48, ctim @56
constexpr uint32_t dirent_size =
    24;  // d_next u64 @0, d_ino u64 @8, d_namlen u32 @16, d_type u8 @20; name follows
constexpr uint32_t prestat_size = 8;        // tag u8 @0 (0 = dir), pr_name_len u32 @4
constexpr uint32_t subscription_size = 48;  // userdata u64 @0, tag u8 @8, union @16
//   clock: id u32 @16, timeout u64 @24, precision u64 @32, flags u16 @40
//   fd_read / fd_write: file_descriptor u32 @16
constexpr uint32_t event_size =
    32;  // userdata u64 @0, error u16 @8, type u8 @10, nbytes u64 @16, flags u16 @24
}  // namespace layout

}  // namespace wzvm::wasi
