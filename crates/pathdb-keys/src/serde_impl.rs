//! serde support: a key path serializes as its canonical text form.

use crate::KeyPath;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

impl Serialize for KeyPath {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for KeyPath {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<KeyPath, D::Error> {
        struct PathVisitor;
        impl Visitor<'_> for PathVisitor {
            type Value = KeyPath;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key path in text form, such as \"/user-7/post-1\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<KeyPath, E> {
                v.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_str(PathVisitor)
    }
}
