//! Read commands (get, ls, history, export) open the database file read-only: they never
//! change its bytes, and they work on a file the user cannot write, or on a read-only mount.

use crate::{db_args, fails, ok};
use std::path::Path;
use std::process::Command;

/// A database with an item, one with history, and one that expires.
fn seed(db: &Path) {
    ok(&db_args(
        db,
        &["put", "/u-1/p-1", r#"{"n": 1}"#, "--history"],
    ));
    ok(&db_args(
        db,
        &["put", "/u-1/p-1", r#"{"n": 2}"#, "--history"],
    ));
    ok(&db_args(db, &["put", "/u-1/p-2", "2", "--ttl", "3600"]));
}

/// Every read command, with what its output must contain.
const READS: &[(&[&str], &str)] = &[
    (&["get", "/u-1/p-1"], r#"{"n":2}"#),
    (&["get", "/u-1/p-1", "--version", "1"], r#"{"n":1}"#),
    (&["ls", "/u-1"], "/u-1/p-2"),
    (
        &["--json", "ls", "/u-1", "--all", "--limit", "1"],
        "/u-1/p-2",
    ),
    (&["history", "/u-1/p-1"], r#"{"n":1}"#),
    (&["export"], "/u-1/p-2"),
];

fn bytes_of(file: &Path) -> Vec<u8> {
    // The bytes themselves: equal bytes is what the sha256 of a backup would check.
    std::fs::read(file).expect("read the database file")
}

#[test]
fn read_commands_leave_the_file_byte_identical() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("t.pathdb");
    seed(&db);
    let before = bytes_of(&db);
    for _ in 0..2 {
        for (command, expected) in READS {
            let out = ok(&db_args(&db, command));
            assert!(out.contains(expected), "{command:?}: {out}");
            assert!(
                bytes_of(&db) == before,
                "pathdb {command:?} changed the database file"
            );
        }
    }
    // A backup copied after the reads is the file as the last write left it.
    let backup = dir.path().join("backup.pathdb");
    std::fs::copy(&db, &backup).expect("copy");
    assert!(bytes_of(&backup) == before);
}

#[test]
fn a_read_of_a_missing_file_says_so_and_creates_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("missing.pathdb");
    for (command, _) in READS {
        let err = fails(&db_args(&db, command));
        assert!(
            err.contains("missing.pathdb does not exist"),
            "{command:?}: {err}"
        );
        assert!(!db.exists(), "pathdb {command:?} created the file");
    }
}

/// Runs `pathdb args` as user nobody (65534) when we are root; `None` (with the reason printed)
/// where that is impossible, which CI does not accept.
fn run_as_nobody(args: &[&str]) -> Option<std::process::Output> {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let setpriv = Command::new("setpriv").arg("--version").output().is_ok();
    if !root || !setpriv {
        let reason = format!("cannot switch to another user (root: {root}, setpriv: {setpriv})");
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must run this test: {reason}"
        );
        eprintln!("skipped: {reason}");
        return None;
    }
    Some(
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_pathdb"))
            .args(args)
            .output()
            .expect("setpriv runs"),
    )
}

#[test]
fn a_file_the_user_cannot_write_is_readable() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("t.pathdb");
    seed(&db);
    // Readable by everyone, writable by no one (root ignores the mode: hence user nobody).
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    let before = bytes_of(&db);
    for (command, expected) in READS {
        let Some(out) = run_as_nobody(&db_args(&db, command)) else {
            return;
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{command:?} as nobody: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(expected), "{command:?}: {stdout}");
    }
    // A write is refused by the file system, as it should be, and says so (status 5, refused).
    let out = run_as_nobody(&db_args(&db, &["put", "/u-1/p-3", "3"])).expect("ran above");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("Permission denied"), "{stderr}");
    assert!(bytes_of(&db) == before, "the file changed");
}

#[test]
fn a_read_only_mount_is_readable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("t.pathdb");
    seed(&db);
    let before = bytes_of(&db);
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    // A private mount namespace, so that the read-only bind mount is seen by this command only.
    let mount_works = root
        && Command::new("unshare")
            .args(["-m", "true"])
            .status()
            .is_ok_and(|s| s.success());
    if !mount_works {
        let reason = format!("cannot make a read-only mount (root: {root}, or unshare -m fails)");
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must run this test: {reason}"
        );
        eprintln!("skipped: {reason}");
        return;
    }
    let dir_text = dir.path().to_str().expect("utf-8");
    let on_read_only_mount = |command: &[&str]| {
        Command::new("unshare")
            .args(["-m", "sh", "-c"])
            .arg(r#"mount --bind -o ro "$1" "$1" && shift && exec "$@""#)
            .args(["sh", dir_text, env!("CARGO_BIN_EXE_pathdb")])
            .args(db_args(&db, command))
            .output()
            .expect("unshare runs")
    };
    // A write cannot open the file: refused (status 5), not "unavailable".
    let out = on_read_only_mount(&["put", "/u-1/p-3", "3"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("Read-only file system"), "{stderr}");
    for (command, expected) in READS {
        let out = on_read_only_mount(command);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{command:?} on a read-only mount: {stderr}"
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(expected),
            "{command:?}"
        );
    }
    assert!(bytes_of(&db) == before, "the file changed");
}
