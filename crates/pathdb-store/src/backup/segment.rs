//! An archive segment: consecutive commits, each its number and its payload as the file backend
//! hands it to a [`CommitTap`](crate::backend::CommitTap) (the commit's time and rows), with a
//! SHA-256 over the whole segment. Segments are written whole, under a temporary name, and
//! renamed (or uploaded, which an object store makes atomic): a segment cut short by a crash
//! fails its checksum and is never read as a shorter history.
//!
//! Layout (little endian): `PDBSEG01`, database id `u64`, first commit `u64`; then per commit
//! `[payload length u32][number u64][payload]`; then the trailer: `PDBSGEND`, last commit
//! `u64`, commits `u64`, last commit's time `i64`, and the SHA-256 of every byte before it.
//!
//! Its name says what it holds without reading it: `<first>-<last>-<time of last>.pdbseg`,
//! the numbers zero-padded to 20 digits so that names sort as commits do.

use super::BackupError;
use crate::backend::commit_time;
use sha2::{Digest, Sha256};

const MAGIC: &[u8; 8] = b"PDBSEG01";
const END_MAGIC: &[u8; 8] = b"PDBSGEND";
const HEADER: usize = 24;
const TRAILER: usize = 64;
/// The file name extension of a segment.
pub(crate) const SEGMENT_EXTENSION: &str = "pdbseg";

/// A segment's commits.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    /// The database whose commits these are.
    pub(crate) database: u64,
    /// Number and payload of each commit, consecutive.
    pub(crate) commits: Vec<(u64, Vec<u8>)>,
}

impl Segment {
    pub(crate) fn first(&self) -> u64 {
        self.commits.first().map_or(0, |c| c.0)
    }

    pub(crate) fn last(&self) -> u64 {
        self.commits.last().map_or(0, |c| c.0)
    }

    /// The time of its last commit.
    pub(crate) fn last_time(&self) -> i64 {
        self.commits
            .last()
            .and_then(|(_, payload)| commit_time(payload))
            .unwrap_or(0)
    }

    /// The name the segment goes by.
    pub(crate) fn name(&self) -> String {
        format!(
            "{:020}-{:020}-{}.{SEGMENT_EXTENSION}",
            self.first(),
            self.last(),
            self.last_time()
        )
    }

    /// The segment's bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let size = self
            .commits
            .iter()
            .map(|(_, p)| 12 + p.len())
            .sum::<usize>();
        let mut out = Vec::with_capacity(HEADER + size + TRAILER);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.database.to_le_bytes());
        out.extend_from_slice(&self.first().to_le_bytes());
        for (number, payload) in &self.commits {
            // A commit's payload is far below 4 GiB: redb refuses a value over 3 GiB.
            out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            out.extend_from_slice(&number.to_le_bytes());
            out.extend_from_slice(payload);
        }
        out.extend_from_slice(END_MAGIC);
        out.extend_from_slice(&self.last().to_le_bytes());
        out.extend_from_slice(&(self.commits.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.last_time().to_le_bytes());
        let digest = Sha256::digest(&out);
        out.extend_from_slice(&digest);
        out
    }

    /// Reads the segment called `name`, checking its checksum first.
    ///
    /// # Errors
    /// [`BackupError::NotABackup`] or [`BackupError::Corrupt`], naming `name`.
    pub(crate) fn decode(name: &str, bytes: &[u8]) -> Result<Segment, BackupError> {
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(BackupError::NotABackup {
                file: name.into(),
                what: "archive segment",
            });
        }
        let corrupt = |why: &str| BackupError::corrupt(name, why.to_string());
        if bytes.len() < HEADER + TRAILER {
            return Err(corrupt("cut short"));
        }
        let (body, digest) = bytes.split_at(bytes.len() - 32);
        if Sha256::digest(body)[..] != *digest {
            return Err(corrupt(
                "its checksum does not match its contents (damaged, or cut short)",
            ));
        }
        let u64_at = |at: usize| u64::from_le_bytes(body[at..at + 8].try_into().unwrap_or([0; 8]));
        let database = u64_at(8);
        let mut expected = u64_at(16);
        let trailer = body.len() - (TRAILER - 32);
        if &body[trailer..trailer + 8] != END_MAGIC {
            return Err(corrupt("no trailer"));
        }
        let mut commits = Vec::new();
        let mut at = HEADER;
        while at < trailer {
            let head = body
                .get(at..at + 12)
                .ok_or_else(|| corrupt("a commit cut short"))?;
            let len = u32::from_le_bytes(head[..4].try_into().unwrap_or([0; 4])) as usize;
            let number = u64::from_le_bytes(head[4..12].try_into().unwrap_or([0; 8]));
            let payload = body
                .get(at + 12..at + 12 + len)
                .filter(|_| at + 12 + len <= trailer)
                .ok_or_else(|| corrupt("a commit cut short"))?;
            if number != expected {
                return Err(corrupt("its commits are not consecutive"));
            }
            commits.push((number, payload.to_vec()));
            expected += 1;
            at += 12 + len;
        }
        let segment = Segment { database, commits };
        if segment.last() != u64_at(trailer + 8)
            || segment.commits.len() as u64 != u64_at(trailer + 16)
        {
            return Err(corrupt("its trailer does not match its commits"));
        }
        Ok(segment)
    }
}

/// What a segment's name says: first and last commit, and the last one's time.
pub(crate) fn parse_name(name: &str) -> Option<(u64, u64, i64)> {
    let stem = name.strip_suffix(&format!(".{SEGMENT_EXTENSION}"))?;
    let mut parts = stem.splitn(3, '-');
    let first = parts.next()?.parse().ok()?;
    let last = parts.next()?.parse().ok()?;
    let time = parts.next()?.parse().ok()?;
    (first <= last).then_some((first, last, time))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn segment(first: u64, payloads: &[Vec<u8>]) -> Segment {
        Segment {
            database: 7,
            commits: payloads
                .iter()
                .enumerate()
                .map(|(i, p)| (first + i as u64, p.clone()))
                .collect(),
        }
    }

    fn payloads() -> impl Strategy<Value = Vec<Vec<u8>>> {
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..6)
    }

    proptest! {
        /// What is written reads back, and its name says its commits.
        #[test]
        fn segments_round_trip(first in 1u64..1_000_000, payloads in payloads()) {
            let segment = segment(first, &payloads);
            let read = Segment::decode("s", &segment.encode()).unwrap();
            prop_assert_eq!(&read, &segment);
            let (f, l, _) = parse_name(&segment.name()).unwrap();
            prop_assert_eq!((f, l), (segment.first(), segment.last()));
        }

        /// A byte changed anywhere is refused, naming the file; so is a segment cut short or
        /// extended (a write a crash cut off).
        #[test]
        fn any_damage_is_refused(
            payloads in payloads(),
            at in any::<prop::sample::Index>(),
            by in 1u8..=255,
            extra in proptest::collection::vec(any::<u8>(), 1..20),
        ) {
            let bytes = segment(5, &payloads).encode();
            let mut flipped = bytes.clone();
            let at = at.index(bytes.len());
            flipped[at] ^= by;
            let error = Segment::decode("seg-file", &flipped).unwrap_err();
            prop_assert!(error.to_string().starts_with("seg-file: "), "{}", error);
            prop_assert!(Segment::decode("f", &bytes[..at]).is_err());
            let mut longer = bytes.clone();
            longer.extend_from_slice(&extra);
            prop_assert!(Segment::decode("f", &longer).is_err());
        }
    }

    /// Every single-byte flip of a small segment, exhaustively.
    #[test]
    fn every_flipped_byte_is_refused() {
        let bytes = segment(1, &[b"one".to_vec(), b"two".to_vec()]).encode();
        for at in 0..bytes.len() {
            for bit in 0..8 {
                let mut flipped = bytes.clone();
                flipped[at] ^= 1 << bit;
                assert!(
                    Segment::decode("f", &flipped).is_err(),
                    "byte {at} bit {bit}"
                );
            }
        }
    }
}
