//! Backups and the continuous archive on the embedded backend: a backup restores every row
//! (items, revisions, tombstones, definitions, counters, the change log); a restore is a new
//! history (old change tokens answer 410); the archive rebuilds the database as of every
//! commit; damage anywhere in a backup or a segment is refused, naming the file.

use pathdb_keys::KeyPath;
use pathdb_store::backend::{Backend, FileBackend, FileOptions, Key, Reader, Record};

use pathdb_store::backup::{
    Archive, ArchiveOptions, ArchiveTarget, BackupError, DirTarget, RestoreUntil, list_archive,
    restore_archive, restore_backup, verify_backup,
};
use pathdb_store::{Error, Json, PutOptions, Store, StoreOptions, Transaction};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn path(text: &str) -> KeyPath {
    text.parse().unwrap()
}

fn value(n: u64) -> Json {
    Json::parse(&format!(r#"{{"n":{n}}}"#)).unwrap()
}

fn options() -> StoreOptions {
    StoreOptions {
        sweep_interval: None,
        ..StoreOptions::default()
    }
}

fn open(db: &Path) -> Store<FileBackend> {
    Store::open(db, FileOptions::default(), options()).unwrap()
}

/// Every row of the database but its token keys, which a restore replaces.
fn rows<B: Backend>(store: &Store<B>) -> Vec<(Key, Record)> {
    let reader = store.backend().reader().unwrap();
    let all = reader.scan_all(None, usize::MAX).unwrap();
    all.into_iter()
        .filter(|(k, _)| !(k.partition == [0] && matches!(k.sort.as_slice(), [4] | [10])))
        .collect()
}

/// A database with a bit of everything: history, deletes, a generated id, a definition.
fn fill(store: &Store<FileBackend>) {
    let history = PutOptions {
        history: true,
        ..PutOptions::default()
    };
    store.set_namespace_history("doc", Some(3)).unwrap();
    for i in 1..=20 {
        store
            .put(&path(&format!("/t-1/doc-{i}")), value(i), history.clone())
            .unwrap();
        store
            .put(
                &path(&format!("/t-1/doc-{i}")),
                value(i + 100),
                history.clone(),
            )
            .unwrap();
    }
    store.delete(&path("/t-1/doc-3"), None).unwrap();
    store
        .put(&path("/t-2/x-1"), value(1), PutOptions::default())
        .unwrap();
}

#[test]
fn a_backup_restores_every_row_and_starts_a_new_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("live.redb");
    let store = open(&db);
    fill(&store);
    let token = store.changes_token(&path("/t-1")).unwrap();
    let file = dir.path().join("b.pdbbackup");
    let info = store.backup(std::fs::File::create(&file).unwrap()).unwrap();
    assert!(info.snapshot);
    assert!(info.commit.unwrap() > 0);
    assert_eq!(verify_backup(&file).unwrap().commit, info.commit);
    let before = rows(&store);
    store
        .put(&path("/t-1/doc-99"), value(99), PutOptions::default())
        .unwrap();

    let restored_path = dir.path().join("restored.redb");
    let report = restore_backup(&file, &restored_path).unwrap();
    assert_eq!(report.commit, info.commit);
    assert_eq!(report.rows, info.rows);
    let restored = open(&restored_path);
    assert_eq!(
        rows(&restored),
        before,
        "the restore holds every row of the backup"
    );
    assert!(restored.get(&path("/t-1/doc-99")).unwrap().is_none());
    // A change token from before the restore: another history.
    match restored.changes(&path("/t-1"), Some(&token), 10) {
        Err(Error::ChangesExpired(why)) => assert!(why.contains("restored"), "{why}"),
        other => panic!("a token from before the restore: {other:?}"),
    }
    // The restored database writes on, versions continuing.
    let put = restored
        .put(&path("/t-1/doc-3"), value(3), PutOptions::default())
        .unwrap();
    // Two versions and a tombstone before the backup.
    assert_eq!(
        put.version, 4,
        "a deleted path's version continues after a restore"
    );
    // Never over an existing file.
    match restore_backup(&file, &restored_path) {
        Err(BackupError::Exists(p)) => assert_eq!(p, restored_path),
        other => panic!("restore over a database: {other:?}"),
    }
}

#[test]
fn every_flipped_byte_of_a_backup_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("live.redb"));
    store
        .put(&path("/a-1"), value(1), PutOptions::default())
        .unwrap();
    let mut bytes = Vec::new();
    store.backup(&mut bytes).unwrap();
    let file = dir.path().join("flipped.pdbbackup");
    for at in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x01 << (at % 8);
        std::fs::write(&file, &damaged).unwrap();
        let error = verify_backup(&file).expect_err("a flipped byte passes");
        assert!(error.to_string().contains("flipped.pdbbackup"), "{error}");
        let target = dir.path().join("never.redb");
        assert!(restore_backup(&file, &target).is_err());
        assert!(!target.exists(), "a damaged backup created a database");
        assert!(!dir.path().join("never.redb.restoring").exists());
    }
    // Cut short anywhere.
    for len in [0, 10, 40, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&file, &bytes[..len]).unwrap();
        assert!(verify_backup(&file).is_err(), "cut to {len} bytes");
    }
}

fn archived(dir: &Path, delay: Duration) -> (Archive, Arc<DirTarget>) {
    let target = Arc::new(DirTarget::new(dir.join("archive")));
    let archive = Archive::new(
        target.clone(),
        Archive::spool_for(&dir.join("live.redb")),
        ArchiveOptions {
            delay,
            ..ArchiveOptions::default()
        },
    );
    (archive, target)
}

fn open_archived(db: &Path, archive: &Archive) -> Store<FileBackend> {
    let file = FileOptions {
        tap: Some(archive.tap()),
        ..FileOptions::default()
    };
    let store = Store::open(db, file, options()).unwrap();
    let base = store.clone();
    archive
        .start(Box::new(move |file| base.backup(file)))
        .unwrap();
    // The window starts at the first base backup: restores before it are refused.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while archive.status().last_base.is_none() {
        assert!(std::time::Instant::now() < deadline, "no base backup");
        std::thread::sleep(Duration::from_millis(5));
    }
    store
}

#[test]
fn the_archive_restores_the_database_as_of_every_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("live.redb");
    let (archive, target) = archived(dir.path(), Duration::from_millis(50));
    let store = open_archived(&db, &archive);
    let mut points = Vec::new();
    for i in 1..=30u64 {
        store
            .put(
                &path(&format!("/t-1/doc-{}", i % 7)),
                value(i),
                PutOptions::default(),
            )
            .unwrap();
        let (_, point) = store.backend().backup_reader().unwrap();
        points.push((point.commit.unwrap(), rows(&store)));
        if i == 15 {
            // A large write: a durable commit of its own, numbered like the others.
            let big = Json::parse(&format!(r#"{{"s":"{}"}}"#, "x".repeat(390_000))).unwrap();
            let mut tx = Transaction::new();
            for n in 1..=3 {
                tx = tx.put(
                    path(&format!("/t-2/big-{n}")),
                    big.clone(),
                    PutOptions::default(),
                );
            }
            store.transact(tx).unwrap();
            let (_, point) = store.backend().backup_reader().unwrap();
            points.push((point.commit.unwrap(), rows(&store)));
        }
    }
    archive.stop();
    drop(store);
    let listing = list_archive(target.as_ref()).unwrap();
    assert!(listing.gaps.is_empty(), "{listing:?}");
    for (i, (commit, expected)) in points.iter().enumerate() {
        let out = dir.path().join(format!("at-{i}.redb"));
        let report = restore_archive(target.as_ref(), &out, RestoreUntil::Commit(*commit)).unwrap();
        assert_eq!(report.stopped, None);
        assert_eq!(report.commit, Some(*commit));
        let restored = open(&out);
        assert_eq!(&rows(&restored), expected, "restored at commit {commit}");
    }
}

#[test]
fn a_lost_segment_stops_the_restore_and_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("live.redb");
    let (archive, target) = archived(dir.path(), Duration::from_millis(20));
    let store = open_archived(&db, &archive);
    // Several segments.
    for i in 1..=6u64 {
        store
            .put(
                &path(&format!("/t-1/doc-{i}")),
                value(i),
                PutOptions::default(),
            )
            .unwrap();
        std::thread::sleep(Duration::from_millis(60));
    }
    archive.stop();
    drop(store);
    let segments = target.list("segments/").unwrap();
    assert!(segments.len() >= 3, "{segments:?}");
    let (lost, _) = &segments[1];
    let kept = target.get(lost).unwrap();
    target.delete(lost).unwrap();
    let listing = list_archive(target.as_ref()).unwrap();
    assert_eq!(listing.gaps.len(), 1, "{listing:?}");
    let out = dir.path().join("restored.redb");
    let report = restore_archive(target.as_ref(), &out, RestoreUntil::Latest).unwrap();
    let stopped = report.stopped.expect("the restore went past a gap");
    assert!(stopped.contains("gap"), "{stopped}");
    let (first, _) = lost_range(lost);
    assert_eq!(report.commit, Some(first - 1), "{stopped}");
    // A damaged segment stops it too, and is named.
    target.put(lost, &kept).unwrap();
    let (damaged, _) = &segments[2];
    let mut bytes = target.get(damaged).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    target.put(damaged, &bytes).unwrap();
    let out = dir.path().join("restored-2.redb");
    let report = restore_archive(target.as_ref(), &out, RestoreUntil::Latest).unwrap();
    let stopped = report
        .stopped
        .expect("the restore applied a damaged segment");
    let file = damaged.rsplit('/').next().unwrap();
    assert!(
        stopped.contains(file) && stopped.contains("checksum"),
        "{stopped}"
    );
}

fn lost_range(name: &str) -> (u64, u64) {
    let file = name.rsplit('/').next().unwrap();
    let mut parts = file.split('-');
    let first = parts.next().unwrap().parse().unwrap();
    let last = parts.next().unwrap().parse().unwrap();
    (first, last)
}

/// What a crash can leave in the spool, a temporary file cut short and a segment that fails
/// its checksum, is dropped at open, and the archive goes on without a gap.
#[test]
fn a_damaged_spool_is_cleaned_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("live.redb");
    let (archive, target) = archived(dir.path(), Duration::from_millis(20));
    let store = open_archived(&db, &archive);
    store
        .put(&path("/t-1/a-1"), value(1), PutOptions::default())
        .unwrap();
    archive.stop();
    drop(store);
    let spool = Archive::spool_for(&db);
    std::fs::write(
        spool.join("00000000000000000009-00000000000000000012-1.pdbseg.tmp"),
        b"PDBSEG01 cut",
    )
    .unwrap();
    std::fs::write(
        spool.join("00000000000000000009-00000000000000000012-1.pdbseg"),
        b"PDBSEG01 damaged",
    )
    .unwrap();
    let (archive, _) = archived(dir.path(), Duration::from_millis(20));
    let store = open_archived(&db, &archive);
    assert_eq!(
        std::fs::read_dir(&spool).unwrap().count(),
        0,
        "the spool kept what a crash left"
    );
    store
        .put(&path("/t-1/a-2"), value(2), PutOptions::default())
        .unwrap();
    let expected = rows(&store);
    archive.stop();
    drop(store);
    assert!(list_archive(target.as_ref()).unwrap().gaps.is_empty());
    let out = dir.path().join("restored.redb");
    let report = restore_archive(target.as_ref(), &out, RestoreUntil::Latest).unwrap();
    assert_eq!(report.stopped, None);
    assert_eq!(rows(&open(&out)), expected);
}
