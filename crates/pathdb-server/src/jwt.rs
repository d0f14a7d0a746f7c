//! Placeholder until the JWT verifier lands (branch `jwt`).
#![allow(missing_docs, dead_code)]

use serde_json::{Map, Value};

#[derive(Clone)]
pub struct JwtVerifier;

pub struct Verified {
    pub claims: Map<String, Value>,
    pub role: String,
    pub expires_at: Option<i64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JwtRefusal {
    Malformed,
    Expired,
}

impl JwtRefusal {
    pub fn reason(self) -> &'static str {
        "malformed"
    }
    pub fn message(self) -> &'static str {
        "malformed"
    }
}

impl JwtVerifier {
    pub fn looks_like_jwt(token: &str) -> bool {
        token.split('.').count() == 3
    }
    pub fn verify(&self, _: &str) -> Result<Verified, JwtRefusal> {
        Err(JwtRefusal::Malformed)
    }
}
