//! Roles: named lists of path rules (access/rules.rs), kept in the database at `00 08` + name
//! (encoding/layout.rs) and versioned like namespace definitions (a delete leaves a tombstone, so
//! a version is never used twice for one name). The three scopes of earlier builds are built-in
//! roles that no one can change: `read`, `read-write` and `admin`, each on `/**`.

use crate::access::rules::{CompiledRule, MAX_RULES, Op, Rule};
use crate::backend::{Direction, Reader, Record};
use crate::encoding::layout;
use crate::model::error::{Error, StorageError};
use crate::model::item::Timestamp;
use serde::{Deserialize, Serialize};

/// The longest role name.
const MAX_NAME_BYTES: usize = 64;
/// The longest description.
const MAX_DESCRIPTION_BYTES: usize = 1024;

/// The built-in roles, by name, with the operations each allows on `/**`.
pub const BUILTIN_ROLES: [(&str, &[Op]); 3] = [
    ("read", &[Op::Read]),
    ("read-write", &[Op::Read, Op::Write]),
    ("admin", &[Op::Read, Op::Write, Op::Admin]),
];

/// What a role is: rules, and a description for people.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Role {
    /// The rules; a path is allowed an operation when any rule allows it there.
    pub rules: Vec<Rule>,
    /// For people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl Role {
    /// The role's rules compiled, or why they cannot be.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] naming the first bad rule, too many rules, too long a
    /// description.
    pub fn compile(&self) -> Result<Vec<CompiledRule>, Error> {
        if self.rules.len() > MAX_RULES {
            return Err(Error::InvalidRequest(format!(
                "a role has at most {MAX_RULES} rules, this one {}",
                self.rules.len()
            )));
        }
        if self
            .description
            .as_ref()
            .is_some_and(|d| d.len() > MAX_DESCRIPTION_BYTES)
        {
            return Err(Error::InvalidRequest(format!(
                "a role's description takes at most {MAX_DESCRIPTION_BYTES} bytes"
            )));
        }
        self.rules.iter().map(CompiledRule::compile).collect()
    }
}

/// A role as stored, with its metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRole {
    /// The role's name.
    pub name: String,
    /// 1 when first stored, +1 on every change; 0 for a built-in role.
    pub version: u64,
    /// When first stored (0 for a built-in role).
    pub created_at: Timestamp,
    /// When last changed (0 for a built-in role).
    pub modified_at: Timestamp,
    /// The rules.
    pub role: Role,
    /// One of [`BUILTIN_ROLES`], which cannot be changed.
    pub builtin: bool,
}

/// The built-in role `name`, if it is one.
pub fn builtin(name: &str) -> Option<StoredRole> {
    let (name, ops) = BUILTIN_ROLES.iter().find(|(n, _)| *n == name)?;
    Some(StoredRole {
        name: (*name).to_owned(),
        version: 0,
        created_at: Timestamp(0),
        modified_at: Timestamp(0),
        role: Role {
            rules: vec![Rule {
                path: "/**".to_owned(),
                allow: ops.to_vec(),
            }],
            description: Some(format!(
                "built in: {} on every path",
                ops.iter()
                    .map(|o| o.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        },
        builtin: true,
    })
}

/// [`Error::InvalidRequest`] unless `name` is a role name: 1 to 64 of `a-z`, `A-Z`, `0-9`, `_`,
/// `-`, `.`.
///
/// # Errors
/// As above.
pub fn check_name(name: &str) -> Result<(), Error> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if valid {
        Ok(())
    } else {
        Err(Error::InvalidRequest(format!(
            "role name {name:?}: 1 to {MAX_NAME_BYTES} letters, digits, `_`, `-` or `.`"
        )))
    }
}

/// The stored form of `role`.
pub(crate) fn to_value(role: &Role) -> Vec<u8> {
    // Strings and lists of enums always serialize.
    serde_json::to_vec(role).unwrap_or_default()
}

/// The role stored in `record` (`None`: a tombstone).
pub(crate) fn from_record(name: &str, record: &Record) -> Result<Option<StoredRole>, Error> {
    if record.value.is_empty() {
        return Ok(None);
    }
    let role = serde_json::from_slice(&record.value)
        .map_err(|e| StorageError::new(format!("corrupt role {name:?}"), e))?;
    Ok(Some(StoredRole {
        name: name.to_owned(),
        version: record.version,
        created_at: Timestamp(record.created_at),
        modified_at: Timestamp(record.modified_at),
        role,
        builtin: false,
    }))
}

/// The role `name` (built in, or as `reader` shows it).
///
/// # Errors
/// Storage failures.
pub(crate) fn read<R: Reader + ?Sized>(
    reader: &R,
    name: &str,
) -> Result<Option<StoredRole>, Error> {
    if let Some(role) = builtin(name) {
        return Ok(Some(role));
    }
    match reader.get(&layout::role_key(name))? {
        Some(record) => from_record(name, &record),
        None => Ok(None),
    }
}

/// Every role, built-in ones included, by name.
///
/// # Errors
/// Storage failures.
pub(crate) fn list<R: Reader + ?Sized>(reader: &R) -> Result<Vec<StoredRole>, Error> {
    let mut out: Vec<StoredRole> = BUILTIN_ROLES
        .iter()
        .filter_map(|(name, _)| builtin(name))
        .collect();
    for (sort, record) in reader.scan(
        layout::SYSTEM_PARTITION,
        &layout::role_range(),
        Direction::Forward,
        usize::MAX,
    )? {
        let name = String::from_utf8_lossy(&sort[1..]).into_owned();
        out.extend(from_record(&name, &record)?);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}
