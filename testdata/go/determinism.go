// A Go program whose behaviour depends on what the runtime reads from
// outside: map iteration order and the scheduler are seeded from random_get,
// timers and time.Since read the clocks. tests/deterministic_test.cc runs it
// with and without --deterministic: with it, output and instruction profile
// are the same on every run.
package main

import (
	"fmt"
	"sort"
	"time"
)

func worker(id int, jobs <-chan int, results chan<- [3]int) {
	for j := range jobs {
		if j%10 == 0 {
			time.Sleep(time.Millisecond)
		}
		results <- [3]int{j, j*j%97 + 1, id}
	}
}

func main() {
	start := time.Now()
	jobs := make(chan int, 16)
	results := make(chan [3]int, 16)
	for w := 0; w < 4; w++ {
		go worker(w, jobs, results)
	}
	go func() {
		for j := 0; j < 300; j++ {
			jobs <- j
		}
		close(jobs)
	}()
	values := map[int]int{}
	byWorker := map[int]int{}
	for i := 0; i < 300; i++ {
		r := <-results
		values[r[0]] = r[1]
		byWorker[r[2]]++
	}
	timedOut := false
	select {
	case <-time.After(20 * time.Millisecond):
		timedOut = true
	case <-make(chan int):
	}
	// Map iteration order is randomised per range loop.
	order := 0
	for k, v := range values {
		order = (order*31 + k*v) % 1000000007
	}
	sum := 0
	keys := make([]int, 0, len(values))
	for k, v := range values {
		keys = append(keys, k)
		sum += v
	}
	sort.Ints(keys)
	fmt.Printf("jobs %d sum %d first %d last %d timeout %v\n", len(keys), sum, keys[0], keys[len(keys)-1], timedOut)
	fmt.Printf("order %d workers %v\n", order, byWorker)
	fmt.Printf("elapsed at least 20ms: %v\n", time.Since(start) >= 20*time.Millisecond)
}
