//! HTTP API tests.
