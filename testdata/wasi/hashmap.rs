// Rust's HashMap seeds its hasher (RandomState) from random_get, so where
// each key lands, how many probes a lookup takes and the order iteration
// visits the keys change from run to run: so do the program's instruction
// counts and its output. tests/deterministic_test.cc runs it with and without
// --deterministic.
use std::collections::HashMap;

fn main() {
    let mut m: HashMap<String, u64> = HashMap::new();
    for i in 0..3000u64 {
        m.insert(format!("key{}", i * 7919 % 10007), i);
    }
    let mut hits = 0u64;
    for i in 0..6000u64 {
        if m.contains_key(&format!("key{}", i)) {
            hits += 1;
        }
    }
    // Depends on the iteration order.
    let mut order = 0u64;
    for (k, v) in &m {
        order = order.wrapping_mul(1_000_003).wrapping_add(*v ^ k.len() as u64);
    }
    println!("{} keys, {} hits, order {:016x}", m.len(), hits, order);
}
