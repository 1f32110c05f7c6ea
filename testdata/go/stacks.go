// Go shapes whose stacks and allocations tests/go_profile_test.cc checks
// through go tool pprof, with the expected frames worked out from this file:
// goroutines and channels, deep recursion (which grows the goroutine stack),
// closures, methods on pointer receivers, an inlined helper, and
// allocations of known sizes and counts.
package main

import (
	"fmt"
	"os"
	"runtime"
)

type acc struct{ sum int }

//go:noinline
func (a *acc) add(v int) {
	for i := 0; i < 200; i++ {
		a.sum += v ^ i
	}
}

//go:noinline
func process(a *acc, v int) { a.add(v) }

// consume runs as a goroutine: it blocks on the channel between values, so
// each value is handled after a goroutine switch.
func consume(ch <-chan int, done chan<- int) {
	a := &acc{}
	for v := range ch {
		process(a, v)
	}
	done <- a.sum
}

//go:noinline
func spin(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

// depth recurses 200 frames deep with 1 KiB frames: the goroutine's stack
// (8 KiB at first) has to grow several times on the way down.
//
//go:noinline
func depth(n int) int {
	var pad [128]int
	pad[n%128] = n
	if n == 0 {
		return spin(20000) + pad[0]
	}
	return depth(n-1) + pad[n%128] - n + 1
}

// twice is small enough to be inlined into its caller.
func twice(x int) int { return x + x }

// Allocations of known sizes and counts: blocks of 4096 bytes, 100 of them,
// kept alive in a package variable so that none is optimised away.
var kept [][]byte

//go:noinline
func allocate(n, size int) {
	for i := 0; i < n; i++ {
		kept = append(kept, make([]byte, size))
	}
}

func main() {
	ch := make(chan int)
	done := make(chan int)
	go consume(ch, done)
	for i := 0; i < 50; i++ {
		ch <- i
	}
	close(ch)
	total := <-done

	d := depth(200)

	calls := 0
	apply := func(f func(int) int) int {
		calls++
		return f(calls)
	}
	c := apply(func(x int) int { return spin(5000) + twice(x) })

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	allocate(100, 4096)
	runtime.ReadMemStats(&after)
	fmt.Printf("total %d depth %d closure %d kept %d\n", total, d, c, len(kept))
	fmt.Fprintf(os.Stderr, "mallocs %d bytes %d\n", after.Mallocs-before.Mallocs, after.TotalAlloc-before.TotalAlloc)
}
