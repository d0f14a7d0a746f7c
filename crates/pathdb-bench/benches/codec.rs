//! Key codec benchmark: `pathdb-keys` against `foundationdb-tuple`, `storekey` and
//! `memcomparable`, all encoding the same typed values (see the `pathdb_bench` crate docs).
//!
//! Groups, one per path so criterion prints the codecs side by side:
//! - `encode/<path>`: `pathdb`, `fdb_tuple`, `storekey`, `memcomparable`. Each appends to one
//!   reused `Vec<u8>` that is cleared first, so no encoder allocates.
//! - `decode/<path>`: `pathdb` (owned `KeyPath::decode`), `pathdb_ref` (zero-copy
//!   `KeyPathRef::decode`), the peers into owned tuples of `String`/`i64`/`Uuid`, and
//!   `fdb_tuple_borrowed` / `storekey_borrowed` into tuples of `Cow<str>` (memcomparable cannot
//!   borrow). Owned decoders allocate their strings, and the result is dropped inside the timing.
//!
//! Run: `cargo bench -p pathdb-bench --bench codec -- --warm-up-time 1 --measurement-time 3`.

use criterion::{Criterion, criterion_group, criterion_main};
use pathdb_bench::{DeepPath, Fixture, SeedExample, ShortPath, check_round_trips};
use pathdb_keys::{KeyPath, KeyPathRef};
use std::hint::black_box;

fn bench_path<F: Fixture>(c: &mut Criterion) {
    check_round_trips::<F>();
    let values = F::values();
    let path = values.key_path();
    let mut buf: Vec<u8> = Vec::with_capacity(512);

    let mut group = c.benchmark_group(format!("encode/{}", F::NAME));
    group.bench_function("pathdb", |b| {
        b.iter(|| {
            buf.clear();
            black_box(&path).encode_into(&mut buf);
            black_box(buf.as_slice());
        });
    });
    group.bench_function("fdb_tuple", |b| {
        b.iter(|| {
            buf.clear();
            black_box(&values).fdb_encode(&mut buf);
            black_box(buf.as_slice());
        });
    });
    group.bench_function("storekey", |b| {
        b.iter(|| {
            buf.clear();
            black_box(&values).storekey_encode(&mut buf);
            black_box(buf.as_slice());
        });
    });
    group.bench_function("memcomparable", |b| {
        b.iter(|| {
            buf.clear();
            black_box(&values).memcomparable_encode(&mut buf);
            black_box(buf.as_slice());
        });
    });
    group.finish();

    let pathdb_bytes = path.encode();
    let mut fdb_bytes = Vec::new();
    values.fdb_encode(&mut fdb_bytes);
    let mut storekey_bytes = Vec::new();
    values.storekey_encode(&mut storekey_bytes);
    let mut memcomparable_bytes = Vec::new();
    values.memcomparable_encode(&mut memcomparable_bytes);

    let mut group = c.benchmark_group(format!("decode/{}", F::NAME));
    group.bench_function("pathdb", |b| {
        b.iter(|| KeyPath::decode(black_box(&pathdb_bytes)).expect("pathdb"));
    });
    group.bench_function("pathdb_ref", |b| {
        b.iter(|| KeyPathRef::decode(black_box(&pathdb_bytes)).expect("pathdb"));
    });
    group.bench_function("fdb_tuple", |b| {
        b.iter(|| F::fdb_decode(black_box(&fdb_bytes)));
    });
    group.bench_function("storekey", |b| {
        b.iter(|| F::storekey_decode(black_box(&storekey_bytes)));
    });
    group.bench_function("memcomparable", |b| {
        b.iter(|| F::memcomparable_decode(black_box(&memcomparable_bytes)));
    });
    group.bench_function("fdb_tuple_borrowed", |b| {
        b.iter(|| F::fdb_decode_borrowed(black_box(&fdb_bytes)));
    });
    group.bench_function("storekey_borrowed", |b| {
        b.iter(|| F::storekey_decode_borrowed(black_box(&storekey_bytes)));
    });
    group.finish();
}

fn codec(c: &mut Criterion) {
    bench_path::<SeedExample>(c);
    bench_path::<ShortPath>(c);
    bench_path::<DeepPath>(c);
}

criterion_group!(benches, codec);
criterion_main!(benches);
