//! Stage: the value's schema version (docs/migrations.md). A write that speaks an older
//! definition version ([`PutOptions::schema_version`](crate::PutOptions::schema_version)) has
//! its value brought forward to the newest version before anything else sees it (the schema
//! stage checks it against the newest schema; aliases, the change log and history keep it in
//! that shape), and once a namespace's versions have steps every value written into it is
//! stored stamped with the newest version (encoding/stamp.rs). A patch in an older version applies to the
//! stored item as that version reads it.

use crate::backend::{Reader, Record};
use crate::encoding::stamp::{split_stored, stamped};
use crate::model::error::Error;
use crate::model::item::Json;
use crate::namespaces::definitions::of_path;
use crate::namespaces::migrate::OnConflict;
use crate::write::plan::Context;
use pathdb_keys::KeyPath;
use std::borrow::Cow;

/// The stored bytes of `value`, written at `path` in version `speaks` (`None`: the newest):
/// in the newest version, stamped with it.
///
/// # Errors
/// [`Error::UnknownSchemaVersion`], [`Error::MigrationFailed`] (a value the steps cannot
/// bring forward), a corrupt definition copy.
pub(crate) fn stored_value<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    path: &KeyPath,
    value: &Json,
    speaks: Option<u64>,
) -> Result<(Vec<u8>, Option<Json>), Error> {
    let Some(compiled) = of_path(ctx.definitions()?, path) else {
        if let Some(version) = speaks {
            return Err(Error::UnknownSchemaVersion {
                namespace: path.last().namespace().as_str().to_owned(),
                version,
                newest: 0,
            });
        }
        return Ok((value.as_str().as_bytes().to_vec(), None));
    };
    let forward = match speaks {
        Some(version) => compiled.translate(
            path,
            value.as_str(),
            compiled.speaks(version)?,
            None,
            OnConflict::Refuse,
        )?,
        None => None,
    };
    let text = forward.as_ref().unwrap_or(value).as_str();
    Ok((stamped(compiled.stamp(), text), forward))
}

/// The value a patch in version `speaks` applies to: the live `record` as that version reads
/// it.
///
/// # Errors
/// [`Error::UnknownSchemaVersion`], a corrupt record.
pub(crate) fn patch_base<'r, R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    path: &KeyPath,
    record: &'r Record,
    speaks: Option<u64>,
) -> Result<Cow<'r, str>, Error> {
    let (stamp, json) = split_stored(&record.value)?;
    let json = std::str::from_utf8(json)
        .map_err(|e| crate::model::error::StorageError::new("stored value is not UTF-8", e))?;
    let Some(compiled) = of_path(ctx.definitions()?, path) else {
        return Ok(Cow::Borrowed(json));
    };
    let asked = speaks.map(|v| compiled.speaks(v)).transpose()?;
    Ok(
        match compiled.translate(path, json, stamp, asked, OnConflict::Replace)? {
            Some(translated) => Cow::Owned(translated.as_str().to_owned()),
            None => Cow::Borrowed(json),
        },
    )
}

/// The stored bytes of a value that a move or copy takes from `from`'s namespace into `to`'s
/// (the relocate stage): in the newest version of its old namespace, stamped with the newest
/// of its new one, whose steps it never went through.
///
/// # Errors
/// A corrupt record or definition copy.
pub(crate) fn rehomed<R: Reader + ?Sized>(
    ctx: &Context<'_, R>,
    from: &KeyPath,
    to: &KeyPath,
    value: &[u8],
) -> Result<Vec<u8>, Error> {
    let (stamp, json) = split_stored(value)?;
    let json = std::str::from_utf8(json)
        .map_err(|e| crate::model::error::StorageError::new("stored value is not UTF-8", e))?;
    let definitions = ctx.definitions()?;
    let newest = crate::namespaces::definitions::newest_text(definitions, from, json, stamp)?;
    let text = newest.as_ref().map_or(json, Json::as_str);
    let stamp = of_path(definitions, to).map_or(0, |c| c.stamp());
    Ok(stamped(stamp, text))
}
