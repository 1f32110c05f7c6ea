#!/usr/bin/env bash
# What a user gets after the build: `cmake --install` into a fresh prefix,
# examples/embed built against that installed tree with find_package(wzvm)
# and run, and the Debian package from `cpack -G DEB` checked (its metadata,
# its contents, and its wzvm run from an extracted tree).
#
#   install_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
data=$build/testdata
tmp=$(mktemp -d /tmp/wzvm-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install_test: $*" >&2; exit 1; }
export HOME=$tmp GOCACHE=$tmp/.gocache  # go tool pprof, without the user's

# A wzvm binary in a tree (bin/wzvm + its plugin) runs, and finds its HTTP
# plugin where it was installed.
check_wzvm() {
  local wzvm=$1
  [ "$("$wzvm" --invoke fib "$data/example.wasm" 20)" = 6765 ] || fail "$wzvm --invoke fib 20 did not print 6765"
  "$wzvm" --profile=cpu --profile-out "$tmp/live.pb.gz" --pprof-addr 127.0.0.1:0 --invoke fib "$data/example.wasm" 20 \
    >/dev/null 2>"$tmp/live.err" || { cat "$tmp/live.err" >&2; fail "$wzvm --pprof-addr failed"; }
  grep -q "serving pprof at http://127.0.0.1:" "$tmp/live.err" || { cat "$tmp/live.err" >&2; fail "$wzvm did not load its HTTP plugin"; }
}

echo "== cmake --install $build --prefix $tmp/prefix"
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
for f in bin/wzvm lib/wzvm/wzvm-http.so lib/libwzvm_vm.a lib/libwzvm_wasi.a lib/libwzvm_profiler.a \
         include/wzvm/vm/module.h include/wzvm/wasi/wasi.h include/wzvm/profiler/profiler.h \
         include/wzvm/profiler/profile.pb.h include/wzvm/profiler/testing.h \
         lib/cmake/wzvm/wzvmConfig.cmake lib/cmake/wzvm/wzvmTargets.cmake; do
  [ -e "$tmp/prefix/$f" ] || fail "cmake --install did not install $f"
done
# Internals stay out (the public headers are cmake/install.cmake's list).
[ ! -e "$tmp/prefix/include/wzvm/vm/lower/function_compiler.h" ] && [ ! -e "$tmp/prefix/include/wzvm/profiler/golang.h" ] ||
  fail "private sources installed"
check_wzvm "$tmp/prefix/bin/wzvm"

echo "== examples/embed against the installed package"
cmake -S "$src/examples/embed" -B "$tmp/embed" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/embed-configure.log" || { cat "$tmp/embed-configure.log" >&2; fail "configure"; }
cmake --build "$tmp/embed" >"$tmp/embed-build.log" || { cat "$tmp/embed-build.log" >&2; fail "build"; }
mkdir -p "$tmp/run" "$tmp/dir"
cd "$tmp/run"
# fs.c does file and directory operations in the preopened /data.
"$tmp/embed/embed" "$data/wasi/fs.wasm" "$tmp/dir" /data >out.txt 2>err.txt || { cat err.txt >&2; fail "embed fs.wasm"; }
grep -q "read after seek: 'world'" out.txt || { cat out.txt >&2; fail "fs.wasm did not read back what it wrote in /data"; }
total=$(sed -n 's/^embed: \([0-9]*\) instructions$/\1/p' err.txt)
[ "${total:-0}" -gt 0 ] || { cat err.txt >&2; fail "no instruction total"; }
# go tool pprof reads both profiles; the instructions' total is the count.
# (grep reads a here-string: `echo | grep -q` under pipefail fails when grep
# quits at its match before echo has written the rest, SIGPIPE.)
top=$(go tool pprof -top instructions.pb.gz 2>&1) || { echo "$top" >&2; fail "pprof cannot read instructions.pb.gz"; }
grep -q "of $total total" <<<"$top" || { echo "$top" >&2; fail "instructions.pb.gz total is not $total"; }
grep -qw main <<<"$top" || { echo "$top" >&2; fail "no main in the instruction profile"; }
go tool pprof -top cpu.pb.gz >/dev/null 2>&1 || fail "pprof cannot read cpu.pb.gz"
# EXPECT_INSTRUCTIONS from the installed profiler/testing.h.
[ -x "$tmp/embed/count_test" ] || fail "count_test was not built (GoogleTest not found?)"
fib22=$("$build/wzvm" --profile=instructions --profile-text --invoke fib "$data/example.wasm" 22 2>&1 | sed -n 's/^\([0-9]*\) fib$/\1/p')
WZVM_EXAMPLE_WASM=$data/example.wasm WZVM_EXPECT_FIB22=$fib22 "$tmp/embed/count_test" >count.txt 2>&1 ||
  { cat count.txt >&2; fail "count_test"; }
# The time limit stops a start function that never returns; profiles are still written.
rm -f cpu.pb.gz instructions.pb.gz
status=0
"$tmp/embed/embed" --timeout-ms 300 "$data/limits_start.wasm" "$tmp/dir" 2>err.txt || status=$?
[ "$status" = 124 ] || { cat err.txt >&2; fail "embed --timeout-ms: status $status, want 124"; }
go tool pprof -top cpu.pb.gz >/dev/null 2>&1 || fail "no readable cpu.pb.gz after the time limit"

echo "== cpack -G DEB"
(cd "$build" && cpack -G DEB -B "$tmp/pkg" >"$tmp/cpack.log") || { cat "$tmp/cpack.log" >&2; fail "cpack"; }
deb=$(ls "$tmp"/pkg/*.deb)
info=$(dpkg-deb --info "$deb")
grep -q "Package: wzvm" <<<"$info" || fail "package name"
# Depends come from what the binaries link (dpkg-shlibdeps): libc, C++,
# protobuf-lite, zlib, and cpp-httplib for the plugin.
depends=$(echo "$info" | sed -n 's/^ Depends: //p')
for lib in libc6 libstdc++6 libprotobuf-lite zlib1g libcpp-httplib; do
  grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib: $depends"
done
contents=$(dpkg-deb --contents "$deb")
for f in ./usr/bin/wzvm ./usr/lib/wzvm/wzvm-http.so ./usr/include/wzvm/vm/module.h ./usr/lib/cmake/wzvm/wzvmConfig.cmake; do
  grep -q " $f\$" <<<"$contents" || fail "package lacks $f"
done
dpkg-deb -x "$deb" "$tmp/extracted"
check_wzvm "$tmp/extracted/usr/bin/wzvm"
echo "install_test: ok ($(basename "$deb"): Depends: $depends)"
