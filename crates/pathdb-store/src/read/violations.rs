//! Which stored items a schema refuses: the dry run of a new schema and the listing of the
//! items the current one refuses. The namespace of an item is only known from its path, so
//! both read every item of the database (export's full scan, a page at a time: a `Scan` on
//! DynamoDB, docs/namespaces.md) and keep only the items of one namespace.

use crate::backend::Backend;
use crate::encoding::layout;
use crate::encoding::token::TokenKey;
use crate::model::error::Error;
use crate::model::error::Violation;
use crate::model::item::{Item, Json};
use crate::namespaces::definitions::{Definitions, newest_text};
use crate::namespaces::definitions::{MAX_VIOLATIONS, NamespaceDefinition, Namespaces, Schema};
use crate::namespaces::migrate::{Chain, Compiled};
use crate::read::export::{ExportRecord, encode_cursor, scan};
use pathdb_keys::KeyPath;

/// Records read per scan request.
const SCAN_PAGE: usize = 1000;
/// Records one page of violations reads at most: a page may come back short (even empty) with
/// a cursor, so that no request reads the whole database.
const PAGE_BUDGET: u64 = 20_000;

/// A stored item that a schema refuses.
#[derive(Clone, Debug, PartialEq)]
pub struct ViolatingItem {
    /// The item.
    pub path: KeyPath,
    /// Its version.
    pub version: u64,
    /// What fails, at most [`MAX_VIOLATIONS`].
    pub violations: Vec<Violation>,
}

/// A page of [`Store::namespace_violations`](crate::store::Store::namespace_violations).
#[derive(Clone, Debug, PartialEq)]
pub struct ViolationPage {
    /// The refused items, in key order.
    pub items: Vec<ViolatingItem>,
    /// Items of the namespace this page read (refused or not).
    pub checked: u64,
    /// Present when the scan goes on: pass it back for the next page.
    pub cursor: Option<String>,
}

/// What a schema would say about the items stored ([`Store::check_schema`](crate::store::Store::check_schema)).
#[derive(Clone, Debug, PartialEq)]
pub struct SchemaCheck {
    /// Items of the namespace read.
    pub checked: u64,
    /// How many of them the schema refuses.
    pub violating: u64,
    /// The first refused items, at most [`MAX_VIOLATIONS`].
    pub first: Vec<ViolatingItem>,
}

/// The value a schema check reads of a stored item (docs/migrations.md): the item in its
/// namespace's newest version, then through `then`, the steps of a version not stored yet (a
/// dry run's).
pub(crate) struct Shape<'a> {
    /// The definitions.
    pub(crate) definitions: &'a Definitions,
    /// Steps after the newest version's.
    pub(crate) then: &'a [Compiled],
}

impl Shape<'_> {
    /// `item`'s value as the check reads it; `None`: as stored.
    fn of(&self, item: &Item) -> Result<Option<Json>, Error> {
        let newest = newest_text(
            self.definitions,
            &item.path,
            item.value.as_str(),
            item.schema_version,
        )?;
        if self.then.is_empty() {
            return Ok(newest);
        }
        let mut value = newest.as_ref().unwrap_or(&item.value).to_value();
        Chain::forward_by(self.then, &mut value);
        Ok(Some(Json::from_value(&value)))
    }
}

/// Reads from `cursor` until `limit` refused items of `namespace` are found, the page's budget
/// is spent or the scan ends.
#[allow(clippy::too_many_arguments)]
pub(crate) fn violations<B: Backend>(
    backend: &B,
    tokens: &TokenKey,
    now: i64,
    namespace: &str,
    schema: &Schema,
    shape: &Shape<'_>,
    cursor: Option<String>,
    limit: usize,
) -> Result<ViolationPage, Error> {
    let mut page = ViolationPage {
        items: Vec::new(),
        checked: 0,
        cursor,
    };
    let mut read = 0u64;
    loop {
        let scanned = scan(backend, tokens, now, page.cursor.as_deref(), SCAN_PAGE)?;
        read += scanned.records.len() as u64;
        for record in &scanned.records {
            if let Some(found) = check(record, namespace, schema, shape, &mut page.checked)? {
                page.items.push(found);
                if page.items.len() == limit {
                    // The next page starts right after this item.
                    let key = layout::item_key(record.path());
                    page.cursor = Some(encode_cursor(tokens, &key));
                    return Ok(page);
                }
            }
        }
        page.cursor = scanned.cursor;
        if page.cursor.is_none() || read >= PAGE_BUDGET {
            return Ok(page);
        }
    }
}

/// Checks every stored item of `namespace` against `schema`; `progress` gets the records read
/// so far after each scan request.
pub(crate) fn check_all<B: Backend>(
    backend: &B,
    tokens: &TokenKey,
    now: i64,
    namespace: &str,
    schema: &Schema,
    shape: &Shape<'_>,
    progress: &mut dyn FnMut(u64),
) -> Result<SchemaCheck, Error> {
    let mut out = SchemaCheck {
        checked: 0,
        violating: 0,
        first: Vec::new(),
    };
    let mut cursor: Option<String> = None;
    let mut read = 0u64;
    loop {
        let scanned = scan(backend, tokens, now, cursor.as_deref(), SCAN_PAGE)?;
        read += scanned.records.len() as u64;
        for record in &scanned.records {
            if let Some(found) = check(record, namespace, schema, shape, &mut out.checked)? {
                out.violating += 1;
                if out.first.len() < MAX_VIOLATIONS {
                    out.first.push(found);
                }
            }
        }
        progress(read);
        match scanned.cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(out),
        }
    }
}

/// `record`'s violations, if it is a live item of `namespace` that `schema` refuses.
fn check(
    record: &ExportRecord,
    namespace: &str,
    schema: &Schema,
    shape: &Shape<'_>,
    checked: &mut u64,
) -> Result<Option<ViolatingItem>, Error> {
    let ExportRecord::Item(item) = record else {
        return Ok(None);
    };
    if item.path.last().namespace().as_str() != namespace {
        return Ok(None);
    }
    *checked += 1;
    let shaped = shape.of(item)?;
    let text = shaped.as_ref().unwrap_or(&item.value);
    let violations = schema.violations_of_text(text.as_str().as_bytes())?;
    Ok((!violations.is_empty()).then(|| ViolatingItem {
        path: item.path.clone(),
        version: item.version,
        violations,
    }))
}

/// A page of the stored items of the namespace of `stored` (its definition as stored now) that
/// its schema refuses, from `cursor`; see [`violations`].
///
/// # Errors
/// A cursor this database did not issue; a schema that does not compile; storage failures.
pub(crate) fn violations_of<B: Backend>(
    namespaces: &Namespaces,
    backend: &B,
    tokens: &TokenKey,
    now: i64,
    stored: &NamespaceDefinition,
    cursor: Option<String>,
    limit: usize,
) -> Result<ViolationPage, Error> {
    let Some(schema) = &stored.definition.schema else {
        // Without a schema every value fits.
        return Ok(ViolationPage {
            items: Vec::new(),
            checked: 0,
            cursor: None,
        });
    };
    let namespace = stored.namespace.as_str();
    // The copy compiled for writes, when it is of this version (it usually is); else a
    // compile of the stored one.
    let definitions = namespaces.current(&backend.reader()?)?;
    let cached = definitions
        .get(namespace)
        .filter(|c| c.stored.version == stored.version)
        .and_then(|c| c.schema.as_ref().ok())
        .and_then(Option::as_ref);
    let compiled;
    let schema = match cached {
        Some(schema) => schema,
        None => {
            compiled = Schema::compile_with(schema, stored.definition.formats)?;
            &compiled
        }
    };
    violations(
        backend,
        tokens,
        now,
        namespace,
        schema,
        &Shape {
            definitions: &definitions,
            then: &[],
        },
        cursor,
        limit.max(1),
    )
}
