//! Change feeds (feed/): positions, pages, and waiting for a commit.

use crate::backend::Backend;
use crate::encoding::changelog::{ChangePage, ChangeToken};
use crate::feed::reader::Filtered;
use crate::feed::reader::{SHARED_POLL, position, read, wait};
use crate::filter::{Filter, Readable};
use crate::model::error::Error;
use crate::namespaces::definitions::no_change_log;
use crate::namespaces::versions::SchemaVersions;
use crate::read::list::migrations;
use crate::store::Store;
use pathdb_keys::KeyPath;
use std::time::Duration;

impl<B: Backend> Store<B> {
    /// The current position of the change feed of `prefix`'s group: following from it delivers
    /// every change committed after this call.
    ///
    /// # Errors
    /// Storage failures.
    pub fn changes_token(&self, prefix: &KeyPath) -> Result<ChangeToken, Error> {
        no_change_log(self.definitions()?.as_ref(), prefix)?;
        let reader = self.db.backend.reader()?;
        position(&self.db.tokens, &reader, &prefix.partition_key())
    }

    /// The changes under `prefix` (the path and its subtree) after `since`, at most about
    /// `limit` of them, in commit order. Without `since`, no changes and the current position.
    ///
    /// A page never ends inside a commit, so a transaction's changes in this group arrive
    /// together (a page may hold more than `limit` changes to finish one). Changes in the group
    /// but outside `prefix` are read and skipped: `next_token` moves past them.
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] for a group whose namespace keeps no change log
    /// ([`Definition::changes`](crate::Definition::changes));
    /// [`Error::ChangesExpired`] when changes after `since` are older than the retention window
    /// (or the token is ahead of this database); [`Error::InvalidChangeToken`] for a token of
    /// another group or database, or an altered one; [`Error::InvalidRequest`] for a limit
    /// outside 1..=[`MAX_CHANGES_LIMIT`](crate::MAX_CHANGES_LIMIT); storage failures.
    pub fn changes(
        &self,
        prefix: &KeyPath,
        since: Option<&ChangeToken>,
        limit: usize,
    ) -> Result<ChangePage, Error> {
        self.changes_filtered(prefix, since, limit, None)
    }

    /// [`Store::changes`] of a filter's result (docs/filters.md): only the changes that matter
    /// to it, in commit order. An item that matches after a change (entering or changing) is
    /// that change; an item that matched before and does not after (changed, deleted, expired
    /// or moved away) is a [`Change::Delete`](crate::Change::Delete) with
    /// [`ChangeEntry::left`](crate::ChangeEntry::left); a change to an item that matched neither
    /// before nor after is read and skipped (`next_token` moves past it). `limit` counts what is
    /// delivered. With `readable`, a change to an item the caller may not read (one filed under
    /// an alias) fails the read rather than be decided on.
    ///
    /// # Errors
    /// As [`Store::changes`]; [`Error::Unreadable`].
    pub fn changes_filtered(
        &self,
        prefix: &KeyPath,
        since: Option<&ChangeToken>,
        limit: usize,
        filter: Option<(&Filter, Option<&Readable>)>,
    ) -> Result<ChangePage, Error> {
        let db = &self.db;
        let reader = db.backend.reader()?;
        let retention = db.options.change_retention;
        let definitions = self.definitions()?;
        no_change_log(&definitions, prefix)?;
        let filter = filter.map(|(filter, readable)| Filtered {
            filter,
            readable,
            migrations: migrations(&definitions, &SchemaVersions::newest()),
        });
        let read = || {
            read(
                &reader,
                &db.tokens,
                retention,
                db.now(),
                prefix,
                since,
                limit,
                filter,
            )
        };
        match filter {
            Some(_) => Filter::on_stack(read),
            None => read(),
        }
    }

    /// [`Store::changes`], waiting up to `timeout` for at least one change: woken by this
    /// process's commits (no polling) and, on a backend other processes write too
    /// ([`Backend::shared`]), also reading again every 200 ms.
    ///
    /// # Errors
    /// As [`Store::changes`].
    pub fn wait_changes(
        &self,
        prefix: &KeyPath,
        since: &ChangeToken,
        limit: usize,
        timeout: Duration,
    ) -> Result<ChangePage, Error> {
        self.wait_changes_filtered(prefix, since, limit, timeout, None)
    }

    /// [`Store::wait_changes`] of a filter's result ([`Store::changes_filtered`]): waits for a
    /// change that matters to it.
    ///
    /// # Errors
    /// As [`Store::changes`].
    pub fn wait_changes_filtered(
        &self,
        prefix: &KeyPath,
        since: &ChangeToken,
        limit: usize,
        timeout: Duration,
        filter: Option<(&Filter, Option<&Readable>)>,
    ) -> Result<ChangePage, Error> {
        wait(
            |since| self.changes_filtered(prefix, Some(since), limit, filter),
            || self.commit_listener(prefix),
            self.changes_poll_interval(),
            since,
            timeout,
        )
    }

    /// A listener that completes at this store's next commit that changes the group of
    /// `prefix` (commits of other groups leave it waiting): for async callers that wait for
    /// changes without a thread each (await it, then call [`Store::changes`]). Create it before
    /// reading, so that no commit falls between. A feed follows one group, so this is every
    /// commit it can see; other processes' commits do not complete it (see
    /// [`Store::changes_poll_interval`]).
    pub fn commit_listener(&self, prefix: &KeyPath) -> event_listener::EventListener {
        self.db.waiters.listen(&prefix.partition_key())
    }

    /// How often a waiting feed must read again because other processes write (`None`: this
    /// process's commits are every change, so waiting on [`Store::commit_listener`] suffices).
    pub fn changes_poll_interval(&self) -> Option<Duration> {
        self.db.backend.shared().then_some(SHARED_POLL)
    }
}
