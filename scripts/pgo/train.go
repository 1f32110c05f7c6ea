// Training run for the interpreter's profile (scripts/pgo.sh), Go's share:
// the shapes Go's wasm code gives the VM and CPython's does not (every
// function's resume br_table and stack check, the stack pointer in a
// global, 64-bit arithmetic and loads, calls through interfaces and
// closures, the garbage collector, goroutine switches), each a little.
// Not a benchmark: bench/ measures Go's own package tests, and this program
// is kept apart from them so that the profile is not fitted to what is
// measured. It checks its own results and exits 1 on a wrong one.
package main

import (
	"fmt"
	"math/bits"
	"os"
	"sort"
	"strconv"
	"strings"
)

type shape interface {
	area() float64
	name() string
}

type rect struct{ w, h float64 }
type circle struct{ r float64 }

func (r rect) area() float64   { return r.w * r.h }
func (r rect) name() string    { return "rect" }
func (c circle) area() float64 { return 3.0 * c.r * c.r }
func (c circle) name() string  { return "circle" }

type byArea []shape

func (s byArea) Len() int           { return len(s) }
func (s byArea) Less(i, j int) bool { return s[i].area() < s[j].area() }
func (s byArea) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }

var failed bool

func check(what string, ok bool) {
	if !ok {
		fmt.Fprintln(os.Stderr, "train.go: wrong result:", what)
		failed = true
	}
}

// Interfaces, sorting through them, allocation.
func shapes(seed uint64) float64 {
	var list []shape
	for i := 0; i < 4000; i++ {
		seed = seed*6364136223846793005 + 1442695040888963407
		v := float64(seed>>40) / 1e4
		if seed&1 == 0 {
			list = append(list, rect{v, v / 2})
		} else {
			list = append(list, circle{v / 3})
		}
	}
	sort.Sort(byArea(list))
	check("sorted shapes", sort.IsSorted(byArea(list)))
	total := 0.0
	for _, s := range list {
		if s.name() == "rect" {
			total += s.area()
		}
	}
	return total
}

// Maps of strings and ints, string building, strconv both ways.
func words(n int) int {
	counts := map[string]int{}
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.Reset()
		b.WriteString("w")
		b.WriteString(strconv.Itoa(i % 517))
		counts[b.String()]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	sum := 0
	for _, k := range keys {
		v, err := strconv.Atoi(k[1:])
		check("atoi", err == nil)
		sum += v * counts[k]
	}
	f := strconv.FormatFloat(float64(sum)/7, 'g', -1, 64)
	back, err := strconv.ParseFloat(f, 64)
	check("float round trip", err == nil && strconv.FormatFloat(back, 'g', -1, 64) == f)
	return sum
}

// 64-bit multiply-high and carries (math/bits, done in software on wasm).
func wide(n int) uint64 {
	var acc, carry uint64 = 1, 0
	x := uint64(0x9e3779b97f4a7c15)
	for i := 0; i < n; i++ {
		hi, lo := bits.Mul64(x, acc|1)
		acc, carry = bits.Add64(lo, hi, carry)
		x = bits.RotateLeft64(x, 7) ^ uint64(bits.OnesCount64(acc))
	}
	return acc ^ carry
}

// Closures, recursion, a binary tree of pointers the collector scans.
type node struct {
	left, right *node
	key         int
}

func insert(t *node, k int) *node {
	if t == nil {
		return &node{key: k}
	}
	if k < t.key {
		t.left = insert(t.left, k)
	} else {
		t.right = insert(t.right, k)
	}
	return t
}

func walk(t *node, visit func(int)) {
	if t != nil {
		walk(t.left, visit)
		visit(t.key)
		walk(t.right, visit)
	}
}

func tree(n int) int {
	var root *node
	k := 7
	for i := 0; i < n; i++ {
		k = (k*1103515245 + 12345) & 0x7fffffff
		root = insert(root, k%100000)
	}
	prev, ordered, count := -1, true, 0
	walk(root, func(v int) {
		ordered = ordered && v >= prev
		prev = v
		count++
	})
	check("tree order", ordered && count == n)
	return count
}

// Goroutines handing work over channels.
func pipeline(n int) int {
	in, out := make(chan int), make(chan int)
	go func() {
		for i := 0; i < n; i++ {
			in <- i
		}
		close(in)
	}()
	go func() {
		for v := range in {
			out <- v * v
		}
		close(out)
	}()
	sum := 0
	for v := range out {
		sum += v
	}
	return sum
}

func main() {
	var out strings.Builder
	for round := 0; round < 3; round++ {
		fmt.Fprintf(&out, "%.1f %d %x %d %d\n", shapes(uint64(round)), words(60000), wide(300000), tree(40000),
			pipeline(20000))
	}
	check("pipeline", pipeline(100) == 328350)
	fmt.Print(out.String())
	if failed {
		os.Exit(1)
	}
}
