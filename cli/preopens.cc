#include "cli/preopens.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

namespace wzvm::cli {

std::string parse_host_port(const std::string& spec, std::string& host, std::string& port) {
  const std::string expected = "expected HOST:PORT (e.g. 127.0.0.1:8080 or [::1]:0), got '" + spec + "'";
  size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0) return expected;
  host = spec.substr(0, colon);
  port = spec.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return expected;
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return expected;  // a bare IPv6 address is ambiguous: it must be bracketed
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(port) > 65535)
    return "port must be a number from 0 to 65535, got '" + port + "'";
  return {};
}

namespace {

std::string describe(const sockaddr* sa) {
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
    std::string out = "[";  // appended piecewise: "[" + std::string trips GCC 12's -Wrestrict
    out += host;
    out += "]:";
    out += std::to_string(port);
    return out;
  }
  auto* in = reinterpret_cast<const sockaddr_in*>(sa);
  inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
  port = ntohs(in->sin_port);
  return std::string(host) + ":" + std::to_string(port);
}

// A TCP socket bound to HOST:PORT and listening; -1 with `why` on failure.
int listen_on(const std::string& spec, std::string& why) {
  std::string host, port;
  if (why = parse_host_port(spec, host, port); !why.empty()) return -1;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    why = "cannot resolve '" + host + "': " + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      why = std::string("cannot create a socket: ") + std::strerror(errno);
      continue;
    }
    // A server restarted right away must not wait out TIME_WAIT connections.
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) {
      why.clear();
      break;
    }
    why = std::strerror(errno);
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  return fd;
}

}  // namespace

std::string open_preopens(const std::vector<PreopenFlag>& flags, std::vector<wasi::Preopen>& out) {
  // --fd copies are taken first, so that `--fd 3` names an fd wzvm inherited,
  // never a socket an earlier --listen just opened.
  std::vector<int> copies(flags.size(), -1);
  auto fail = [&](const std::string& what) {
    for (const wasi::Preopen& p : out)
      if (p.fd >= 0) close(p.fd);
    for (size_t i = out.size(); i < copies.size(); ++i)
      if (copies[i] >= 0) close(copies[i]);
    out.clear();
    return what;
  };
  for (size_t i = 0; i < flags.size(); ++i) {
    if (flags[i].kind != PreopenFlag::Kind::Fd) continue;
    // The guest gets its own copy, so closing it never closes one of wzvm's
    // (--fd 1 hands over stdout without losing it).
    copies[i] = fcntl(std::stoi(flags[i].value), F_DUPFD_CLOEXEC, 3);
    if (copies[i] < 0)
      return fail("--fd " + flags[i].value + ": " +
                  (errno == EBADF ? "not an open file descriptor" : std::strerror(errno)));
  }
  for (size_t i = 0; i < flags.size(); ++i) {
    const PreopenFlag& f = flags[i];
    switch (f.kind) {
      case PreopenFlag::Kind::Dir: {
        size_t sep = f.value.find("::");
        if (sep == std::string::npos) out.push_back(wasi::Preopen::dir(f.value, f.value));
        else out.push_back(wasi::Preopen::dir(f.value.substr(0, sep), f.value.substr(sep + 2)));
        break;
      }
      case PreopenFlag::Kind::Listen: {
        std::string why;
        int fd = listen_on(f.value, why);
        if (fd < 0) return fail("--listen " + f.value + ": " + why);
        // Port 0 asks the kernel for a free port: whoever connects must learn it.
        std::string host, port;
        (void)parse_host_port(f.value, host, port);
        if (std::stoul(port) == 0) {
          sockaddr_storage ss{};
          socklen_t len = sizeof ss;
          getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
          std::cerr << "wzvm: listening on " << describe(reinterpret_cast<sockaddr*>(&ss)) << " (guest fd "
                    << 3 + out.size() << ")" << std::endl;
        }
        out.push_back(wasi::Preopen::host_fd(fd));
        break;
      }
      case PreopenFlag::Kind::Fd:
        out.push_back(wasi::Preopen::host_fd(copies[i]));
        break;
    }
  }
  return {};
}

}  // namespace wzvm::cli
