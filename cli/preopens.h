#pragma once
// The guest's fds from 3 up, as the command line asks for them: --dir,
// --listen and --fd, in the order they were given (README "WASI").

#include <string>
#include <vector>

#include "wasi/wasi.h"

namespace wzvm::cli {

struct PreopenFlag {
  enum class Kind { Dir, Listen, Fd } kind;
  std::string value;  // HOST[::GUEST], HOST:PORT, or N
};

// "HOST:PORT" (HOST an IPv4 address, a name, or [IPv6]; PORT 0-65535) split
// into its parts; an empty string when well formed, else what is wrong.
std::string parse_host_port(const std::string& spec, std::string& host, std::string& port);

// Opens what each flag names and appends it to `out` (directories are opened
// later, by wasi::Wasi::create). A listening socket asked for on port 0 is
// announced on stderr with the port the kernel chose. On failure, returns
// "FLAG VALUE: why" and closes whatever it opened.
std::string open_preopens(const std::vector<PreopenFlag>& flags, std::vector<wasi::Preopen>& out);

}  // namespace wzvm::cli
