// Recursive calls: run(n) = fib(n). fib(37) = 24157817 takes 78 M calls.
__attribute__((noinline)) static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__attribute__((export_name("run"))) int run(int n) { return fib(n); }
