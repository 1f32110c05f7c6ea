// 128-bit products by math/bits.Mul64, which Go compiles for wasm as a call
// to a leaf function that wzvm runs as one op (vm/known_bodies.def):
// tests/known_bodies_test.cc builds this with every Go installed and checks
// the sums against its own 128-bit arithmetic, run plain and counted.
package main

import (
	"fmt"
	"math/bits"
)

func main() {
	x, y := uint64(0x9e3779b97f4a7c15), uint64(1)
	var sumHi, sumLo uint64
	for i := 0; i < 100000; i++ {
		// xorshift64 for both factors
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		y = y*6364136223846793005 + 1442695040888963407
		hi, lo := bits.Mul64(x, y)
		sumHi += hi
		sumLo ^= lo
	}
	fmt.Println(sumHi, sumLo)
}
