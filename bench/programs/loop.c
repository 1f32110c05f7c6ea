// A tight integer loop: n steps of a linear congruential generator mixed into
// an accumulator (no memory traffic, no calls).
__attribute__((export_name("run"))) int run(int n) {
  unsigned x = 1, acc = 0;
  for (int i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    acc += (x >> 16) ^ (unsigned)i;
    acc = (acc << 3) | (acc >> 29);
  }
  return (int)(acc & 0x7fffffff);
}
