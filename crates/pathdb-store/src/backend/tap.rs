//! What the file backend tells a listener about its commits: the hook under the continuous
//! archive (the store's `backup/archive`), which keeps every commit so that a database can be
//! rebuilt as of any of them.
//!
//! A commit is its number (consecutive, never reused: the journal's sequence number, which the
//! file also records) and its payload: the commit's time and the rows it set and removed, in the
//! commit journal's encoding ([`super::journal`]). The committer calls the tap on its own thread,
//! in commit order, before the commit's writers are answered; so a tap must only copy, never
//! wait on a disk or a network, except in [`CommitTap::sync`], which the committer calls before
//! each durable commit of the file (every few seconds at most).
//!
//! The contract that keeps the archive gapless across a crash: a commit is in the journal or in
//! the tap's durable storage at every moment. The journal holds every commit since the file's
//! last durable commit; before each durable commit (after which the journal starts over) the
//! tap syncs; and at open the tap is handed the journal's commits ([`CommitTap::resume`]).

use std::fmt::Debug;

/// Receives every commit of a [`FileBackend`](super::FileBackend), in order; see the module.
/// Errors are the tap's own business: a failing tap must never fail a commit.
pub trait CommitTap: Debug + Send + Sync + 'static {
    /// At open, before any commit: the file is database `database` (its id, which its
    /// journal carries), its last durable commit is `applied`, and `replayed[i]` is the payload
    /// of commit `applied + 1 + i`, taken from the journal. A tap keeps those it lacks; one that
    /// lacks commits up to `applied` too has a gap it must name.
    fn resume(&self, database: u64, applied: u64, replayed: &[Vec<u8>]);

    /// Commit `number` is made (journaled and applied); `payload` as the module says.
    fn commit(&self, number: u64, payload: &[u8]);

    /// Commit `number` is about to be made durable in the file directly (a large commit, which
    /// the journal does not hold): keep it, provisionally, before [`CommitTap::sync`].
    fn prepare(&self, number: u64, payload: &[u8]);

    /// The [`CommitTap::prepare`]d commit `number` was made (`true`) or not (`false`: forget
    /// it; the number will be used again).
    fn settle(&self, number: u64, committed: bool);

    /// Make every commit received so far survive a crash or power loss: the file is about to
    /// make them durable, and the journal to start over.
    fn sync(&self);
}
