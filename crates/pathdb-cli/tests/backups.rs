//! Backups and the continuous archive through real processes: `pathdb serve --archive` killed
//! with SIGKILL under write load, then restored at random instants and compared with a model of
//! every acknowledged write; a backup taken under load restores exactly the live database at
//! its commit; the CLI's exit statuses for damaged files and gaps.

use crate::server::{Server, http};
use crate::{fails_with, ok};
use pathdb_keys::KeyPath;
use pathdb_store::backend::FileOptions;
use pathdb_store::{Store, StoreOptions};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const WRITERS: usize = 4;
const KEYS: usize = 8;

fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// RFC 3339 with microseconds, as `restore --at` takes it.
fn rfc3339(micros: i64) -> String {
    let time = UNIX_EPOCH + Duration::from_micros(micros as u64);
    humantime::format_rfc3339_micros(time).to_string()
}

/// A write of one key, as its writer saw it: committed with `version` and `value` somewhere
/// between `start` and `known` (when the answer arrived, or when a read after a failure found
/// it), or (`version` None) not committed.
#[derive(Clone, Debug)]
struct Write {
    start: i64,
    known: i64,
    version: Option<u64>,
    value: i64,
}

/// What the writers saw, per key.
type Model = HashMap<String, Vec<Write>>;

/// The (version, value) pairs key `writes` may hold in a restore at `at`: the last write known
/// committed by then, and any write in flight at `at` that committed.
fn allowed(writes: &[Write], at: i64) -> Vec<(u64, i64)> {
    let mut out = Vec::new();
    let last_known = writes
        .iter()
        .rfind(|w| w.version.is_some() && w.known <= at);
    if let Some(w) = last_known {
        out.push((w.version.unwrap_or(0), w.value));
    }
    for w in writes.iter().filter(|w| w.start <= at && w.known > at) {
        if let Some(v) = w.version {
            out.push((v, w.value));
        }
    }
    out
}

/// The value of `path` in the live server, read after a failed write.
fn read_back(addr: &RwLock<std::net::SocketAddr>, path: &str) -> Option<(u64, i64)> {
    loop {
        let at = *addr.read().unwrap();
        match http(at, "GET", &format!("/v1/items{path}"), "") {
            Ok((200, body)) => {
                let item: Value = serde_json::from_str(&body).unwrap();
                return Some((
                    item["version"].as_u64().unwrap(),
                    item["value"]["n"].as_i64().unwrap(),
                ));
            }
            Ok((404, _)) => return None,
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn writer(
    w: usize,
    addr: Arc<RwLock<std::net::SocketAddr>>,
    stop: Arc<AtomicBool>,
    model: Arc<Mutex<Model>>,
) {
    let mut n = (w as i64) * 1_000_000;
    let mut k = 0;
    while !stop.load(Ordering::SeqCst) {
        k = (k + 1) % KEYS;
        n += 1;
        let path = format!("/w-{w}/k-{k}");
        let start = now_micros();
        let at = *addr.read().unwrap();
        let answer = http(
            at,
            "PUT",
            &format!("/v1/items{path}"),
            &format!(r#"{{"n":{n}}}"#),
        );
        let write = match answer {
            Ok((200 | 201, body)) => {
                let item: Value = serde_json::from_str(&body).unwrap();
                Write {
                    start,
                    known: now_micros(),
                    version: item["version"].as_u64(),
                    value: n,
                }
            }
            // Killed mid-request, or not yet back: learn what happened once it is.
            _ => {
                let found = read_back(&addr, &path);
                let committed = found.filter(|(_, value)| *value == n).map(|(v, _)| v);
                Write {
                    start,
                    known: now_micros(),
                    version: committed,
                    value: n,
                }
            }
        };
        model.lock().unwrap().entry(path).or_default().push(write);
    }
}

fn read_only(db: &Path) -> Store<pathdb_store::backend::FileBackend> {
    let options = StoreOptions {
        sweep_interval: None,
        ..StoreOptions::default()
    };
    Store::open_read_only(db, FileOptions::default(), options).unwrap()
}

fn start(db: &Path, archive: &Path) -> Server {
    start_archiving(db, archive.to_str().unwrap())
}

fn start_archiving(db: &Path, archive: &str) -> Server {
    let server = Server::start_with(db, &["--archive", archive, "--archive-delay", "200ms"]);
    // The restorable window starts at the first base backup, which the archiver takes first.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while archive_status(&server)["last_base"].is_null() {
        assert!(std::time::Instant::now() < deadline, "no base backup");
        std::thread::sleep(Duration::from_millis(20));
    }
    server
}

/// Revisions the model's namespace keeps (`ns set k --history`).
const HISTORY: u64 = 1000;

/// The acceptance test of the archive: 4 writers for 60 s (PATHDB_ARCHIVE_MODEL_SECS) against
/// `serve --archive`, 3 SIGKILLs and restarts; restores at 20 random instants each hold, for
/// every key, a version and value the model allows at that instant, and that key's history.
#[test]
fn restores_at_random_instants_match_the_model_across_kills() {
    let seconds: u64 = std::env::var("PATHDB_ARCHIVE_MODEL_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive");
    archive_model(dir.path(), archive.to_str().unwrap(), seconds, 3, 20);
}

/// The same against moto's S3 (`serve --archive s3://...`), shorter: 12 s, one SIGKILL, 6
/// instants. Runs where scripts/test.sh sets PATHDB_S3_ENDPOINT (moto's).
#[cfg(feature = "s3")]
#[test]
fn the_archive_in_s3_restores_at_random_instants() {
    let Ok(endpoint) = std::env::var("PATHDB_S3_ENDPOINT") else {
        eprintln!("skipped: set PATHDB_S3_ENDPOINT to an S3-compatible endpoint (moto)");
        return;
    };
    let bucket = format!("pathdb-archive-{}", now_micros());
    let made = http(
        endpoint
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .expect("PATHDB_S3_ENDPOINT is http://HOST:PORT"),
        "PUT",
        &format!("/{bucket}"),
        "",
    )
    .expect("moto answers");
    assert_eq!(made.0, 200, "create bucket: {}", made.1);
    let dir = tempfile::tempdir().unwrap();
    archive_model(dir.path(), &format!("s3://{bucket}/db-1"), 12, 1, 6);
}

/// 4 writers for `seconds` against `serve --archive archive`, `kills` SIGKILLs and restarts
/// spread over the run; `instants` restores at random instants compared with the model, and
/// the latest restore with the live database.
fn archive_model(dir: &Path, archive: &str, seconds: u64, kills: u32, instants: usize) {
    let db = dir.join("live.pathdb");
    ok(&[
        "--db",
        db.to_str().unwrap(),
        "ns",
        "set",
        "k",
        "--history",
        &HISTORY.to_string(),
    ]);
    let server = start_archiving(&db, archive);
    let begun = now_micros();
    let addr = Arc::new(RwLock::new(server.addr));
    let stop = Arc::new(AtomicBool::new(false));
    let model = Arc::new(Mutex::new(Model::new()));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (addr, stop, model) = (addr.clone(), stop.clone(), model.clone());
            std::thread::spawn(move || writer(w, addr, stop, model))
        })
        .collect();
    let mut server = Some(server);
    let lap = Duration::from_secs(seconds) / (kills + 1);
    for _ in 0..kills {
        std::thread::sleep(lap);
        server.take().unwrap().kill_9();
        let restarted = start_archiving(&db, archive);
        *addr.write().unwrap() = restarted.addr;
        server = Some(restarted);
    }
    std::thread::sleep(lap);
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.join().unwrap();
    }
    let ended = now_micros();
    let server = server.unwrap();
    // Every commit reaches the archive.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (_, body) = http(server.addr, "GET", "/v1/archive", "").unwrap();
        let status: Value = serde_json::from_str(&body).unwrap();
        if status["lag_commits"] == 0 && status["archived_commit"].as_u64() > Some(0) {
            assert_eq!(status["gaps"], serde_json::json!([]), "{status}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the archive never caught up: {status}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let live_export = ok(&["--server", &server.url(), "export"]);
    server.kill_9();

    let model = model.lock().unwrap().clone();
    let writes: usize = model.values().map(Vec::len).sum();
    assert!(writes > 200, "only {writes} writes in {seconds} s");
    // Instants from the first base backup on (a moment after start) to the end, seeded and
    // printed so that a failure can be replayed.
    let seed = now_micros() as u64;
    eprintln!("archive model: {writes} writes; instants seeded with {seed}");
    let mut state = seed | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let from = begun + 1_000_000;
    let span = (ended - from) as u64;
    for i in 0..instants {
        let at = from + (next() % span) as i64;
        let out = dir.join(format!("at-{i}.pathdb"));
        ok(&[
            "restore",
            "--archive",
            archive,
            "--at",
            &rfc3339(at),
            "--db",
            out.to_str().unwrap(),
        ]);
        let restored = read_only(&out);
        for (path, writes) in &model {
            let key: KeyPath = path.parse().unwrap();
            let allowed = allowed(writes, at);
            let item = restored.get(&key).unwrap();
            let found = item
                .as_ref()
                .map(|item| (item.version, item.value.to_value()["n"].as_i64().unwrap()));
            match found {
                None => assert!(
                    !writes.iter().any(|w| w.version.is_some() && w.known <= at),
                    "{path} is missing at {} but was acknowledged before",
                    rfc3339(at)
                ),
                Some(pair) => assert!(
                    allowed.contains(&pair),
                    "{path} at {}: restored {pair:?}, the model allows {allowed:?}",
                    rfc3339(at)
                ),
            }
            // History: every earlier version the model saw committed, with its value.
            if let Some((version, _)) = found {
                let committed: HashMap<u64, i64> = writes
                    .iter()
                    .filter_map(|w| Some((w.version?, w.value)))
                    .collect();
                let history = restored.history(&key, 10_000).unwrap();
                for old in history.iter().filter(|h| h.version < version) {
                    let value = old.value.to_value()["n"].as_i64().unwrap();
                    assert_eq!(
                        committed.get(&old.version),
                        Some(&value),
                        "{path} revision {} at {}",
                        old.version,
                        rfc3339(at)
                    );
                }
                // The namespace keeps HISTORY revisions, the current one among them: a key
                // written more often than that keeps only the newest.
                assert_eq!(
                    history.iter().filter(|h| h.version < version).count() as u64,
                    (version - 1).min(HISTORY - 1),
                    "{path}: every revision before {version} at {}",
                    rfc3339(at)
                );
            }
        }
    }
    // The latest restore is the live database.
    let latest = dir.join("latest.pathdb");
    ok(&[
        "restore",
        "--archive",
        archive,
        "--db",
        latest.to_str().unwrap(),
    ]);
    assert_eq!(
        ok(&["--db", latest.to_str().unwrap(), "export"]),
        live_export,
        "the latest restore differs from the live database"
    );
}

/// A backup taken while writers write holds exactly the live database as of its commit: the
/// archive restored at that commit exports the same.
#[test]
fn a_backup_under_load_is_the_database_at_its_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("live.pathdb");
    let archive = dir.path().join("archive");
    let server = start(&db, &archive);
    let addr = Arc::new(RwLock::new(server.addr));
    let stop = Arc::new(AtomicBool::new(false));
    let model = Arc::new(Mutex::new(Model::new()));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (addr, stop, model) = (addr.clone(), stop.clone(), model.clone());
            std::thread::spawn(move || writer(w, addr, stop, model))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    let backup = dir.path().join("under-load.pdbbackup");
    let shown = ok(&[
        "--json",
        "--server",
        &server.url(),
        "backup",
        backup.to_str().unwrap(),
    ]);
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.join().unwrap();
    }
    let info: Value = serde_json::from_str(shown.trim()).unwrap();
    let commit = info["commit"].as_u64().unwrap();
    assert_eq!(info["snapshot"], true);
    // Wait for the archive, then stop the server cleanly.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (_, body) = http(server.addr, "GET", "/v1/archive", "").unwrap();
        let status: Value = serde_json::from_str(&body).unwrap();
        if status["lag_commits"] == 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{status}");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(server);
    let from_backup = dir.path().join("from-backup.pathdb");
    ok(&[
        "restore",
        backup.to_str().unwrap(),
        "--db",
        from_backup.to_str().unwrap(),
    ]);
    let at_commit = dir.path().join("at-commit.pathdb");
    ok(&[
        "restore",
        "--archive",
        archive.to_str().unwrap(),
        "--commit",
        &commit.to_string(),
        "--db",
        at_commit.to_str().unwrap(),
    ]);
    let export = |db: &Path| ok(&["--db", db.to_str().unwrap(), "export"]);
    let backed_up = export(&from_backup);
    assert!(backed_up.lines().count() > 10, "{backed_up}");
    assert_eq!(backed_up, export(&at_commit));
    // And the CLI's answers to a damaged backup and an existing target.
    let mut bytes = std::fs::read(&backup).unwrap();
    let at = bytes.len() / 3;
    bytes[at] ^= 0x20;
    let damaged = dir.path().join("damaged.pdbbackup");
    std::fs::write(&damaged, &bytes).unwrap();
    let never = dir.path().join("never.pathdb");
    let error = fails_with(
        7,
        &[
            "restore",
            damaged.to_str().unwrap(),
            "--db",
            never.to_str().unwrap(),
        ],
    );
    assert!(error.contains("damaged.pdbbackup"), "{error}");
    assert!(!never.exists());
    fails_with(
        3,
        &[
            "restore",
            backup.to_str().unwrap(),
            "--db",
            from_backup.to_str().unwrap(),
        ],
    );
    fails_with(7, &["backup", "verify", damaged.to_str().unwrap()]);
}

/// A lost segment: `archive ls` names the gap, and a restore past it stops with status 8.
#[test]
fn a_gap_is_named_and_stops_the_restore() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("live.pathdb");
    let archive = dir.path().join("archive");
    let server = start(&db, &archive);
    for i in 0..6 {
        create(&server, i);
        std::thread::sleep(Duration::from_millis(400));
    }
    drop(server);
    let mut segments: Vec<_> = std::fs::read_dir(archive.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    segments.sort();
    assert!(segments.len() >= 4, "{segments:?}");
    std::fs::remove_file(&segments[segments.len() - 2]).unwrap();
    let listed = ok(&["archive", "ls", archive.to_str().unwrap()]);
    assert!(listed.contains("GAP: commits"), "{listed}");
    let out = dir.path().join("restored.pathdb");
    let error = fails_with_out(
        8,
        &[
            "restore",
            "--archive",
            archive.to_str().unwrap(),
            "--db",
            out.to_str().unwrap(),
        ],
    );
    assert!(error.contains("gap"), "{error}");
    assert!(out.exists(), "the restore up to the gap was not written");
    // Another database's archive is refused at start, before anything is served.
    let other = dir.path().join("other.pathdb");
    let error = fails_with(
        2,
        &[
            "--db",
            other.to_str().unwrap(),
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--archive",
            archive.to_str().unwrap(),
        ],
    );
    assert!(error.contains("belongs to another database"), "{error}");
}

/// Like [`fails_with`], for a command that prints its result before failing.
fn fails_with_out(code: i32, args: &[&str]) -> String {
    let out = crate::pathdb(args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "pathdb {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stderr).unwrap()
}

/// The archive's target goes away (here: its directory is replaced by a file, so every write
/// to it fails), with a SIGKILL while it is gone: the server stays ready and keeps writing,
/// `/metrics` and `/v1/archive` say the archive fails and lags, and when the target is back
/// the archive catches up without a gap.
#[test]
fn the_archive_catches_up_when_its_target_returns() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("live.pathdb");
    let archive = dir.path().join("archive");
    let away = dir.path().join("archive.away");
    let server = start(&db, &archive);
    create(&server, 0);
    wait_caught_up(&server);
    std::fs::rename(&archive, &away).unwrap();
    std::fs::write(&archive, "not a directory").unwrap();
    for i in 1..=5 {
        create(&server, i);
    }
    std::thread::sleep(Duration::from_millis(800));
    let (ready, _) = http(server.addr, "GET", "/readyz", "").unwrap();
    assert_eq!(ready, 200, "readiness depends on the archive");
    let status = archive_status(&server);
    assert!(status["lag_commits"].as_u64() > Some(0), "{status}");
    assert!(status["error"].is_string(), "{status}");
    let (_, metrics) = http(server.addr, "GET", "/metrics", "").unwrap();
    let failures = metrics
        .lines()
        .find(|l| l.starts_with("pathdb_archive_failures_total"))
        .unwrap_or_else(|| panic!("no failures metric:\n{metrics}"));
    assert!(!failures.ends_with(" 0"), "{failures}");
    assert!(metrics.contains("pathdb_archive_lag_commits"), "{metrics}");
    // Killed while the target is away, restarted (it finds no base backup now), written again.
    server.kill_9();
    let server = Server::start_with(
        &db,
        &[
            "--archive",
            archive.to_str().unwrap(),
            "--archive-delay",
            "200ms",
        ],
    );
    for i in 6..=8 {
        create(&server, i);
    }
    std::fs::remove_file(&archive).unwrap();
    std::fs::rename(&away, &archive).unwrap();
    wait_caught_up(&server);
    assert_eq!(archive_status(&server)["gaps"], serde_json::json!([]));
    let live = ok(&["--server", &server.url(), "export"]);
    drop(server);
    let restored = dir.path().join("restored.pathdb");
    ok(&[
        "restore",
        "--archive",
        archive.to_str().unwrap(),
        "--db",
        restored.to_str().unwrap(),
    ]);
    assert_eq!(ok(&["--db", restored.to_str().unwrap(), "export"]), live);
}

/// Creates the item `/a-{i}` through `server`.
fn create(server: &Server, i: u32) {
    let (status, body) = http(
        server.addr,
        "PUT",
        &format!("/v1/items/a-{i}"),
        r#"{"n":1}"#,
    )
    .expect("the server answers");
    assert_eq!(status, 201, "{body}");
}

fn archive_status(server: &Server) -> Value {
    let (_, body) = http(server.addr, "GET", "/v1/archive", "").unwrap();
    serde_json::from_str(&body).unwrap()
}

/// Waits (60 s at most) until the archive holds every commit.
fn wait_caught_up(server: &Server) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let status = archive_status(server);
        if status["lag_commits"] == 0 && status["error"].is_null() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never caught up: {status}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `serve --backup-dir` takes a backup every --backup-every and keeps the --backup-keep newest;
/// `backup ls` lists them and each verifies.
#[test]
fn scheduled_backups_are_taken_and_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("live.pathdb");
    let backups = dir.path().join("backups");
    let server = Server::start_with(
        &db,
        &[
            "--backup-dir",
            backups.to_str().unwrap(),
            "--backup-every",
            "300ms",
            "--backup-keep",
            "2",
        ],
    );
    create(&server, 1);
    std::thread::sleep(Duration::from_millis(1500));
    drop(server);
    let listed = ok(&["--json", "backup", "ls", backups.to_str().unwrap()]);
    let files = crate::json_lines(&listed);
    assert_eq!(files.len(), 2, "{listed}");
    for file in &files {
        let path = file["file"].as_str().unwrap();
        assert!(path.ends_with(".pdbbackup"), "{path}");
        let shown = ok(&["--json", "backup", "verify", path]);
        let info: Value = serde_json::from_str(shown.trim()).unwrap();
        assert_eq!(info["commit"], file["commit"], "{shown}");
    }
}
