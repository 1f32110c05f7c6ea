// kvdb: a small key-value database shell (Rust std, wasm32-wasi), a real
// command-line program for the WASI tests: it reads commands from a script
// file or stdin, keeps the data in a BTreeMap with nested transactions, and
// persists it to a file (written to a temporary file, then renamed).
//
//   kvdb [--db PATH] [SCRIPT]      PATH defaults to $KVDB_PATH, else "kv.db"
//
// Commands (one per line; '#' starts a comment line):
//   set KEY VALUE...   get KEY   del KEY   incr KEY [BY]   keys [PREFIX]   count
//   begin   commit   rollback   save   stats
// At the end of input, unsaved changes are saved. Exit status: 0, or 1 when a
// command failed, or 3 when the database file is malformed.
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::{self, BufRead, Write};
use std::path::PathBuf;

struct Db {
    data: BTreeMap<String, String>,
    // One undo log per open transaction: the value each key had before it.
    undo: Vec<HashMap<String, Option<String>>>,
    path: PathBuf,
    dirty: bool,
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next()? {
            '\\' => out.push('\\'),
            't' => out.push('\t'),
            'n' => out.push('\n'),
            _ => return None,
        }
    }
    Some(out)
}

impl Db {
    fn open(path: PathBuf) -> Result<Db, String> {
        let mut data = BTreeMap::new();
        match fs::read_to_string(&path) {
            Ok(text) => {
                for (i, line) in text.lines().enumerate() {
                    let parsed = line.split_once('\t').and_then(|(k, v)| Some((unescape(k)?, unescape(v)?)));
                    match parsed {
                        Some((k, v)) => {
                            data.insert(k, v);
                        }
                        None => return Err(format!("{}:{}: malformed entry", path.display(), i + 1)),
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {}", path.display(), e)),
        }
        Ok(Db { data, undo: Vec::new(), path, dirty: false })
    }

    fn write(&mut self, key: &str, value: Option<String>) {
        if let Some(log) = self.undo.last_mut() {
            if !log.contains_key(key) {
                log.insert(key.to_string(), self.data.get(key).cloned());
            }
        }
        match value {
            Some(v) => self.data.insert(key.to_string(), v),
            None => self.data.remove(key),
        };
        self.dirty = true;
    }

    fn save(&mut self) -> io::Result<usize> {
        let mut text = String::new();
        for (k, v) in &self.data {
            text.push_str(&escape(k));
            text.push('\t');
            text.push_str(&escape(v));
            text.push('\n');
        }
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
        }
        fs::rename(&tmp, &self.path)?;
        self.dirty = false;
        Ok(text.len())
    }

    // One command; Err is printed as "ERR ...".
    fn run(&mut self, words: &[&str], rest: &str) -> Result<String, String> {
        let arity = |n: usize| {
            if words.len() - 1 < n {
                Err(format!("'{}' needs {} argument{}", words[0], n, if n == 1 { "" } else { "s" }))
            } else {
                Ok(())
            }
        };
        match words[0] {
            "set" => {
                arity(2)?;
                self.write(words[1], Some(rest.to_string()));
                Ok("OK".into())
            }
            "get" => {
                arity(1)?;
                Ok(self.data.get(words[1]).cloned().unwrap_or_else(|| "(nil)".into()))
            }
            "del" => {
                arity(1)?;
                let had = self.data.contains_key(words[1]);
                if had {
                    self.write(words[1], None);
                }
                Ok(format!("(integer) {}", had as i32))
            }
            "incr" => {
                arity(1)?;
                let by: i64 = match words.get(2) {
                    Some(w) => w.parse().map_err(|_| format!("'{}' is not an integer", w))?,
                    None => 1,
                };
                let cur: i64 = match self.data.get(words[1]) {
                    Some(v) => v.parse().map_err(|_| "value is not an integer".to_string())?,
                    None => 0,
                };
                let n = cur.checked_add(by).ok_or("increment would overflow")?;
                self.write(words[1], Some(n.to_string()));
                Ok(format!("(integer) {}", n))
            }
            "keys" => {
                let prefix = words.get(1).copied().unwrap_or("");
                let keys: Vec<&str> = self
                    .data
                    .range(prefix.to_string()..)
                    .map(|(k, _)| k.as_str())
                    .take_while(|k| k.starts_with(prefix))
                    .collect();
                Ok(if keys.is_empty() { "(empty)".into() } else { keys.join("\n") })
            }
            "count" => Ok(format!("(integer) {}", self.data.len())),
            "begin" => {
                self.undo.push(HashMap::new());
                Ok(format!("OK (depth {})", self.undo.len()))
            }
            "commit" | "rollback" => {
                let log = self.undo.pop().ok_or("no transaction")?;
                if words[0] == "rollback" {
                    for (k, v) in log {
                        match v {
                            Some(v) => self.data.insert(k, v),
                            None => self.data.remove(&k),
                        };
                    }
                } else if let Some(outer) = self.undo.last_mut() {
                    // The outer transaction must be able to undo these writes too.
                    for (k, v) in log {
                        outer.entry(k).or_insert(v);
                    }
                }
                Ok("OK".into())
            }
            "save" => {
                let bytes = self.save().map_err(|e| format!("save {}: {}", self.path.display(), e))?;
                Ok(format!("OK ({} keys, {} bytes)", self.data.len(), bytes))
            }
            other => Err(format!("unknown command '{}'", other)),
        }
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut path = std::env::var("KVDB_PATH").unwrap_or_else(|_| "kv.db".into());
    if args.len() >= 2 && args[0] == "--db" {
        path = args[1].clone();
        args.drain(..2);
    }
    let mut db = match Db::open(PathBuf::from(&path)) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("kvdb: {}", e);
            std::process::exit(3);
        }
    };
    let input: Box<dyn BufRead> = match args.first() {
        Some(script) => match fs::File::open(script) {
            Ok(f) => Box::new(io::BufReader::new(f)),
            Err(e) => {
                eprintln!("kvdb: {}: {}", script, e);
                std::process::exit(2);
            }
        },
        None => Box::new(io::BufReader::new(io::stdin())),
    };
    let mut stats: HashMap<String, u32> = HashMap::new();
    let mut failed = false;
    let out = io::stdout();
    let mut out = out.lock();
    for line in input.lines() {
        let line = line.expect("read error");
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        *stats.entry(words[0].to_string()).or_insert(0) += 1;
        if words[0] == "stats" {
            let mut v: Vec<_> = stats.iter().collect();
            v.sort();
            let s: Vec<String> = v.iter().map(|(k, n)| format!("{}={}", k, n)).collect();
            writeln!(out, "{}", s.join(" ")).unwrap();
            continue;
        }
        // The value of `set` is the rest of the line after the key, spaces kept.
        let rest = if words.len() > 2 {
            let after_cmd = line[words[0].len()..].trim_start();
            after_cmd[words[1].len()..].trim_start()
        } else {
            ""
        };
        match db.run(&words, rest) {
            Ok(s) => writeln!(out, "{}", s).unwrap(),
            Err(e) => {
                writeln!(out, "ERR {}", e).unwrap();
                failed = true;
            }
        }
    }
    if !db.undo.is_empty() {
        writeln!(out, "open transaction discarded").unwrap();
        while let Some(log) = db.undo.pop() {
            for (k, v) in log {
                match v {
                    Some(v) => db.data.insert(k, v),
                    None => db.data.remove(&k),
                };
            }
        }
    }
    if db.dirty {
        match db.save() {
            Ok(_) => writeln!(out, "saved {} keys", db.data.len()).unwrap(),
            Err(e) => {
                eprintln!("kvdb: save {}: {}", path, e);
                failed = true;
            }
        }
    }
    drop(out);
    std::process::exit(failed as i32);
}
