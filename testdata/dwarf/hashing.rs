// DWARF test program for Rust names (tests/symbolize_test.cc). The tests
// assert line numbers of this file worked out by hand: do not move the code
// in lines 1-30; add new code at the end.
//
// Built with Debian's /usr/bin/rustc --target wasm32-wasi -g -C opt-level=2,
// twice: with the default (legacy) symbol mangling and with
// -C symbol-mangling-version=v0.

#[inline(always)]
fn step(h: u64, x: u64) -> u64 {
    (h ^ x).wrapping_mul(0x100000001b3) // line 11
}

pub mod fnv {
    #[inline(never)]
    pub fn hash(data: &[u64]) -> u64 {
        let mut h = 0xcbf29ce484222325;
        for &x in data {
            h = super::step(h, x); // line 19: call of step at column 17
        }
        h
    }
}

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let data: Vec<u64> = (0..n).collect();
    println!("{}", fnv::hash(&data));
}
