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
    Journal::open(db, id)
        .unwrap()
        .pending(applied, None)
        .unwrap()
}

/// A journal ready for appends after commit `applied`.
fn fresh(db: &Path, id: u64, applied: u64) -> Journal {
    let mut journal = Journal::open(db, id).unwrap();
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
    let mut reopened = Journal::open(&db, 1).unwrap();
    assert_eq!(reopened.pending(0, Some(2)).unwrap().len(), 2);
    assert_eq!(reopened.last(), 2);
    drop(reopened);
    assert_eq!(replayed(&db, 1, 0).len(), 2);
}

#[test]
fn a_torn_or_corrupt_record_ends_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut journal = fresh(&db, 1, 0);
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
    let mut journal = fresh(&db, 1, 0);
    commit(&mut journal, vec![set(b"p", b"1", b"")]);
    journal.rotate();
    commit(&mut journal, vec![set(b"p", b"2", b"value")]);
    drop(journal);
    let second = paths_for(&db)[1].clone();
    let bytes = std::fs::read(&second).unwrap();
    std::fs::write(&second, &bytes[..bytes.len() - 1]).unwrap();
    let mut reopened = Journal::open(&db, 1).unwrap();
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
