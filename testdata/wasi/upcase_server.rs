// A line server in Rust std (wasm32-wasi): takes the listening socket wzvm
// preopened as fd 3 (`wzvm --listen HOST:PORT`) as a std::net::TcpListener,
// accepts one connection and answers each line upper-cased (Unicode-aware)
// until the peer shuts down its side. tests/wasi_sock_test.cc is the client.
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::wasi::io::FromRawFd;

fn main() {
    // Safety: fd 3 is the socket wzvm preopened, owned by nothing else here.
    let listener = unsafe { TcpListener::from_raw_fd(3) };
    let (stream, _) = listener.accept().expect("accept");
    // Read and write through &TcpStream: try_clone is not supported on WASI.
    let mut out = &stream;
    let mut lines = 0;
    for line in BufReader::new(&stream).lines() {
        let line = line.expect("read");
        writeln!(out, "{}", line.to_uppercase()).expect("write");
        lines += 1;
    }
    println!("served {} lines", lines);
}
