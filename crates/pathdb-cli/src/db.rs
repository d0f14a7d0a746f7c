//! What the item commands need from a database, so that they print the same output whether
//! they run on a local file or against a server (`--server URL`).

use anyhow::Result;
use pathdb_keys::KeyPath;
use pathdb_store::backend::Backend;
use pathdb_store::{Condition, ExportRecord, Item, Json, ListPage, ListRequest, PutOptions, Store};

/// The data API as the CLI uses it.
pub trait Db {
    /// The item, or a past version of it.
    fn get(&self, path: &KeyPath, version: Option<u64>) -> Result<Option<Item>>;
    /// Create or replace.
    fn put(&self, path: &KeyPath, value: Json, options: PutOptions) -> Result<Item>;
    /// Delete; the deleted item, if there was one.
    fn delete(&self, path: &KeyPath, condition: Option<Condition>) -> Result<Option<Item>>;
    /// One page of a listing.
    fn list(&self, request: &ListRequest) -> Result<ListPage>;
    /// Revisions, newest first.
    fn history(&self, path: &KeyPath, limit: usize) -> Result<Vec<Item>>;
    /// Writes every record as a JSON line.
    fn export(&self, out: &mut dyn std::io::Write) -> Result<()>;
    /// Writes records; returns how many.
    fn import(&self, records: &[ExportRecord]) -> Result<usize>;
}

impl<B: Backend> Db for Store<B> {
    fn get(&self, path: &KeyPath, version: Option<u64>) -> Result<Option<Item>> {
        Ok(match version {
            Some(v) => self.get_version(path, v)?,
            None => Store::get(self, path)?,
        })
    }

    fn put(&self, path: &KeyPath, value: Json, options: PutOptions) -> Result<Item> {
        Ok(Store::put(self, path, value, options)?)
    }

    fn delete(&self, path: &KeyPath, condition: Option<Condition>) -> Result<Option<Item>> {
        Ok(Store::delete(self, path, condition)?)
    }

    fn list(&self, request: &ListRequest) -> Result<ListPage> {
        Ok(Store::list(self, request)?)
    }

    fn history(&self, path: &KeyPath, limit: usize) -> Result<Vec<Item>> {
        Ok(Store::history(self, path, limit)?)
    }

    fn export(&self, out: &mut dyn std::io::Write) -> Result<()> {
        let mut cursor: Option<String> = None;
        loop {
            let page = self.scan(cursor.as_deref(), 1000)?;
            for record in &page.records {
                writeln!(out, "{}", serde_json::to_string(record)?)?;
            }
            match page.cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(()),
            }
        }
    }

    fn import(&self, records: &[ExportRecord]) -> Result<usize> {
        Ok(Store::import(self, records)?)
    }
}
