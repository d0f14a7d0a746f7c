use super::*;

fn set<'a>(partition: &'a [u8], sort: &'a [u8], value: &'a [u8]) -> Change<'a> {
    Change::Set {
        partition,
        sort,
        value,
    }
}

/// Appends one record holding `changes`.
fn commit(journal: &mut Journal, changes: Vec<Change<'_>>) {
    journal.begin();
    for change in changes {
        journal.push(change);
    }
    journal.append(true).unwrap();
}

fn replayed(db: &Path, id: u64, applied: u64) -> Vec<Vec<u8>> {
    Journal::open(db, id, true)
        .unwrap()
        .pending(applied, None)
        .unwrap()
}

/// A journal ready for appends after commit `applied`, written directly where it can be.
fn fresh(db: &Path, id: u64, applied: u64) -> Journal {
    fresh_in(db, id, applied, true)
}

/// [`fresh`], written directly (where it can be) or through the page cache: the tests that cut
/// a file's last byte to tear its last record want it to end where the record does.
fn fresh_in(db: &Path, id: u64, applied: u64, direct: bool) -> Journal {
    let mut journal = Journal::open(db, id, direct).unwrap();
    assert!(journal.pending(applied, None).unwrap().is_empty());
    journal
}

#[test]
fn records_replay_in_order_after_the_applied_number() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut journal = fresh(&db, 7, 40);
    commit(&mut journal, vec![set(b"p", b"a", b"1")]);
    commit(
        &mut journal,
        vec![
            Change::Remove {
                partition: b"p",
                sort: b"a",
            },
            set(b"q", b"", b""),
        ],
    );
    assert_eq!(journal.last(), 42);
    drop(journal);

    let replay = replayed(&db, 7, 40);
    assert_eq!(replay.len(), 2);
    assert_eq!(changes(&replay[0]).unwrap(), vec![set(b"p", b"a", b"1")]);
    assert_eq!(
        changes(&replay[1]).unwrap(),
        vec![
            Change::Remove {
                partition: b"p",
                sort: b"a"
            },
            set(b"q", b"", b"")
        ]
    );
    // A durable commit at 41 or later started the journal over: what is at its start is old.
    assert!(replayed(&db, 7, 41).is_empty());
    assert!(replayed(&db, 7, 42).is_empty());
    // Another database's journal is never replayed.
    assert!(!Journal::has_pending(&db, 8, 40).unwrap());
}

#[test]
fn records_before_a_restart_are_not_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut journal = fresh(&db, 1, 0);
    for n in 0..5u8 {
        commit(&mut journal, vec![set(b"p", &[n], &[n; 100])]);
    }
    // A checkpoint holds commits 1-5; commit 6 overwrites the start, 2-5 are left behind it.
    journal.restart();
    commit(&mut journal, vec![set(b"p", b"new", b"")]);
    drop(journal);
    let replay = replayed(&db, 1, 5);
    assert_eq!(replay.len(), 1);
    assert_eq!(changes(&replay[0]).unwrap(), vec![set(b"p", b"new", b"")]);
    // The replay cut the old records off: no later history can line up with them.
    let len = std::fs::metadata(path_for(&db)).unwrap().len();
    assert_eq!(len, FILE_HEADER + (RECORD_HEADER + replay[0].len()) as u64);
}

#[test]
fn a_replay_stops_at_the_commits_this_process_counted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut journal = fresh(&db, 1, 0);
    for n in 0..3u8 {
        commit(&mut journal, vec![set(b"p", &[n], b"")]);
    }
    // Say the third one's writers were told it failed, and cutting it off failed too.
    let mut reopened = Journal::open(&db, 1, true).unwrap();
    assert_eq!(reopened.pending(0, Some(2)).unwrap().len(), 2);
    assert_eq!(reopened.last(), 2);
    drop(reopened);
    assert_eq!(replayed(&db, 1, 0).len(), 2);
}

#[test]
fn a_torn_or_corrupt_record_ends_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut journal = fresh_in(&db, 1, 0, false);
    for n in 0..3u8 {
        commit(&mut journal, vec![set(b"p", &[n], b"value")]);
    }
    drop(journal);
    let path = path_for(&db);
    let whole = std::fs::read(&path).unwrap();
    let record = (whole.len() - FILE_HEADER as usize) / 3;

    // Torn: the last record lacks its final byte.
    std::fs::write(&path, &whole[..whole.len() - 1]).unwrap();
    assert_eq!(replayed(&db, 1, 0).len(), 2);

    // A flipped byte in the second record's payload: its checksum fails, and the third,
    // though intact, is not taken after it.
    let mut corrupt = whole.clone();
    let at = FILE_HEADER as usize + record + RECORD_HEADER + 2;
    corrupt[at] ^= 1;
    std::fs::write(&path, &corrupt).unwrap();
    assert_eq!(replayed(&db, 1, 0).len(), 1);
}

#[test]
fn malformed_payloads_are_refused() {
    assert_eq!(changes(&[]).unwrap(), vec![]);
    assert!(changes(&[SET, 1, 0, 0, 0]).is_none());
    assert!(changes(&[9, 0, 0, 0, 0, 0, 0, 0, 0]).is_none());
    assert!(changes(&[REMOVE, 0, 0, 0, 0, 255, 255, 255, 255]).is_none());
}

#[test]
fn another_databases_journal_is_cleared_not_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut journal = fresh(&db, 1, 0);
    commit(&mut journal, vec![set(b"p", b"old", b"")]);
    drop(journal);
    // A new database (id 2) at the same path, with the old journal still beside it.
    drop(fresh(&db, 2, 0));
    assert!(replayed(&db, 2, 0).is_empty());
    assert!(replayed(&db, 1, 0).is_empty());
}

#[test]
fn a_replay_goes_on_from_one_file_into_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut journal = fresh(&db, 1, 0);
    commit(&mut journal, vec![set(b"p", b"1", b"")]);
    commit(&mut journal, vec![set(b"p", b"2", b"")]);
    // A checkpoint of commits 1-2 begins: commit 3 goes to the other file.
    assert!(journal.can_rotate());
    assert_eq!(journal.rotate(), 2);
    commit(&mut journal, vec![set(b"p", b"3", b"")]);
    // The checkpoint is not done: the first file may not be started over yet.
    assert!(!journal.can_rotate());
    let [first, second] = paths_for(&db);
    let both = [
        std::fs::read(&first).unwrap(),
        std::fs::read(&second).unwrap(),
    ];

    // A crash before the checkpoint: all three, in order, from both files.
    let replay = replayed(&db, 1, 0);
    assert_eq!(replay.len(), 3);
    assert_eq!(changes(&replay[2]).unwrap(), vec![set(b"p", b"3", b"")]);
    // After it: the second file's alone.
    std::fs::write(&first, &both[0]).unwrap();
    std::fs::write(&second, &both[1]).unwrap();
    let replay = replayed(&db, 1, 2);
    assert_eq!(replay.len(), 1);
    assert_eq!(changes(&replay[0]).unwrap(), vec![set(b"p", b"3", b"")]);

    // The checkpoint done, the next one turns back to the first file, starting it over.
    journal.checkpointed(2);
    assert!(journal.can_rotate());
    assert_eq!(journal.rotate(), 3);
    commit(&mut journal, vec![set(b"p", b"4", b"")]);
    drop(journal);
    let replay = replayed(&db, 1, 2);
    assert_eq!(
        replay.len(),
        2,
        "commit 3 from the second file, then 4 from the first"
    );
    assert_eq!(changes(&replay[1]).unwrap(), vec![set(b"p", b"4", b"")]);
    // A file whose first record is not the next commit holds nothing to replay.
    assert!(replayed(&db, 1, 1).is_empty());
}

#[test]
fn a_torn_first_record_in_the_other_file_ends_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut journal = fresh_in(&db, 1, 0, false);
    commit(&mut journal, vec![set(b"p", b"1", b"")]);
    journal.rotate();
    commit(&mut journal, vec![set(b"p", b"2", b"value")]);
    drop(journal);
    let second = paths_for(&db)[1].clone();
    let bytes = std::fs::read(&second).unwrap();
    std::fs::write(&second, &bytes[..bytes.len() - 1]).unwrap();
    let mut reopened = Journal::open(&db, 1, true).unwrap();
    assert_eq!(reopened.pending(0, None).unwrap().len(), 1);
    assert_eq!(reopened.last(), 1);
    // The torn record was cut off, and appends go on after commit 1, in its file.
    assert_eq!(
        std::fs::metadata(&second).unwrap().len(),
        FILE_HEADER,
        "the torn record is cut off"
    );
    commit(&mut reopened, vec![set(b"p", b"2", b"again")]);
    drop(reopened);
    let replay = replayed(&db, 1, 0);
    assert_eq!(replay.len(), 2);
    assert_eq!(
        changes(&replay[1]).unwrap(),
        vec![set(b"p", b"2", b"again")]
    );
}

/// Records of `sizes` bytes of value each, in order, each under its index.
fn commit_sizes(journal: &mut Journal, sizes: &[usize]) {
    for (n, size) in sizes.iter().enumerate() {
        let value = vec![b'v' ^ n as u8; *size];
        commit(journal, vec![set(b"p", &[n as u8], &value)]);
    }
}

fn assert_replays(db: &Path, sizes: &[usize]) {
    assert_replays_after(db, 0, sizes);
}

#[test]
fn direct_writes_replay_whole_across_blocks_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut journal = fresh(&db, 1, 0);
    let direct = journal.sides[0].direct.is_some();
    // A record of 40 bytes around its value: the first ends exactly at the first block's end
    // (nothing of that block is kept), the third spans two blocks, the others share one.
    let first = [BLOCK - FILE_HEADER as usize - 40, 10, BLOCK + 100, 7];
    commit_sizes(&mut journal, &first);
    drop(journal);
    let len = std::fs::metadata(path_for(&db)).unwrap().len();
    if direct {
        // Whole blocks, zeros after the last record.
        assert_eq!(len % BLOCK as u64, 0);
        let bytes = std::fs::read(path_for(&db)).unwrap();
        let end = FILE_HEADER as usize + first.iter().map(|s| s + 40).sum::<usize>();
        assert!(bytes[end..].iter().all(|&b| b == 0));
    }
    assert_replays(&db, &first);

    // Reopened, appends go on from the block the last record ended in.
    let mut journal = Journal::open(&db, 1, true).unwrap();
    assert_eq!(journal.pending(0, None).unwrap().len(), first.len());
    let more = [3, BLOCK * 2, 0];
    commit_sizes(&mut journal, &more);
    // Still written directly: no write was refused (a misaligned one is, with EINVAL).
    assert_eq!(journal.sides[journal.active].direct.is_some(), direct);
    drop(journal);
    let replay = replayed(&db, 1, 0);
    assert_eq!(replay.len(), first.len() + more.len());
    let last = changes(&replay[first.len() + 1]).unwrap();
    assert_eq!(last, vec![set(b"p", &[1], &vec![b'v' ^ 1; BLOCK * 2])]);

    // Started over: the next record goes after the header, over the old ones.
    let mut journal = Journal::open(&db, 1, true).unwrap();
    assert_eq!(journal.pending(0, None).unwrap().len(), 7);
    journal.restart();
    commit_sizes(&mut journal, &[5]);
    assert_eq!(journal.sides[journal.active].direct.is_some(), direct);
    drop(journal);
    assert_replays_after(&db, 7, &[5]);
}

/// The records after commit `applied` hold values of `sizes`.
fn assert_replays_after(db: &Path, applied: u64, sizes: &[usize]) {
    let replay = replayed(db, 1, applied);
    assert_eq!(replay.len(), sizes.len());
    for (n, (payload, size)) in replay.iter().zip(sizes).enumerate() {
        let value = vec![b'v' ^ n as u8; *size];
        assert_eq!(
            changes(payload).unwrap(),
            vec![set(b"p", &[n as u8], &value)],
            "{n}"
        );
    }
}

#[test]
fn records_written_through_the_page_cache_replay_as_direct_ones_do() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut journal = fresh_in(&db, 1, 0, false);
    assert!(journal.sides[0].direct.is_none());
    let sizes = [10, BLOCK + 3, 0];
    commit_sizes(&mut journal, &sizes);
    drop(journal);
    let record_bytes: usize = sizes.iter().map(|s| s + 40).sum();
    assert_eq!(
        std::fs::metadata(path_for(&db)).unwrap().len(),
        FILE_HEADER + record_bytes as u64
    );
    assert_replays(&db, &sizes);
}
