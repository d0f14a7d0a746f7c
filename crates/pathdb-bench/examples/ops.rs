//! Runs one codec operation N times and nothing else, for instruction counting under valgrind,
//! which, unlike criterion's wall-clock times, does not vary with the load of a shared machine:
//!
//! ```text
//! cargo build -p pathdb-bench --example ops --release
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/ops decode pathdb seed_example 100000
//! ```
//!
//! Instructions per operation = (Ir at N - Ir at 0) / N. `docs/benchmarks.md` lists them.
//!
//! Arguments: `encode|decode`, a codec (`pathdb`, `pathdb_ref` for decode, `fdb_tuple`,
//! `storekey`, `memcomparable`, `fdb_tuple_borrowed` / `storekey_borrowed` for decode), a path name
//! (`seed_example`, `short_2_elements`, `deep_6_elements`) and N.

use pathdb_bench::{DeepPath, Fixture, SeedExample, ShortPath};
use pathdb_keys::{KeyPath, KeyPathRef};
use std::hint::black_box;
use std::process::ExitCode;

fn run<F: Fixture>(op: &str, codec: &str, n: usize) -> Result<(), String> {
    let values = F::values();
    let path = values.key_path();
    let mut buf: Vec<u8> = Vec::with_capacity(512);
    let encode: fn(&F, &KeyPath, &mut Vec<u8>) = match codec {
        "pathdb" | "pathdb_ref" => |_, p, out| p.encode_into(out),
        "fdb_tuple" | "fdb_tuple_borrowed" => |v, _, out| v.fdb_encode(out),
        "storekey" | "storekey_borrowed" => |v, _, out| v.storekey_encode(out),
        "memcomparable" => |v, _, out| v.memcomparable_encode(out),
        _ => return Err(format!("unknown codec {codec}")),
    };
    match op {
        "encode" => {
            for _ in 0..n {
                buf.clear();
                encode(black_box(&values), black_box(&path), &mut buf);
                black_box(buf.as_slice());
            }
        }
        "decode" => {
            let decode: fn(&[u8]) = match codec {
                "pathdb" => |b| drop(black_box(KeyPath::decode(b))),
                "pathdb_ref" => |b| drop(black_box(KeyPathRef::decode(b))),
                "fdb_tuple" => |b| drop(black_box(F::fdb_decode(b))),
                "fdb_tuple_borrowed" => |b| drop(black_box(F::fdb_decode_borrowed(b))),
                "storekey" => |b| drop(black_box(F::storekey_decode(b))),
                "storekey_borrowed" => |b| drop(black_box(F::storekey_decode_borrowed(b))),
                _ => |b| drop(black_box(F::memcomparable_decode(b))),
            };
            encode(&values, &path, &mut buf);
            for _ in 0..n {
                decode(black_box(buf.as_slice()));
            }
        }
        _ => return Err(format!("unknown operation {op}")),
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [op, codec, path, n] = args.as_slice() else {
        eprintln!("usage: ops encode|decode CODEC PATH N");
        return ExitCode::FAILURE;
    };
    let Ok(n) = n.parse::<usize>() else {
        eprintln!("N must be a number");
        return ExitCode::FAILURE;
    };
    let result = match path.as_str() {
        p if p == SeedExample::NAME => run::<SeedExample>(op, codec, n),
        p if p == ShortPath::NAME => run::<ShortPath>(op, codec, n),
        p if p == DeepPath::NAME => run::<DeepPath>(op, codec, n),
        _ => Err(format!("unknown path {path}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
