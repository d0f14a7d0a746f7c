//! The alias read policy, in one place: whether a read that meets an alias (or a path that an
//! unbuilt template could make an alias of) is served, and which item it reads. Get, get_many,
//! history, get at a version and listings all ask here, so a read through an alias answers the
//! same whichever of them it is:
//! - an alias of a template its namespace no longer has (being removed) reads as absent;
//! - an alias, or a path that could be one, of a template whose build is not done is
//!   [`Error::AliasBuilding`] (confirmed against the database first);
//! - any other alias reads as the item it names.

use crate::aliases::builds::{AliasBuild, AliasState, Builds, read_one};
use crate::aliases::template::Template;
use crate::backend::{Backend, Reader, Record};
use crate::encoding::alias::parse_alias;
use crate::encoding::layout;
use crate::encoding::record::visible;
use crate::model::error::Error;
use crate::namespaces::definitions::Namespaces;
use pathdb_keys::KeyPath;

/// Whether a read of `path`, where `record` is stored, is served: `Ok(false)` for an alias of a
/// template its namespace no longer has (being removed: as if gone), and
/// [`Error::AliasBuilding`] for an alias, or a path that could be one, of a template whose
/// build is not done.
///
/// # Errors
/// [`Error::AliasBuilding`]; storage failures.
pub(crate) fn served<R: Reader>(
    namespaces: &Namespaces,
    reader: &R,
    path: &KeyPath,
    record: Option<&Record>,
) -> Result<bool, Error> {
    let of = record.map(|r| parse_alias(&r.value)).transpose()?.flatten();
    // The common case, an item: nothing to look up.
    if of.is_none() && record.is_some() {
        return Ok(true);
    }
    let builds = namespaces.builds(reader)?;
    let Some(of) = of else {
        // Nothing here: a build under way may not have written it yet.
        refuse_unbuilt(reader, &builds, |t| t.could_make(path))?;
        return Ok(true);
    };
    let namespace = of.item.last().namespace().as_str();
    let definitions = namespaces.current(reader)?;
    let current = definitions
        .get(namespace)
        .is_some_and(|c| c.aliases.iter().any(|t| t.as_str() == of.template));
    if !current {
        return Ok(false);
    }
    match builds.get(&(namespace.to_owned(), of.template)) {
        Some(build) if build.state != AliasState::Ready => {
            still_building(reader, namespace, build).map(|()| true)
        }
        _ => Ok(true),
    }
}

/// The path of the item a read of `path` reads (`path` itself, or the item of the alias stored
/// there), or `None` where [`served`] says the read finds nothing.
///
/// # Errors
/// As [`served`].
pub(crate) fn item_path<R: Reader>(
    namespaces: &Namespaces,
    reader: &R,
    path: &KeyPath,
    now: i64,
) -> Result<Option<KeyPath>, Error> {
    let record = visible(reader.get(&layout::item_key(path))?, now);
    if !served(namespaces, reader, path, record.as_ref())? {
        return Ok(None);
    }
    match record.map(|r| parse_alias(&r.value)).transpose()? {
        Some(Some(of)) => Ok(Some(of.item)),
        _ => Ok(Some(path.clone())),
    }
}

/// [`Error::AliasBuilding`] if a listing of `prefix` may meet aliases of a template whose
/// build is not done.
///
/// # Errors
/// [`Error::AliasBuilding`]; storage failures.
pub(crate) fn prefix_served<B: Backend>(
    namespaces: &Namespaces,
    backend: &B,
    prefix: &KeyPath,
) -> Result<(), Error> {
    // The common case, every template ready as last read: no reader for this.
    let cached = namespaces.builds_cached()?;
    if !cached.values().any(|b| b.state.is_unbuilt()) && !backend.shared() {
        return Ok(());
    }
    let reader = backend.reader()?;
    let builds = namespaces.builds(&reader)?;
    refuse_unbuilt(&reader, &builds, |t| t.may_lie_under(prefix))
}

/// [`Error::AliasBuilding`] for `build`, unless the database says it is done by now: the
/// store's copy is read again after a build ends, but a reader may come in between (and on a
/// shared backend another server may have finished it).
fn still_building<R: Reader + ?Sized>(
    reader: &R,
    namespace: &str,
    build: &AliasBuild,
) -> Result<(), Error> {
    match read_one(reader, namespace, &build.template)? {
        Some(now) if now.state != AliasState::Ready => Err(Error::AliasBuilding {
            namespace: namespace.to_owned(),
            template: now.template,
            state: now.state.as_str(),
            checked: now.checked,
        }),
        _ => Ok(()),
    }
}

/// [`Error::AliasBuilding`] for the first template of `builds` whose build is not done
/// (confirmed against the database, [`still_building`]) and that `meets` the read.
fn refuse_unbuilt<R: Reader + ?Sized>(
    reader: &R,
    builds: &Builds,
    meets: impl Fn(&Template) -> bool,
) -> Result<(), Error> {
    for ((namespace, template), build) in builds {
        if build.state.is_unbuilt() && Template::parse(template).is_ok_and(|t| meets(&t)) {
            still_building(reader, namespace, build)?;
        }
    }
    Ok(())
}
