//! The versions a request speaks: the `Schema-Version` header (`user=1, order=3`), parsed.

use crate::model::error::Error;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// The definition version a request speaks, per namespace (absent: the newest).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchemaVersions(BTreeMap<String, u64>);

impl SchemaVersions {
    /// No namespace named: every value in its newest version.
    pub fn newest() -> SchemaVersions {
        SchemaVersions::default()
    }

    /// Speaks `version` of `namespace`.
    pub fn with(mut self, namespace: &str, version: u64) -> SchemaVersions {
        self.0.insert(namespace.to_owned(), version);
        self
    }

    /// The version named for `namespace`.
    pub fn get(&self, namespace: &str) -> Option<u64> {
        self.0.get(namespace).copied()
    }

    /// Whether no namespace is named.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The namespaces named and their versions.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(n, v)| (n.as_str(), *v))
    }
}

/// `user=1, order=3`: namespaces and positive versions, separated by commas; spaces around
/// them are ignored.
impl FromStr for SchemaVersions {
    type Err = Error;

    fn from_str(text: &str) -> Result<SchemaVersions, Error> {
        let bad = |why: String| Error::InvalidRequest(format!("schema versions {text:?}: {why}"));
        let mut out = BTreeMap::new();
        for part in text.split(',') {
            let part = part.trim();
            if part.is_empty() {
                if text.trim().is_empty() {
                    continue;
                }
                return Err(bad("an empty entry between commas".into()));
            }
            let Some((namespace, version)) = part.split_once('=') else {
                return Err(bad(format!("{part:?} is not namespace=version")));
            };
            let namespace = namespace.trim();
            pathdb_keys::Namespace::new(namespace)
                .map_err(|rule| bad(format!("namespace {namespace:?}: {rule}")))?;
            let version = version
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|v| *v > 0)
                .ok_or_else(|| bad(format!("{:?} is not a version (1, 2, ...)", version.trim())))?;
            if out.insert(namespace.to_owned(), version).is_some() {
                return Err(bad(format!("{namespace} is named twice")));
            }
        }
        Ok(SchemaVersions(out))
    }
}

impl fmt::Display for SchemaVersions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (namespace, version)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{namespace}={version}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_parses_and_prints() {
        let v: SchemaVersions = " user=1, order = 3 ".parse().expect("ok");
        assert_eq!(v.get("user"), Some(1));
        assert_eq!(v.get("order"), Some(3));
        assert_eq!(v.to_string(), "order=3, user=1");
        assert!("".parse::<SchemaVersions>().expect("ok").is_empty());
        for bad in [
            "user",
            "user=0",
            "user=x",
            "user=1,,order=2",
            "user=1, user=2",
            "Us er=1",
            "user=-1",
        ] {
            assert!(bad.parse::<SchemaVersions>().is_err(), "{bad}");
        }
    }
}
