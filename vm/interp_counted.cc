// The counting loop, run<Mode::Counted> of vm/interp.cc, in a translation
// unit of its own: interp.cc compiles the plain loop and everything else,
// this file the same source with only the counting loop and the helpers it
// uses, so the two loops compile side by side (see run_counted there).
#define WZVM_INTERP_COUNTED_LOOP
#include "vm/interp.cc"
