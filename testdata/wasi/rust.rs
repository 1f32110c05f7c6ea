// A Rust (std, wasm32-wasi) program: env, args, std::fs, std::time, process exit code.
// Usage: rust DIR   (tests/wasi_test.cc checks its output; built with /usr/bin/rustc,
// Debian's, which has the wasm32-wasi std, not a rustup rustc earlier on PATH)
use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(&args[1]);
    println!("args: {:?}", &args[1..]);
    println!("GREETING={}", std::env::var("GREETING").unwrap_or_else(|_| "(unset)".into()));
    fs::create_dir_all(dir.join("x/y")).unwrap();
    for i in 0..3 {
        let mut f = fs::File::create(dir.join(format!("x/f{}.txt", i))).unwrap();
        writeln!(f, "{}", "z".repeat(i + 1)).unwrap();
    }
    let mut sizes = BTreeMap::new();
    for e in fs::read_dir(dir.join("x")).unwrap() {
        let e = e.unwrap();
        let md = e.metadata().unwrap();
        sizes.insert(e.file_name().into_string().unwrap(), if md.is_dir() { -1 } else { md.len() as i64 });
    }
    println!("sizes: {:?}", sizes);
    let mut s = String::new();
    fs::File::open(dir.join("x/f2.txt")).unwrap().read_to_string(&mut s).unwrap();
    println!("f2: {:?}", s);
    fs::rename(dir.join("x/f0.txt"), dir.join("x/y/f0.txt")).unwrap();
    println!("renamed: {}", dir.join("x/y/f0.txt").exists());
    println!("escape: {:?}", fs::read_to_string(dir.join("../../etc/passwd")).map_err(|e| e.kind()));
    fs::remove_dir_all(dir.join("x")).unwrap();
    println!("cleaned: {}", !dir.join("x").exists());
    let t = Instant::now();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    println!("time sane: {} {}", now > 1_600_000_000, t.elapsed().as_secs() < 60);
    eprintln!("to stderr");
    std::process::exit(4);
}
