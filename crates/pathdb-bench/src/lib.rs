//! PathDB's benchmarks, as a library for their binaries:
//! - [`http`]: the closed-loop HTTP load generator behind `pathdb bench http` and the `bench-http`
//!   binary (always built: the CLI uses it);
//! - [`counter`]: one hot counter, `PATCH` increments against a client's get/`If-Match` loop,
//!   behind `pathdb bench counter`;
//! - [`dynamodb_cost`], with the `dynamodb` feature: what each store operation costs on
//!   DynamoDB in requests and capacity units, behind `pathdb bench dynamodb-cost` (the CLI's
//!   `dynamodb` feature turns it on);
//! - the key codec fixtures against foundationdb-tuple, storekey and memcomparable (re-exported
//!   from `codecs`), for `benches/codec.rs` and the examples; with the default `peers` feature,
//!   which also builds `store-bench` (PathDB's store against raw redb and SQLite).
//!
//! The CLI depends on this crate without `peers`, so installing `pathdb` never compiles SQLite
//! or the peer codecs; and without `dynamodb` unless its own `dynamodb` feature is on, so a
//! default build never compiles the AWS SDK.

#![deny(missing_docs)]

#[cfg(feature = "peers")]
pub mod codecs;
pub mod counter;
#[cfg(feature = "dynamodb")]
pub mod dynamodb_cost;
pub mod http;
mod transport;
mod watchers;

#[cfg(feature = "peers")]
pub use codecs::*;
