// Recursive calls: run(n) = fib(n). fib(35) = 9227465 takes 29.9 M calls.
__attribute__((noinline)) static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__attribute__((export_name("run"))) int run(int n) { return fib(n); }
