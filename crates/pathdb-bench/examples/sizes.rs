//! Prints the bytes per key of every codec, and of the text form, for the benchmark paths.
//!
//! `cargo run -p pathdb-bench --example sizes --release`

use pathdb_bench::{DeepPath, Fixture, SeedExample, ShortPath, Sizes, sizes};

fn row<F: Fixture>() -> Sizes {
    let s = sizes::<F>();
    println!(
        "| {:<16} | {:>4} | {:>6} | {:>9} | {:>8} | {:>13} |",
        F::NAME,
        s.text,
        s.pathdb,
        s.fdb_tuple,
        s.storekey,
        s.memcomparable
    );
    s
}

fn main() {
    println!("Bytes per key:");
    println!();
    println!("| path             | text | pathdb | fdb_tuple | storekey | memcomparable |");
    println!("| ---------------- | ---: | -----: | --------: | -------: | ------------: |");
    let seed = row::<SeedExample>();
    row::<ShortPath>();
    row::<DeepPath>();
    println!();
    println!(
        "pathdb / foundationdb-tuple on {}: {} / {} = {:.3} (+{} bytes)",
        SeedExample::NAME,
        seed.pathdb,
        seed.fdb_tuple,
        seed.pathdb as f64 / seed.fdb_tuple as f64,
        seed.pathdb as i64 - seed.fdb_tuple as i64
    );
}
