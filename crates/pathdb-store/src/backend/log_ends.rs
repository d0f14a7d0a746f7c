//! Where each log ends, remembered by the committer between commits.
//!
//! An append numbers its entry one past the newest in its log. Finding that entry through the
//! overlay and redb is a merged reverse scan, which was 40% of the commit thread's instructions
//! (docs/benchmarks.md, "The CPU cost of a durable put"). Every row the committer writes passes
//! through it, so once it has scanned a log it can keep the log's end up to date itself: a write
//! of an entry moves the end up, a removal of one forgets the log (the next append scans again).
//! What it remembers is always what the scan would find.

use std::collections::HashMap;

/// More partitions than this and the cache starts over: it only saves scans, so losing it
/// costs one scan per log.
const MAX_PARTITIONS: usize = 65_536;

/// The last row of each log scanned since the cache began, by partition and by the log's
/// prefix: a log's rows are those from the prefix and 8 zero bytes to the prefix and 8 `ff`
/// bytes, as [`super::log_bounds`] has them, and its end is the number of its last row.
#[derive(Default)]
pub(super) struct LogEnds {
    /// foldhash, seeded at random per map: partitions are users' keys, and foldhash claims
    /// only minimal resistance to chosen collisions, but a flood of them would cost this cache
    /// time, not correctness; SipHash was a tenth of the commit thread's instructions here.
    partitions: HashMap<Vec<u8>, Vec<Log>, foldhash::fast::RandomState>,
}

struct Log {
    prefix: Vec<u8>,
    /// The sort key of the log's last row; `None`: the log has none.
    last: Option<Vec<u8>>,
}

impl Log {
    /// The number of the newest entry: its last row's last 8 bytes, as a scan reads it.
    fn end(&self) -> u64 {
        self.last
            .as_deref()
            .and_then(super::log_number)
            .unwrap_or(0)
    }
}

impl LogEnds {
    /// The number of the newest entry of the log at `prefix` (0: none), if known.
    pub(super) fn get(&self, partition: &[u8], prefix: &[u8]) -> Option<u64> {
        let logs = self.partitions.get(partition)?;
        logs.iter().find(|log| log.prefix == prefix).map(Log::end)
    }

    /// Remembers the log's last row, found by a scan, and returns the log's end.
    pub(super) fn learn(&mut self, partition: &[u8], prefix: &[u8], last: Option<&[u8]>) -> u64 {
        if self.partitions.len() >= MAX_PARTITIONS && !self.partitions.contains_key(partition) {
            self.partitions.clear();
        }
        let logs = self.partitions.entry(partition.to_vec()).or_default();
        let last = last.map(<[u8]>::to_vec);
        match logs.iter_mut().find(|log| log.prefix == prefix) {
            Some(log) => {
                log.last = last;
                log.end()
            }
            None => {
                let log = Log {
                    prefix: prefix.to_vec(),
                    last,
                };
                let end = log.end();
                logs.push(log);
                end
            }
        }
    }

    /// A row was written: the last row of a known log it belongs to may now be this one.
    pub(super) fn set(&mut self, partition: &[u8], sort: &[u8]) {
        let Some(logs) = self.partitions.get_mut(partition) else {
            return;
        };
        for log in logs.iter_mut().filter(|log| in_log(&log.prefix, sort)) {
            match &mut log.last {
                Some(last) if last.as_slice() >= sort => {}
                Some(last) => {
                    last.clear();
                    last.extend_from_slice(sort);
                }
                None => log.last = Some(sort.to_vec()),
            }
        }
    }

    /// A row was removed: a known log it belonged to is forgotten (its end may have gone down).
    pub(super) fn remove(&mut self, partition: &[u8], sort: &[u8]) {
        if let Some(logs) = self.partitions.get_mut(partition) {
            logs.retain(|log| !in_log(&log.prefix, sort));
        }
    }

    /// Forgets everything: rows were taken back, or written where the cache did not see them.
    pub(super) fn clear(&mut self) {
        self.partitions.clear();
    }
}

/// Whether `sort` lies in the range of the log at `prefix` (what a scan of the log reads).
fn in_log(prefix: &[u8], sort: &[u8]) -> bool {
    sort.strip_prefix(prefix)
        .is_some_and(|rest| rest >= [0u8; 8].as_slice() && rest <= [0xffu8; 8].as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_written_moves_the_end_and_one_removed_forgets_the_log() {
        let mut ends = LogEnds::default();
        assert_eq!(ends.get(b"p", b"log"), None);
        let entry = |n: u64| [b"log".as_slice(), &n.to_be_bytes()].concat();
        assert_eq!(ends.learn(b"p", b"log", Some(&entry(4))), 4);
        ends.learn(
            b"p",
            b"other",
            Some(&[b"other".as_slice(), &9u64.to_be_bytes()].concat()),
        );
        assert_eq!(ends.learn(b"p", b"empty", None), 0);
        assert_eq!(ends.get(b"p", b"empty"), Some(0));
        assert_eq!(ends.get(b"p", b"log"), Some(4));

        ends.set(b"p", &entry(5));
        assert_eq!(ends.get(b"p", b"log"), Some(5));
        // An older entry written again does not move the end back.
        ends.set(b"p", &entry(2));
        assert_eq!(ends.get(b"p", b"log"), Some(5));
        // Rows outside the log's range leave it alone: another partition, the prefix itself,
        // a key past the last entry.
        ends.set(b"q", &entry(7));
        ends.set(b"p", b"log");
        ends.set(b"p", &[entry(u64::MAX).as_slice(), b"x"].concat());
        assert_eq!(ends.get(b"p", b"log"), Some(5));
        // A key inside the range is its last row if it sorts last, as a scan would find it.
        ends.set(b"p", &[entry(5).as_slice(), b"x"].concat());
        // (its number: its last 8 bytes, 00 00 00 00 00 00 05 'x').
        assert_eq!(ends.get(b"p", b"log"), Some(0x0578));

        ends.remove(b"p", &entry(1));
        assert_eq!(ends.get(b"p", b"log"), None);
        assert_eq!(ends.get(b"p", b"other"), Some(9));
        ends.clear();
        assert_eq!(ends.get(b"p", b"other"), None);
    }
}
