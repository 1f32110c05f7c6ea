// Memory-profile test program (Rust, std's System allocator on wasm32-wasi:
// __rust_alloc -> __rdl_alloc -> malloc). Only __rust_alloc, the outermost
// hooked call, is counted. Exact numbers are checked in
// tests/memory_profile_test.cc (per function, cumulative: Vec and Box code
// may or may not be inlined).

// 40 boxes of 32 bytes in a Vec made with room for 40 (160 bytes); 30 boxes
// dropped: 11 objects, 480 bytes stay (leaked by main).
#[inline(never)]
fn boxes() -> Vec<Box<[u64; 4]>> {
    let mut v = Vec::with_capacity(40);
    for i in 0..40u64 {
        v.push(Box::new([i; 4]));
    }
    v.truncate(10);
    v
}

// A Vec<u32> of 1000 elements grown by pushing: one allocation of 4
// elements, then __rust_realloc to 8, 16, ..., 1024 (9 in all, 8176 bytes);
// the last, 4096 bytes, stays (leaked by main).
#[inline(never)]
fn grow() -> Vec<u32> {
    let mut v = Vec::new();
    for i in 0..1000u32 {
        v.push(unsafe { std::ptr::read_volatile(&i) });
    }
    v
}

fn main() {
    let b = boxes();
    let g = grow();
    println!("{} {}", b.len(), g.len());
    std::mem::forget(b);
    std::mem::forget(g);
}
