//! The commit journal of the file backend: a file beside the database (`<file>-journal`) that
//! makes a small commit durable with one short append and one `fdatasync`.
//!
//! A durable redb commit writes every page the commit touched, plus quick-repair's allocator
//! state, and flushes twice: about 250 KB and 1-2.5 ms per group of small puts on this project's
//! machine, where an `fdatasync` of a few KB takes 0.1 ms (issue 23). So the committer writes a
//! small group's changes here, as the table rows they set and remove, and syncs; the rows wait
//! in an overlay ([`super::overlay`]) until a durable redb commit, a *checkpoint*, puts a whole
//! journal file's worth into the file; that journal file then starts again from its beginning.
//!
//! Every commit has a sequence number, which the redb transaction also stores (`META`
//! `journal`). Opening the file replays the journal's records that follow the number of redb's
//! last durable commit, in order, up to the first record that is torn, fails its checksum or
//! does not carry the next number: records from before a checkpoint carry older numbers and are
//! never replayed. A journal belongs to one database (the id in its header, also in `META`), so
//! a journal left beside a replaced file is ignored.
//!
//! Layout, little endian: a header `PDBJRNL1` + the database's id (u64); then records of
//! `[payload length u32][crc32 of sequence and payload u32][sequence u64][payload]`, a payload
//! being `[2][commit time: microseconds since the Unix epoch, i64]` then changes of
//! `[0][partition][sort][value]` (set) or `[1][partition][sort]` (remove), each byte string
//! preceded by its length as a u32. (Records written before the time entry existed have none.)
//!
//! The same records, payload and number, are what a [`CommitTap`] receives: the continuous
//! archive (the store's `backup/archive`) keeps them, so a commit's number and time mean the
//! same thing in the file, the journal and the archive.
//!
//! Where every append is synced (durability `Immediate`) and the file system takes it (Linux's
//! `O_DIRECT`), the files are written around the page cache, in whole blocks: an append writes
//! the block its record begins in again, from a copy of that block's bytes kept in memory, up
//! to the end of the block its record ends in, zeros after the record. The `fdatasync` after it
//! then only flushes the disk's cache: through the page cache, the write and the sync also
//! copied, looked up, wrote back and waited for the record's pages, about an eighth of the
//! commit thread's system time on this project's machine (docs/benchmarks.md). The bytes before
//! the record are written again as they were, so a write torn by a power loss leaves them
//! whole; a replay stops at the zeros, as at any record that does not follow.

use super::tap::CommitTap;
use crate::model::item::Timestamp;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The first bytes of a journal file.
const MAGIC: &[u8; 8] = b"PDBJRNL1";
/// The file header: the magic and the database's id.
const FILE_HEADER: u64 = 16;
/// A record's header: payload length, checksum, sequence number.
const RECORD_HEADER: usize = 16;
/// What a direct write covers at a time: its offset, its length and its buffer's address are
/// multiples of this (the largest logical block size of common disks).
const BLOCK: usize = 4096;
const SET: u8 = 0;
const REMOVE: u8 = 1;
const TIME: u8 = 2;

/// One change a journaled commit made to the data table.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Change<'a> {
    /// The row `(partition, sort)` now holds `value`.
    Set {
        partition: &'a [u8],
        sort: &'a [u8],
        value: &'a [u8],
    },
    /// The row `(partition, sort)` is gone.
    Remove { partition: &'a [u8], sort: &'a [u8] },
}

/// One of the journal's two files.
struct Side {
    file: File,
    path: PathBuf,
    /// Where the file's next record goes (for the side not appended to: where its records end).
    end: u64,
    /// The number of the newest record the file holds since it was last started over; 0: none.
    newest: u64,
    /// Written directly (`O_DIRECT`): the file's bytes from the start of the block `end` is in,
    /// up to `end`, which an append writes again before its record (so that every direct write
    /// starts at a block). `None`: written through the page cache.
    direct: Option<Vec<u8>>,
}

/// The journal, owned by the committer: two files, appended to one at a time.
///
/// A checkpoint that runs beside the committer (backend/overlay.rs) covers the commits of one
/// file while the next commits go to the other ([`Journal::rotate`]); a file is started over only
/// once a durable redb commit holds every record it has.
pub(super) struct Journal {
    sides: [Side; 2],
    /// The side appended to.
    active: usize,
    /// The database's id, in the file header.
    id: u64,
    /// The last commit redb's last durable commit holds, as far as this journal knows.
    durable: u64,
    /// The sequence number of the last journaled commit.
    last: u64,
    /// When the oldest record since the journal last started over was appended.
    first: Option<Instant>,
    /// The next record's payload, being built.
    record: Vec<u8>,
    /// Room for a direct write's blocks, with a block-aligned start inside it.
    blocks: Vec<u8>,
    /// The time of the last commit: commit times never go back, even when the clock does.
    time: i64,
    /// Who else receives every commit (the continuous archive), if anyone.
    tap: Option<Arc<dyn CommitTap>>,
}

/// The journal's first file for the database file at `db`.
pub(super) fn path_for(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-journal");
    PathBuf::from(name)
}

/// The journal's files for the database file at `db`: `<db>-journal` and `<db>-journal2`.
pub(super) fn paths_for(db: &Path) -> [PathBuf; 2] {
    let first = path_for(db);
    let mut second = first.clone().into_os_string();
    second.push("2");
    [first, PathBuf::from(second)]
}

impl Journal {
    /// Opens (creating if needed) the journal of the database at `db`, whose id is `id`, to be
    /// written directly where it can be when `direct` (every append will be synced). A journal
    /// of another database is emptied. [`Journal::pending`] must come next.
    pub(super) fn open(db: &Path, id: u64, direct: bool) -> io::Result<Journal> {
        let [first, second] = paths_for(db);
        let mut journal = Journal {
            sides: [
                Side::open(first, id, direct)?,
                Side::open(second, id, direct)?,
            ],
            active: 0,
            id,
            durable: 0,
            last: 0,
            first: None,
            record: Vec::new(),
            blocks: Vec::new(),
            time: 0,
            tap: None,
        };
        journal.active = 0;
        Ok(journal)
    }

    /// The payloads of the journaled commits after commit `applied` (the file's last durable
    /// one), in order and at most up to commit `upto`, to replay. Appends go after them; what
    /// follows them in either file (a torn record, records of an abandoned history, a record
    /// whose writers were told it failed) is cut off, so that no later replay can reach it.
    pub(super) fn pending(&mut self, applied: u64, upto: Option<u64>) -> io::Result<Vec<Vec<u8>>> {
        let bytes = [
            std::fs::read(&self.sides[0].path)?,
            std::fs::read(&self.sides[1].path)?,
        ];
        let mut found = replayable(&bytes, self.id, applied);
        if let Some(upto) = upto {
            found.truncate(usize::try_from(upto.saturating_sub(applied)).unwrap_or(usize::MAX));
        }
        let mut ends = [FILE_HEADER; 2];
        let mut newest = [0; 2];
        for (n, (side, _, end)) in found.iter().enumerate() {
            ends[*side] = *end;
            newest[*side] = applied + 1 + n as u64;
        }
        for ((side, end), bytes) in self.sides.iter_mut().zip(ends).zip(&bytes) {
            if (side.file.metadata()?.len()) > end {
                side.file.set_len(end)?;
                side.file.sync_data()?;
            }
            side.end = end;
            if let Some(tail) = &mut side.direct {
                // `end` is within what was read: the header, or a record's end.
                let end = usize::try_from(end).unwrap_or(usize::MAX).min(bytes.len());
                tail.clear();
                tail.extend_from_slice(&bytes[end - end % BLOCK..end]);
            }
        }
        for (side, newest) in self.sides.iter_mut().zip(newest) {
            side.newest = newest;
        }
        self.active = found.last().map_or(0, |(side, _, _)| *side);
        self.durable = applied;
        self.last = applied + found.len() as u64;
        Ok(found
            .into_iter()
            .map(|(side, range, _)| bytes[side][range].to_vec())
            .collect())
    }

    /// Whether the journal at `db`'s side holds commits that database `id`, durable up to
    /// commit `applied`, lacks. Reads only.
    pub(super) fn has_pending(db: &Path, id: u64, applied: u64) -> io::Result<bool> {
        let read = |path: &Path| match std::fs::read(path) {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        };
        let [first, second] = paths_for(db);
        let bytes = [read(&first)?, read(&second)?];
        Ok(!replayable(&bytes, id, applied).is_empty())
    }

    /// The sequence number of the last commit.
    pub(super) fn last(&self) -> u64 {
        self.last
    }

    /// Bytes the records in the file appended to take.
    pub(super) fn len(&self) -> u64 {
        self.sides[self.active].end - FILE_HEADER
    }

    /// After a durable redb commit that holds every commit up to [`Journal::last`]: the records
    /// are no longer needed, and the next one goes to the start. Their bytes stay until
    /// overwritten; their sequence numbers keep a replay from taking them.
    pub(super) fn restart(&mut self) {
        self.durable = self.last;
        for side in &mut self.sides {
            side.newest = 0;
        }
        self.sides[self.active].start_over(self.id);
        self.first = None;
    }

    /// Whether the file not appended to holds only commits redb holds durably: a checkpoint
    /// beside the committer may begin ([`Journal::rotate`]).
    pub(super) fn can_rotate(&self) -> bool {
        self.sides[1 - self.active].newest <= self.durable
    }

    /// Turns appends to the other file, started over, and returns the last commit of the file
    /// left: what the checkpoint beginning now covers. That file stays as it is until
    /// [`Journal::checkpointed`].
    pub(super) fn rotate(&mut self) -> u64 {
        debug_assert!(self.can_rotate());
        self.active = 1 - self.active;
        let side = &mut self.sides[self.active];
        side.start_over(self.id);
        side.newest = 0;
        self.first = None;
        self.last
    }

    /// A durable redb commit holds every commit up to `covers`.
    pub(super) fn checkpointed(&mut self, covers: u64) {
        self.durable = self.durable.max(covers);
    }

    /// How long the oldest record not yet checkpointed has waited.
    pub(super) fn age(&self) -> Duration {
        self.first.map_or(Duration::ZERO, |first| first.elapsed())
    }

    /// Starts the next commit's record, stamped with the commit's time.
    pub(super) fn begin(&mut self) {
        self.record.clear();
        self.record.resize(RECORD_HEADER, 0);
        self.time = self.time.max(Timestamp::now().micros());
        self.record.push(TIME);
        self.record.extend_from_slice(&self.time.to_le_bytes());
    }

    /// Hands every later commit to `tap`, after giving it the commits it lacks of those the
    /// file holds: `replayed`, the payloads of commits `applied + 1 ..` that opening the file
    /// took from this journal.
    pub(super) fn attach(&mut self, tap: Arc<dyn CommitTap>, applied: u64, replayed: &[Vec<u8>]) {
        tap.resume(self.id, applied, replayed);
        if let Some(time) = replayed.last().and_then(|p| commit_time(p)) {
            self.time = self.time.max(time);
        }
        self.tap = Some(tap);
    }

    /// The tap has the commit just made (journaled, or applied durably by
    /// [`Journal::skip`]'s caller).
    pub(super) fn tap_commit(&self) {
        if let Some(tap) = &self.tap {
            tap.commit(self.last, &self.record[RECORD_HEADER..]);
        }
    }

    /// Before a durable commit, after which the journal starts over: the tap must hold every
    /// commit so far durably, since the journal will not.
    pub(super) fn sync_tap(&self) {
        if let Some(tap) = &self.tap {
            tap.sync();
        }
    }

    /// Numbers the record being built without appending it: a commit made durable in the file
    /// itself (a large one). The tap has it, provisionally and durably, before that commit;
    /// [`Journal::settle`] says how it went.
    pub(super) fn skip(&mut self) {
        self.last += 1;
        if let Some(tap) = &self.tap {
            tap.prepare(self.last, &self.record[RECORD_HEADER..]);
        }
    }

    /// The durable commit of a [`Journal::skip`]ped record succeeded or not (then its number
    /// is free again).
    pub(super) fn settle(&mut self, committed: bool) {
        if let Some(tap) = &self.tap {
            tap.settle(self.last, committed);
        }
        if !committed {
            self.last -= 1;
        }
    }

    /// Adds a change to the record being built.
    pub(super) fn push(&mut self, change: Change<'_>) {
        match change {
            Change::Set {
                partition,
                sort,
                value,
            } => {
                self.record.push(SET);
                for bytes in [partition, sort, value] {
                    put_bytes(&mut self.record, bytes);
                }
            }
            Change::Remove { partition, sort } => {
                self.record.push(REMOVE);
                for bytes in [partition, sort] {
                    put_bytes(&mut self.record, bytes);
                }
            }
        }
    }

    /// Whether the record being built holds no change.
    pub(super) fn record_is_empty(&self) -> bool {
        self.record.len() == RECORD_HEADER + TIME_ENTRY
    }

    /// Bytes of the record being built.
    pub(super) fn record_len(&self) -> usize {
        self.record.len()
    }

    /// The number the record being built will carry.
    pub(super) fn next(&self) -> u64 {
        self.last + 1
    }

    /// Appends the record being built, and with `sync` waits until it is on the disk. On
    /// failure the record is not counted, and the next one goes to the same place.
    pub(super) fn append(&mut self, sync: bool) -> io::Result<()> {
        let seq = self.next();
        let payload_len = u32::try_from(self.record.len() - RECORD_HEADER)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let crc = checksum(seq, &self.record[RECORD_HEADER..]);
        self.record[0..4].copy_from_slice(&payload_len.to_le_bytes());
        self.record[4..8].copy_from_slice(&crc.to_le_bytes());
        self.record[8..16].copy_from_slice(&seq.to_le_bytes());
        let side = &mut self.sides[self.active];
        let written = side
            .write(&self.record, &mut self.blocks)
            .and_then(|()| if sync { side.file.sync_data() } else { Ok(()) });
        match written {
            Ok(()) => {
                side.end += self.record.len() as u64;
                side.newest = seq;
                self.last = seq;
                self.first.get_or_insert_with(Instant::now);
                Ok(())
            }
            Err(e) => {
                // A failed sync may still have put the record on the disk: cut it off so that
                // a replay never takes a commit whose writers were told it failed.
                side.cut(side.end);
                Err(e)
            }
        }
    }

    /// Removes the journal's files after a checkpoint that left them empty (a clean close): a
    /// closed database is its one file again.
    pub(super) fn remove(self) -> io::Result<()> {
        for side in self.sides {
            drop(side.file);
            std::fs::remove_file(&side.path)?;
        }
        Ok(())
    }
}

impl Side {
    /// Opens (creating if needed) one of the journal's files; another database's is emptied.
    /// With `direct`, it is written directly if the file system allows it.
    fn open(path: PathBuf, id: u64, direct: bool) -> io::Result<Side> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)?;
        let mut header = Vec::with_capacity(FILE_HEADER as usize);
        io::Read::read_to_end(&mut io::Read::take(&file, FILE_HEADER), &mut header)?;
        if !belongs(&header, id) {
            // A new journal, or another database's: none of its records may follow our header.
            file.set_len(0)?;
            write_at(&file, &file_header(id), 0)?;
            file.sync_data()?;
            sync_directory(&path)?;
        }
        let (file, direct) = match direct.then(|| open_direct(&path, &file)) {
            Some(Ok(direct)) => (direct, Some(file_header(id).to_vec())),
            // Not on this system or file system: through the page cache.
            _ => (file, None),
        };
        Ok(Side {
            file,
            path,
            end: FILE_HEADER,
            newest: 0,
            direct,
        })
    }

    /// The next record goes right after the header, which the file keeps.
    fn start_over(&mut self, id: u64) {
        self.end = FILE_HEADER;
        if let Some(tail) = &mut self.direct {
            tail.clear();
            tail.extend_from_slice(&file_header(id));
        }
    }

    /// Writes `record` at `end` (not synced); `blocks` is room for a direct write's blocks.
    fn write(&mut self, record: &[u8], blocks: &mut Vec<u8>) -> io::Result<()> {
        let Some(tail) = &mut self.direct else {
            return write_at(&self.file, record, self.end);
        };
        let len = tail.len() + record.len();
        let padded = len.div_ceil(BLOCK) * BLOCK;
        // The start of the block `end` is in, and as many whole blocks as the record reaches.
        let start = self.end - tail.len() as u64;
        let buffer = aligned(blocks, padded)?;
        buffer[..tail.len()].copy_from_slice(tail);
        buffer[tail.len()..len].copy_from_slice(record);
        buffer[len..].fill(0);
        write_at(&self.file, buffer, start)?;
        // What the block the record ends in holds up to the new end.
        tail.clear();
        tail.extend_from_slice(&buffer[len - len % BLOCK..len]);
        Ok(())
    }

    /// Cuts the file at `at` (best effort: the disk may be failing). Shortening a file takes no
    /// space, also where overwriting would (copy-on-write file systems on a full disk); a
    /// replay capped at the commits this process counted ([`Journal::pending`]) covers a cut
    /// that failed.
    fn cut(&self, at: u64) {
        let _ = self.file.set_len(at).and_then(|()| self.file.sync_data());
    }
}

/// Bytes of a payload's time entry.
const TIME_ENTRY: usize = 9;

/// The commit time a record's payload carries (microseconds since the Unix epoch), if it has one.
pub fn commit_time(payload: &[u8]) -> Option<i64> {
    match payload.split_first() {
        Some((&TIME, rest)) => Some(i64::from_le_bytes(rest.get(..8)?.try_into().ok()?)),
        _ => None,
    }
}

/// Decodes a record's payload into its changes, in order (its time entry aside). `None`: the
/// payload is malformed, which a record that passed its checksum never is.
pub(super) fn changes(payload: &[u8]) -> Option<Vec<Change<'_>>> {
    let mut out = Vec::new();
    let mut rest = payload;
    if commit_time(rest).is_some() {
        rest = &rest[TIME_ENTRY..];
    }
    while let Some((&tag, after)) = rest.split_first() {
        rest = after;
        let partition = take_bytes(&mut rest)?;
        let sort = take_bytes(&mut rest)?;
        out.push(match tag {
            SET => Change::Set {
                partition,
                sort,
                value: take_bytes(&mut rest)?,
            },
            REMOVE => Change::Remove { partition, sort },
            _ => return None,
        });
    }
    Some(out)
}

/// A record found in a journal file: its number, where its payload lies, and where it ends.
struct Found {
    seq: u64,
    payload: std::ops::Range<usize>,
    end: u64,
}

/// The records a journal file's bytes hold from its header on, each numbered one after the
/// one before, up to the first that is torn, fails its checksum or breaks the numbering (the
/// older records a started-over file still has after its new ones); nothing if the file
/// belongs to another database.
fn chain(bytes: &[u8], id: u64) -> Vec<Found> {
    let mut out: Vec<Found> = Vec::new();
    if !belongs(bytes, id) {
        return out;
    }
    let mut at = FILE_HEADER as usize;
    while let Some(head) = at
        .checked_add(RECORD_HEADER)
        .and_then(|head_end| bytes.get(at..head_end))
    {
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        let seq = u64::from_le_bytes([
            head[8], head[9], head[10], head[11], head[12], head[13], head[14], head[15],
        ]);
        let start = at + RECORD_HEADER;
        let Some(payload) = start
            .checked_add(len)
            .and_then(|payload_end| bytes.get(start..payload_end))
        else {
            break;
        };
        let follows = out
            .last()
            .is_none_or(|last| last.seq.checked_add(1) == Some(seq));
        if !follows || checksum(seq, payload) != crc || changes(payload).is_none() {
            break;
        }
        at = start + len;
        out.push(Found {
            seq,
            payload: start..at,
            end: at as u64,
        });
    }
    out
}

/// The records after commit `applied`, in order, from the bytes of the journal's two files:
/// for each, the file it is in, where its payload lies there, and where it ends. They start in
/// whichever file begins with commit `applied + 1` and may go on in the other.
fn replayable(
    files: &[Vec<u8>; 2],
    id: u64,
    applied: u64,
) -> Vec<(usize, std::ops::Range<usize>, u64)> {
    let chains = [chain(&files[0], id), chain(&files[1], id)];
    let mut out = Vec::new();
    let mut used = [false; 2];
    let Some(mut expected) = applied.checked_add(1) else {
        return out;
    };
    // A file started over begins with the commit after the durable one it followed, so a
    // file whose first record is not the one expected holds only older (or abandoned) ones.
    while let Some(side) =
        (0..2).find(|&s| !used[s] && chains[s].first().is_some_and(|f| f.seq == expected))
    {
        used[side] = true;
        let chain = &chains[side];
        for found in chain {
            out.push((side, found.payload.clone(), found.end));
        }
        let Some(next) = chain.last().and_then(|l| l.seq.checked_add(1)) else {
            break;
        };
        expected = next;
    }
    out
}

/// The first bytes of database `id`'s journal files.
fn file_header(id: u64) -> [u8; FILE_HEADER as usize] {
    let mut header = [0u8; FILE_HEADER as usize];
    header[..8].copy_from_slice(MAGIC);
    header[8..].copy_from_slice(&id.to_le_bytes());
    header
}

/// The journal file at `path` (open as `file`), opened for direct writes if they work there:
/// some file systems open a file `O_DIRECT` and then refuse the writes. Its first block is
/// written back directly, as it is (zeros past the file's end), before any append counts on it.
#[cfg(target_os = "linux")]
fn open_direct(path: &Path, file: &File) -> io::Result<File> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let direct = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)?;
    let mut blocks = Vec::new();
    let first = aligned(&mut blocks, BLOCK)?;
    let mut read = 0;
    while read < BLOCK {
        match file.read_at(&mut first[read..], read as u64)? {
            0 => break,
            n => read += n,
        }
    }
    first[read..].fill(0);
    write_at(&direct, first, 0)?;
    Ok(direct)
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_path: &Path, _file: &File) -> io::Result<File> {
    Err(io::ErrorKind::Unsupported.into())
}

/// `len` bytes of `room` that start at a block's address (a direct write's buffer).
fn aligned(room: &mut Vec<u8>, len: usize) -> io::Result<&mut [u8]> {
    room.resize(len + BLOCK, 0);
    let at = room.as_ptr().align_offset(BLOCK);
    room.get_mut(at..at + len)
        .ok_or_else(|| io::Error::other("no block-aligned buffer"))
}

/// Whether a journal file's bytes start with the header of database `id`'s journal.
fn belongs(bytes: &[u8], id: u64) -> bool {
    bytes.len() >= FILE_HEADER as usize && &bytes[..8] == MAGIC && bytes[8..16] == id.to_le_bytes()
}

fn checksum(seq: u64, payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&seq.to_le_bytes());
    hasher.update(payload);
    hasher.finalize()
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    // Rows are far below 4 GiB: redb's own limit on a value is 3 GiB.
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

fn take_bytes<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = usize::try_from(u32::from_le_bytes(rest.get(..4)?.try_into().ok()?)).ok()?;
    let end = len.checked_add(4)?;
    let bytes = rest.get(4..end)?;
    *rest = &rest[end..];
    Some(bytes)
}

/// Makes a new file's directory entry durable: its records are synced, but a power loss could
/// otherwise lose the file itself.
#[cfg(unix)]
fn sync_directory(file: &Path) -> io::Result<()> {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => File::open(dir)?.sync_all(),
        _ => File::open(".")?.sync_all(),
    }
}

#[cfg(not(unix))]
fn sync_directory(_file: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8], at: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(bytes, at)
}

#[cfg(windows)]
fn write_at(file: &File, mut bytes: &[u8], mut at: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !bytes.is_empty() {
        let n = file.seek_write(bytes, at)?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        bytes = &bytes[n..];
        at += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
