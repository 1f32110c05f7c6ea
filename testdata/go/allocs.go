// Allocations of known sizes and counts, for the Go memory profile test
// (tests/go_profile_test.cc). Run natively with HEAPPROFILE=FILE, it writes
// Go's own heap profile of the same allocations (MemProfileRate = 1), which
// the test compares with wzvm's, function by function.
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// 8 + 6*8 = 56 bytes: Go's 64-byte size class.
type node struct {
	next *node
	val  [6]int64
}

//go:noinline
func newNodes(n int) *node {
	var head *node
	for i := 0; i < n; i++ {
		head = &node{next: head}
		head.val[0] = int64(i)
	}
	return head
}

// n buffers of 1000 bytes (the 1024-byte class) and one slice of n headers.
//
//go:noinline
func buffers(n, size int) [][]byte {
	out := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, make([]byte, size))
	}
	return out
}

// 80,000 bytes: a large object, 10 pages of 8 KiB.
//
//go:noinline
func big() []int64 { return make([]int64, 10000) }

var sink []any

func main() {
	path := os.Getenv("HEAPPROFILE")
	if path != "" {
		runtime.MemProfileRate = 1
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	a := newNodes(1000)
	b := buffers(50, 1000)
	c := big()
	runtime.ReadMemStats(&after)
	sink = append(sink, a, b, c)
	fmt.Printf("mallocs %d bytes %d\n", after.Mallocs-before.Mallocs, after.TotalAlloc-before.TotalAlloc)
	if path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.WriteHeapProfile(f)
			f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
