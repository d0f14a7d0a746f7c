//! The backup file: a header that says what it is and where it was taken, the backend's rows in
//! key order, an end marker with the row count, and a trailer with the SHA-256 of everything
//! before it. A restore checks the trailer first, over the whole file, so that one flipped or
//! missing byte anywhere refuses the file before anything is created.
//!
//! Layout (integers little endian):
//! - header, 40 bytes: `PDBBKUP1`, format `u32` (1), flags `u32` (bit 0: one snapshot; bit 1:
//!   the commit is known), commit `u64`, taken at `i64` (microseconds since the Unix epoch),
//!   database id `u64` (0: none);
//! - rows: `[1][partition len u32][partition][sort len u32][sort][value len u32][value]`, the
//!   value being a record as the file backend stores it (backend/file_read.rs);
//! - end: `[0][rows u64]`;
//! - trailer, 40 bytes: `PDBBKEND` and the SHA-256 of every byte before the trailer.

use super::BackupError;
use crate::backend::{Key, Record, decode_record, encode_record};
use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};

const MAGIC: &[u8; 8] = b"PDBBKUP1";
const END_MAGIC: &[u8; 8] = b"PDBBKEND";
/// The format this build writes and reads.
pub(crate) const FORMAT: u32 = 1;
const HEADER: usize = 40;
/// Bytes of the trailer: its magic and the digest.
pub(crate) const TRAILER: usize = 40;
const ROW: u8 = 1;
const END: u8 = 0;
const SNAPSHOT: u32 = 1;
const HAS_COMMIT: u32 = 2;
/// The file name extension of a backup.
pub const BACKUP_EXTENSION: &str = "pdbbackup";

/// What a backup holds, from its header (and, once read to the end, its rows).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BackupInfo {
    /// The backup format.
    pub format: u32,
    /// The number of the last commit it holds, where the backend numbers commits (the file
    /// backend).
    pub commit: Option<u64>,
    /// Whether it is one consistent state (the file and memory backends); `false` on DynamoDB,
    /// where each row is read as of its own moment.
    pub snapshot: bool,
    /// When it was taken: microseconds since the Unix epoch.
    pub taken_at: i64,
    /// The id of the database it was taken from, where it has one.
    pub database: Option<u64>,
    /// Rows it holds.
    pub rows: u64,
    /// Bytes of the file.
    pub bytes: u64,
}

/// Writes a backup to `out`, hashing as it goes.
pub(crate) struct BackupWriter<W: Write> {
    out: W,
    hash: Sha256,
    info: BackupInfo,
    buf: Vec<u8>,
}

impl<W: Write> BackupWriter<W> {
    /// Writes the header.
    pub(crate) fn new(out: W, mut info: BackupInfo) -> io::Result<BackupWriter<W>> {
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&FORMAT.to_le_bytes());
        let flags = if info.snapshot { SNAPSHOT } else { 0 }
            | if info.commit.is_some() { HAS_COMMIT } else { 0 };
        header.extend_from_slice(&flags.to_le_bytes());
        header.extend_from_slice(&info.commit.unwrap_or(0).to_le_bytes());
        header.extend_from_slice(&info.taken_at.to_le_bytes());
        header.extend_from_slice(&info.database.unwrap_or(0).to_le_bytes());
        info.rows = 0;
        info.bytes = 0;
        let mut writer = BackupWriter {
            out,
            hash: Sha256::new(),
            info,
            buf: Vec::with_capacity(64 << 10),
        };
        writer.emit(&header)?;
        Ok(writer)
    }

    /// Adds a row.
    pub(crate) fn row(&mut self, key: &Key, record: &Record) -> io::Result<()> {
        let value = encode_record(record);
        self.buf.push(ROW);
        for bytes in [&key.partition[..], &key.sort[..], &value[..]] {
            put_bytes(&mut self.buf, bytes)?;
        }
        self.info.rows += 1;
        if self.buf.len() >= 64 << 10 {
            self.flush_buf()?;
        }
        Ok(())
    }

    /// Writes the end and the trailer; returns what the backup holds.
    pub(crate) fn finish(mut self) -> io::Result<(W, BackupInfo)> {
        self.buf.push(END);
        self.buf.extend_from_slice(&self.info.rows.to_le_bytes());
        self.flush_buf()?;
        let digest = self.hash.finalize_reset();
        self.out.write_all(END_MAGIC)?;
        self.out.write_all(&digest)?;
        self.info.bytes += TRAILER as u64;
        self.out.flush()?;
        Ok((self.out, self.info))
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        let buf = std::mem::take(&mut self.buf);
        self.emit(&buf)?;
        self.buf = buf;
        self.buf.clear();
        // A writer that streams (a response body) sends what it has.
        self.out.flush()
    }

    fn emit(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.hash.update(bytes);
        self.out.write_all(bytes)?;
        self.info.bytes += bytes.len() as u64;
        Ok(())
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> io::Result<()> {
    let len = u32::try_from(bytes.len()).map_err(|_| io::Error::other("a row over 4 GiB"))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(bytes);
    Ok(())
}

/// Checks that `input`, the whole of the backup called `name`, carries the digest of its
/// contents; returns its header. Reads it once, to the end.
///
/// # Errors
/// [`BackupError::NotABackup`], [`BackupError::Corrupt`] (naming `name`), or a read error.
pub(crate) fn verify(name: &str, mut input: impl Read) -> Result<BackupInfo, BackupError> {
    let mut hash = Sha256::new();
    // The last TRAILER bytes seen are held back: they are the trailer if the file ends there.
    let mut held: Vec<u8> = Vec::with_capacity(TRAILER + (256 << 10));
    let mut header = Vec::with_capacity(HEADER);
    let mut chunk = vec![0u8; 256 << 10];
    let mut total = 0u64;
    loop {
        let n = input
            .read(&mut chunk)
            .map_err(|e| BackupError::io(name, e))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if header.len() < HEADER {
            let take = (HEADER - header.len()).min(n);
            header.extend_from_slice(&chunk[..take]);
            if header.len() >= MAGIC.len() && &header[..MAGIC.len()] != MAGIC {
                return Err(BackupError::NotABackup {
                    file: name.into(),
                    what: "backup",
                });
            }
        }
        held.extend_from_slice(&chunk[..n]);
        if held.len() > TRAILER {
            let hashable = held.len() - TRAILER;
            hash.update(&held[..hashable]);
            held.drain(..hashable);
        }
    }
    if header.len() < HEADER || total < (HEADER + 9 + TRAILER) as u64 {
        return Err(
            if header.len() < MAGIC.len() || &header[..MAGIC.len()] != MAGIC {
                BackupError::NotABackup {
                    file: name.into(),
                    what: "backup",
                }
            } else {
                BackupError::corrupt(name, "cut short")
            },
        );
    }
    if &held[..8] != END_MAGIC || hash.finalize()[..] != held[8..] {
        return Err(BackupError::corrupt(
            name,
            "its checksum does not match its contents (damaged, or cut short)",
        ));
    }
    let mut info = parse_header(name, &header)?;
    info.bytes = total;
    Ok(info)
}

fn parse_header(name: &str, header: &[u8]) -> Result<BackupInfo, BackupError> {
    let u32_at = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().unwrap_or([0; 4]));
    let u64_at = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap_or([0; 8]));
    let format = u32_at(8);
    if format != FORMAT {
        return Err(BackupError::Unsupported {
            file: name.into(),
            found: format,
            supported: FORMAT,
        });
    }
    let flags = u32_at(12);
    let database = u64_at(32);
    Ok(BackupInfo {
        format,
        commit: (flags & HAS_COMMIT != 0).then(|| u64_at(16)),
        snapshot: flags & SNAPSHOT != 0,
        taken_at: i64::from_le_bytes(header[24..32].try_into().unwrap_or([0; 8])),
        database: (database != 0).then_some(database),
        rows: 0,
        bytes: 0,
    })
}

/// Reads a backup that [`verify`] accepted: hands each row (key, and its value as the file
/// backend stores it) to `row`, in order; returns the header with the row count.
///
/// # Errors
/// As [`verify`], for a file that changed since; `row`'s errors.
pub(crate) fn read_rows(
    name: &str,
    input: impl Read,
    mut row: impl FnMut(&[u8], &[u8], &[u8]) -> Result<(), BackupError>,
) -> Result<BackupInfo, BackupError> {
    let mut input = io::BufReader::with_capacity(256 << 10, input);
    let mut header = [0u8; HEADER];
    read_exact(name, &mut input, &mut header)?;
    if &header[..MAGIC.len()] != MAGIC {
        return Err(BackupError::NotABackup {
            file: name.into(),
            what: "backup",
        });
    }
    let mut info = parse_header(name, &header)?;
    let (mut partition, mut sort, mut value) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        let mut tag = [0u8; 1];
        read_exact(name, &mut input, &mut tag)?;
        match tag[0] {
            ROW => {
                for buf in [&mut partition, &mut sort, &mut value] {
                    read_bytes(name, &mut input, buf)?;
                }
                decode_record(&value)
                    .map_err(|e| BackupError::corrupt(name, format!("a row's record: {e}")))?;
                row(&partition, &sort, &value)?;
                info.rows += 1;
            }
            END => {
                let mut count = [0u8; 8];
                read_exact(name, &mut input, &mut count)?;
                if u64::from_le_bytes(count) != info.rows {
                    return Err(BackupError::corrupt(name, "its row count does not match"));
                }
                return Ok(info);
            }
            other => {
                return Err(BackupError::corrupt(
                    name,
                    format!("unknown entry {other:#x}"),
                ));
            }
        }
    }
}

fn read_exact(name: &str, input: &mut impl Read, buf: &mut [u8]) -> Result<(), BackupError> {
    input.read_exact(buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            BackupError::corrupt(name, "cut short")
        } else {
            BackupError::io(name, e)
        }
    })
}

fn read_bytes(name: &str, input: &mut impl Read, buf: &mut Vec<u8>) -> Result<(), BackupError> {
    let mut len = [0u8; 4];
    read_exact(name, input, &mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    // A length is checked against what is left by the read itself: a damaged length fails as
    // "cut short" rather than allocating gigabytes first.
    buf.clear();
    let read = input
        .take(len as u64)
        .read_to_end(buf)
        .map_err(|e| BackupError::io(name, e))?;
    if read != len {
        return Err(BackupError::corrupt(name, "cut short"));
    }
    Ok(())
}

/// Verifies the backup file at `path` (see [`verify`]) and reads it through.
///
/// # Errors
/// As [`verify`]; the file cannot be opened.
pub fn verify_file(path: &std::path::Path) -> Result<BackupInfo, BackupError> {
    let name = path.display().to_string();
    let open = || std::fs::File::open(path).map_err(|e| BackupError::io(&name, e));
    let info = verify(&name, open()?)?;
    // And its structure, which counts its rows.
    let read = read_rows(&name, open()?, |_, _, _| Ok(()))?;
    Ok(BackupInfo {
        rows: read.rows,
        ..info
    })
}

#[cfg(test)]
mod tests;
