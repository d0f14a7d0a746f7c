//! `POST /v1/import`'s body: read as it arrives, a line at a time, and a cap on imports at once.
//!
//! An import checks every line before it writes anything, so its records are held in memory
//! until the last line has arrived. What it need not hold is the body's text as well: lines are
//! parsed on the blocking pool while the body still arrives, and each line's text is dropped once
//! parsed. Four concurrent 256 MB imports used to peak at 2.4 GB (the body, its lines copied, and
//! the records); now one import holds its records and a few chunks, and at most
//! [`DEFAULT_MAX_IMPORTS`] run at once (issue 22).

use crate::error::ApiError;
use crate::slots::Slots;
use axum::http::StatusCode;
use pathdb_store::ImportRecord;
use tokio::sync::{OwnedSemaphorePermit, mpsc};

/// Imports at once, by default: each holds its records in memory until its last line.
pub const DEFAULT_MAX_IMPORTS: usize = 2;
/// The `Retry-After` of an import refused at the cap, in seconds.
const RETRY_AFTER: u64 = 10;
/// Body chunks in flight between the connection and the parser.
const CHUNKS: usize = 8;

/// The cap on imports running at once. Clones share it.
#[derive(Clone, Debug)]
pub struct Imports {
    slots: Slots,
}

impl Imports {
    /// At most `max` imports at once (at least 1).
    pub fn new(max: usize) -> Imports {
        Imports {
            slots: Slots::new(max),
        }
    }

    /// A slot for one import, held until it ends; or the 503 that refuses it. Taken before the
    /// body is read, so a refused import costs no memory.
    pub(crate) fn admit(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        self.slots.take(RETRY_AFTER, |max| {
            format!(
                "{max} imports are already running, the server's limit; retry when one has finished"
            )
        })
    }
}

impl Default for Imports {
    fn default() -> Imports {
        Imports::new(DEFAULT_MAX_IMPORTS)
    }
}

/// An import's records, and the body's line of each.
pub(crate) struct Records {
    /// The records, in the body's order.
    pub(crate) records: Vec<ImportRecord>,
    /// The line (from 1) of each record.
    pub(crate) lines: Vec<u64>,
}

impl Records {
    /// The line of the record at `index`.
    pub(crate) fn line(&self, index: usize) -> Option<u64> {
        self.lines.get(index).copied()
    }
}

/// Reads `body` (at most `limit` bytes, with at most `idle` between chunks) and parses it as
/// import lines while it arrives.
pub(crate) async fn read_records(
    body: axum::body::Body,
    limit: usize,
    idle: std::time::Duration,
    partial: bool,
) -> Result<Records, ApiError> {
    use http_body_util::BodyExt as _;
    let (tx, rx) = mpsc::channel::<axum::body::Bytes>(CHUNKS);
    let parser = tokio::task::spawn_blocking(move || {
        // The line of each record (blank lines are skipped), to name a refused one.
        let mut lines = Vec::new();
        let numbered = Lines::new(rx).enumerate().map(|(n, line)| {
            if line.as_ref().is_ok_and(|l| !l.trim().is_empty()) {
                lines.push(n as u64 + 1);
            }
            line
        });
        let records = pathdb_store::parse_import(numbered, partial).map_err(ApiError::from)?;
        Ok(Records { records, lines })
    });
    let mut body = body;
    let mut read = 0usize;
    loop {
        let frame = tokio::time::timeout(idle, body.frame())
            .await
            .map_err(|_| {
                ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "timeout",
                    format!("no data for {} s", idle.as_secs()),
                )
            })?;
        let Some(frame) = frame else { break };
        let frame = frame.map_err(|e| ApiError::bad_request(format!("reading the body: {e}")))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        read += data.len();
        if read > limit {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                format!("the body exceeds {limit} bytes; import in several parts"),
            ));
        }
        if tx.send(data).await.is_err() {
            // The parser stopped at a bad line: its error is the answer.
            break;
        }
    }
    // The end of the body: the parser sees the last line.
    drop(tx);
    parser.await.map_err(|_| crate::calls::task_failed())?
}

/// Gives the memory an import's records held back to the system once they are dropped.
///
/// glibc keeps freed small allocations in its arenas: after four concurrent imports of 1M records
/// a server kept 3.7 GB resident with nothing live in it. Trimming costs a few milliseconds, once
/// per import.
pub(crate) fn release_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel; it takes no pointers and
    // is thread-safe (it locks each arena).
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The lines of the chunks `rx` delivers, without their `\n` or `\r\n` (as [`str::lines`]).
struct Lines {
    rx: mpsc::Receiver<axum::body::Bytes>,
    /// Bytes received; those before `start` were returned as lines.
    pending: Vec<u8>,
    start: usize,
    /// Where in `pending` the search for the next `\n` goes on.
    searched: usize,
    done: bool,
}

impl Lines {
    fn new(rx: mpsc::Receiver<axum::body::Bytes>) -> Lines {
        Lines {
            rx,
            pending: Vec::new(),
            start: 0,
            searched: 0,
            done: false,
        }
    }

    /// The line `pending[start..end]`; the next one starts at `next`.
    fn take(&mut self, end: usize, next: usize) -> Result<String, String> {
        let mut bytes = &self.pending[self.start..end];
        if let [rest @ .., b'\r'] = bytes {
            bytes = rest;
        }
        let line = std::str::from_utf8(bytes).map(str::to_owned).map_err(|e| {
            format!(
                "the line is not UTF-8 (an invalid byte at column {})",
                e.valid_up_to() + 1
            )
        });
        self.start = next;
        self.searched = next;
        line
    }
}

impl Iterator for Lines {
    type Item = Result<String, String>;

    fn next(&mut self) -> Option<Result<String, String>> {
        loop {
            if let Some(at) = self.pending[self.searched..]
                .iter()
                .position(|&b| b == b'\n')
            {
                let end = self.searched + at;
                return Some(self.take(end, end + 1));
            }
            self.searched = self.pending.len();
            if self.done {
                if self.start == self.pending.len() {
                    return None;
                }
                let end = self.pending.len();
                return Some(self.take(end, end));
            }
            // Drop the returned lines before adding more, so the buffer holds about one chunk
            // and the longest line.
            self.pending.drain(..self.start);
            self.searched -= self.start;
            self.start = 0;
            match self.rx.blocking_recv() {
                Some(chunk) => self.pending.extend_from_slice(&chunk),
                None => self.done = true,
            }
        }
    }
}

#[cfg(test)]
mod test;
