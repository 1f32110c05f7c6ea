// 128-bit products by math/bits.Mul64, which Go compiles for wasm as a call
// to a leaf function, and math/big's multiply, whose inner loops call
// mulAddWWW_g for every word: wzvm runs both callees as one op each
// (vm/known_bodies.def). tests/known_bodies_test.cc builds this with every
// Go installed and checks the sums against its own 128-bit arithmetic, run
// plain and counted; the big product checks itself against a schoolbook
// product in 32-bit limbs, which uses neither.
package main

import (
	"fmt"
	"math/big"
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

	a := new(big.Int).Exp(big.NewInt(3), big.NewInt(2000), nil)
	b := new(big.Int).Exp(big.NewInt(7), big.NewInt(1500), nil)
	got := new(big.Int).Mul(a, b)
	fmt.Println(got.Cmp(schoolbook(a, b)) == 0, got.BitLen())
}

// a*b from 32-bit limbs, little-endian, with 64-bit column sums.
func schoolbook(a, b *big.Int) *big.Int {
	la, lb := limbs(a.Bytes()), limbs(b.Bytes())
	out := make([]uint64, len(la)+len(lb)+1)
	for i, u := range la {
		var carry uint64
		for j, v := range lb {
			t := out[i+j] + uint64(u)*uint64(v) + carry
			out[i+j] = t & 0xffffffff
			carry = t >> 32
		}
		for k := i + len(lb); carry != 0; k++ {
			t := out[k] + carry
			out[k] = t & 0xffffffff
			carry = t >> 32
		}
	}
	bytes := make([]byte, 4*len(out))
	for i, w := range out {
		at := len(bytes) - 4*i
		bytes[at-1], bytes[at-2], bytes[at-3], bytes[at-4] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
	}
	return new(big.Int).SetBytes(bytes)
}

func limbs(be []byte) []uint32 {
	out := make([]uint32, (len(be)+3)/4)
	for i := range be {
		b := be[len(be)-1-i]
		out[i/4] |= uint32(b) << (8 * (i % 4))
	}
	return out
}
