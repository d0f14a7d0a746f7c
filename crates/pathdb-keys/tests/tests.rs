//! Integration tests of pathdb-keys through its public API: one test binary, modules below.

mod model;
mod properties;
mod strategy;
mod vectors;
