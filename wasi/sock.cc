// sock_* on sockets the host preopened (Preopen::host_fd; the CLI's --listen
// and --fd): WASI preview1 has no way to create or connect a socket, only to
// use one it was given.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "wasi/wasi.h"

namespace wzvm::wasi {

namespace {

// sock_* on an fd that is not a socket is ENOTSOCK, as the same call on a
// host fd is: the rights check would otherwise answer ENOTCAPABLE (a file
// never has the sock_* rights), which no POSIX program expects from
// shutdown(2) or accept(2).
bool is_socket(uint8_t type) { return type == filetype::socket_stream || type == filetype::socket_dgram; }

}  // namespace

Errno Wasi::sock_accept(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), 0, f); e != Errno::success) return e;
  if (!is_socket(f->type)) return Errno::enotsock;
  if (Errno e = get(c.u32(0), rights::sock_accept, f); e != Errno::success) return e;
  uint32_t flags = c.u32(1);
  if (flags & ~uint32_t(fdflags::nonblock)) return Errno::einval;
  if (!c.mem.check(c.u32(2), 4)) return Errno::efault;
  int fd;
  do
    fd = accept4(f->host, nullptr, nullptr, SOCK_CLOEXEC | ((flags & fdflags::nonblock) ? SOCK_NONBLOCK : 0));
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return from_host_errno(errno);
  Fd nf = describe(fd, true);
  nf.base &= ~rights::sock_accept;  // a connection accepts nothing
  c.mem.store<uint32_t>(c.u32(2), insert(std::move(nf)));
  return Errno::success;
}

Errno Wasi::sock_recv(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), 0, f); e != Errno::success) return e;
  if (!is_socket(f->type)) return Errno::enotsock;
  if (Errno e = get(c.u32(0), rights::fd_read, f); e != Errno::success) return e;
  uint32_t ri_flags = c.u32(3), len_ptr = c.u32(4), flags_ptr = c.u32(5);
  if (ri_flags & ~uint32_t(riflags::recv_peek | riflags::recv_waitall)) return Errno::einval;
  if (!c.mem.check(len_ptr, 4) || !c.mem.check(flags_ptr, 2)) return Errno::efault;
  std::vector<struct iovec> iov;
  if (Errno e = iovecs(c.mem, c.u32(1), c.u32(2), iov); e != Errno::success) return e;
  msghdr msg{};
  msg.msg_iov = iov.data();
  msg.msg_iovlen = iov.size();
  int flags = ((ri_flags & riflags::recv_peek) ? MSG_PEEK : 0) |
              ((ri_flags & riflags::recv_waitall) ? MSG_WAITALL : 0);
  ssize_t n;
  do n = recvmsg(f->host, &msg, flags);
  while (n < 0 && errno == EINTR);
  if (n < 0) return from_host_errno(errno);
  c.mem.store<uint32_t>(len_ptr, static_cast<uint32_t>(n));
  c.mem.store<uint16_t>(flags_ptr, (msg.msg_flags & MSG_TRUNC) ? roflags::recv_data_truncated : 0);
  return Errno::success;
}

Errno Wasi::sock_send(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), 0, f); e != Errno::success) return e;
  if (!is_socket(f->type)) return Errno::enotsock;
  if (Errno e = get(c.u32(0), rights::fd_write, f); e != Errno::success) return e;
  if (c.u32(3) != 0) return Errno::einval;  // siflags: none defined
  if (!c.mem.check(c.u32(4), 4)) return Errno::efault;
  std::vector<struct iovec> iov;
  if (Errno e = iovecs(c.mem, c.u32(1), c.u32(2), iov); e != Errno::success) return e;
  msghdr msg{};
  msg.msg_iov = iov.data();
  msg.msg_iovlen = iov.size();
  ssize_t n;
  // MSG_NOSIGNAL: a closed peer is EPIPE for the guest, not SIGPIPE for wzvm.
  do n = sendmsg(f->host, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n < 0) return from_host_errno(errno);
  c.mem.store<uint32_t>(c.u32(4), static_cast<uint32_t>(n));
  return Errno::success;
}

Errno Wasi::sock_shutdown(Call& c) {
  Fd* f;
  if (Errno e = get(c.u32(0), 0, f); e != Errno::success) return e;
  if (!is_socket(f->type)) return Errno::enotsock;
  if (Errno e = get(c.u32(0), rights::sock_shutdown, f); e != Errno::success) return e;
  int how;
  switch (c.u32(1)) {
    case sdflags::rd:
      how = SHUT_RD;
      break;
    case sdflags::wr:
      how = SHUT_WR;
      break;
    case sdflags::rd | sdflags::wr:
      how = SHUT_RDWR;
      break;
    default:
      return Errno::einval;
  }
  return shutdown(f->host, how) == 0 ? Errno::success : from_host_errno(errno);
}

}  // namespace wzvm::wasi
