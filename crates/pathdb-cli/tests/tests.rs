//! End-to-end tests of the `pathdb` binary: what a user types, what they see.

mod access;
mod aliases;
mod backups;
mod bench;
mod connections;
mod counters;
// The DynamoDB backend is the `dynamodb` feature (scripts/test.sh turns it on).
#[cfg(feature = "dynamodb")]
mod dynamodb;
#[cfg(feature = "dynamodb")]
mod dynamodb_start;
mod filters;
mod foreign;
mod full_disk;
mod help;
mod json;
mod key;
mod migrations;
mod namespaces;
mod read_only;
mod scripts;
mod server;
mod store;
mod transfer;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

/// `--db DB` followed by `args`.
pub fn db_args<'a>(db: &'a std::path::Path, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["--db", db.to_str().expect("utf-8 temp path")];
    all.extend_from_slice(args);
    all
}

/// One JSON value per line.
pub fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// Runs the built `pathdb` binary with `args`.
pub fn pathdb(args: &[&str]) -> Output {
    pathdb_command()
        .args(args)
        .output()
        .expect("the pathdb binary runs")
}

/// Runs `pathdb`, asserts success and returns stdout.
pub fn ok(args: &[&str]) -> String {
    let out = pathdb(args);
    assert!(
        out.status.success(),
        "pathdb {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Runs `pathdb`, asserts failure with exit status 2 (usage or invalid input) and nothing on
/// stdout, and returns stderr.
pub fn fails(args: &[&str]) -> String {
    fails_with(2, args)
}

/// Runs `pathdb`, asserts failure with exit status `code` and nothing on stdout, and returns
/// stderr.
pub fn fails_with(code: i32, args: &[&str]) -> String {
    let out = pathdb(args);
    assert!(!out.status.success(), "pathdb {args:?} should fail");
    assert_eq!(
        out.status.code(),
        Some(code),
        "pathdb {args:?} exit code; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout.is_empty(),
        "pathdb {args:?} printed to stdout on error"
    );
    String::from_utf8(out.stderr).expect("utf-8 output")
}

/// Like [`fails`], with `input` on stdin.
pub fn fails_with_stdin(args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_pathdb"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the pathdb binary runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("pathdb finishes");
    assert_eq!(out.status.code(), Some(2), "pathdb {args:?} exit code");
    assert!(
        out.stdout.is_empty(),
        "pathdb {args:?} printed to stdout on error"
    );
    String::from_utf8(out.stderr).expect("utf-8 output")
}

/// A `pathdb` with placeholder AWS credentials (a local DynamoDB-compatible server checks only
/// that there are some).
pub fn pathdb_command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pathdb"));
    cmd.env("AWS_ACCESS_KEY_ID", "pathdb-test")
        .env("AWS_SECRET_ACCESS_KEY", "pathdb-test");
    cmd
}

/// A running `pathdb serve` (started with `args`, which name the backend and `--addr
/// 127.0.0.1:0`), killed on drop, even when an assertion fails.
pub struct Served {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Served {
    /// Starts `pathdb ARGS` and waits for its "listening on" line.
    pub fn start(args: &[&str]) -> Served {
        let mut command = pathdb_command();
        command.args(args);
        Served::spawn(command)
    }

    /// [`Served::start`] under an open-file limit of `files`, soft and hard (`ulimit -n`), so
    /// that the server cannot raise it.
    pub fn start_with_file_limit(files: u32, args: &[&str]) -> Served {
        let mut command = Command::new("bash");
        command
            .args(["-c", &format!(r#"ulimit -n {files} && exec "$0" "$@""#)])
            .arg(env!("CARGO_BIN_EXE_pathdb"))
            .args(args);
        Served::spawn(command)
    }

    /// Runs `command` (a `pathdb serve`) and waits for its "listening on" line.
    fn spawn(mut command: Command) -> Served {
        let mut child = command
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("pathdb serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read the listening line");
        let Some(url) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("unexpected first line {line:?}");
        };
        Served {
            url: url.to_owned(),
            child,
        }
    }

    /// The server's `host:port`.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.url
            .trim_start_matches("http://")
            .parse()
            .expect("the listening line names an address")
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    #[cfg(feature = "dynamodb")]
    /// `pathdb serve --backend dynamodb` with `table`'s arguments (`--table T --endpoint E
    /// --region R`, as `pathdb dynamodb create-table` took them).
    pub fn dynamodb(table: &[&str]) -> Served {
        let serve = ["serve", "--backend", "dynamodb", "--addr", "127.0.0.1:0"];
        Served::start(&[&serve[..], table].concat())
    }

    /// `pathdb serve` on the file `db`.
    pub fn file(db: &std::path::Path) -> Served {
        let db = db.to_str().expect("utf-8 temp path");
        Served::start(&["serve", "--addr", "127.0.0.1:0", "--db", db])
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
