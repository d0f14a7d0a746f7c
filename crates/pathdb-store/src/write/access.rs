//! The writes of access control's records (access/): roles, and issued tokens made, revoked and
//! marked as used, each one record of the system partition (write/system.rs).

use crate::access::roles::{self, Role, StoredRole};
use crate::access::tokens::{self, NewToken, TokenInfo};
use crate::backend::Backend;
use crate::encoding::layout;
use crate::model::error::{Condition, Error, StorageError};
use crate::model::item::Timestamp;
use crate::write::commit::Db;
use crate::write::system::{self, Next};

/// Refuses a change to a built-in role.
fn not_builtin(name: &str) -> Result<(), Error> {
    roles::check_name(name)?;
    if roles::builtin(name).is_some() {
        return Err(Error::BuiltinRole(name.to_owned()));
    }
    Ok(())
}

/// Stores `role` as `name` if `condition` holds; returns it and whether it is new.
///
/// # Errors
/// [`Error::InvalidRequest`] (name, rules), [`Error::BuiltinRole`],
/// [`Error::RoleConditionFailed`], storage failures.
pub(crate) fn put_role<B: Backend>(
    db: &Db<B>,
    name: &str,
    role: &Role,
    condition: Option<Condition>,
) -> Result<(StoredRole, bool), Error> {
    not_builtin(name)?;
    role.compile()?;
    let value = roles::to_value(role);
    let written = system::write(
        db,
        &layout::role_key(name),
        condition,
        &|condition, current| refused(name, condition, current),
        &mut |_| Ok(Next::Put(value.clone())),
        &mut |_, _, _| Ok(Vec::new()),
    )?;
    let stored = written
        .after
        .map(|r| roles::from_record(name, &r))
        .transpose()?
        .flatten()
        .ok_or_else(|| StorageError::msg("a role write returned nothing"))?;
    Ok((stored, written.before.is_none()))
}

/// Deletes the role `name` if `condition` holds; returns the role removed (`None`: there was
/// none). Tokens of the role stay, and allow nothing until a role of that name exists again.
///
/// # Errors
/// [`Error::BuiltinRole`], [`Error::RoleConditionFailed`], storage failures.
pub(crate) fn delete_role<B: Backend>(
    db: &Db<B>,
    name: &str,
    condition: Option<Condition>,
) -> Result<Option<StoredRole>, Error> {
    not_builtin(name)?;
    let written = system::write(
        db,
        &layout::role_key(name),
        condition,
        &|condition, current| refused(name, condition, current),
        &mut |_| Ok(Next::Delete),
        &mut |_, _, _| Ok(Vec::new()),
    )?;
    Ok(written
        .before
        .map(|r| roles::from_record(name, &r))
        .transpose()?
        .flatten())
}

fn refused(name: &str, condition: Condition, current: Option<u64>) -> Error {
    Error::RoleConditionFailed {
        role: name.to_owned(),
        condition,
        current,
    }
}

/// Makes a token: its listing and its whole text, shown only now.
///
/// # Errors
/// [`Error::InvalidRequest`] (variables, an expiry in the past), [`Error::UnknownRole`],
/// storage failures.
pub(crate) fn create_token<B: Backend>(
    db: &Db<B>,
    token: &NewToken,
) -> Result<(TokenInfo, String), Error> {
    tokens::check(token)?;
    if token.expires_at.is_some_and(|t| t.0 <= db.now()) {
        return Err(Error::InvalidRequest(
            "expires_at is in the past: the token would never work".into(),
        ));
    }
    if roles::read(&db.backend.reader()?, &token.role)?.is_none() {
        return Err(Error::UnknownRole(token.role.clone()));
    }
    let (id, whole, value) = tokens::issue(token)?;
    let written = system::write(
        db,
        &layout::access_token_key(&id),
        // 80 random bits: a taken id is a broken random source, not a race to retry.
        Some(Condition::MustNotExist),
        &|_, _| StorageError::msg("a new token's random id is taken").into(),
        &mut |_| Ok(Next::Put(value.clone())),
        &mut |_, _, _| Ok(Vec::new()),
    )?;
    let info = written
        .after
        .map(|r| tokens::from_record(&id, &r))
        .transpose()?
        .flatten()
        .ok_or_else(|| StorageError::msg("a token write returned nothing"))?;
    Ok((info, whole))
}

/// Revokes the token `id`; whether there was one.
///
/// # Errors
/// Storage failures.
pub(crate) fn revoke_token<B: Backend>(db: &Db<B>, id: &str) -> Result<bool, Error> {
    let written = system::write(
        db,
        &layout::access_token_key(id),
        None,
        &|_, _| unreachable_condition(),
        &mut |_| Ok(Next::Delete),
        &mut |_, _, _| Ok(Vec::new()),
    )?;
    Ok(written.before.is_some())
}

/// Records that the token `id` was used in the minute that begins at `minute`, unless it has
/// been revoked (the write is conditional on the record read, so it never brings one back).
///
/// # Errors
/// Storage failures.
pub(crate) fn touch_token<B: Backend>(
    db: &Db<B>,
    id: &str,
    minute: Timestamp,
) -> Result<(), Error> {
    system::write(
        db,
        &layout::access_token_key(id),
        None,
        &|_, _| unreachable_condition(),
        &mut |live| {
            Ok(
                match live
                    .map(|r| tokens::touched(r, minute))
                    .transpose()?
                    .flatten()
                {
                    Some(value) => Next::Put(value),
                    None => Next::Keep,
                },
            )
        },
        &mut |_, _, _| Ok(Vec::new()),
    )?;
    Ok(())
}

/// The refusal of a write with no condition, which never happens.
fn unreachable_condition() -> Error {
    StorageError::msg("a write without a condition was refused for one").into()
}
