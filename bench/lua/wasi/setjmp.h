/* wasm32-wasi has no setjmp with clang-14: ldo.c includes this header, and
   build-lua.sh makes Lua's error unwinding abort instead (bench only). */
typedef int jmp_buf[1];
