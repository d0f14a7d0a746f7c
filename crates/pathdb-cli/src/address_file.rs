//! The address file `pathdb serve` leaves beside the database it serves (`pathdb.db.server`
//! beside `pathdb.db`), so that a local command that finds the file locked can name the server
//! to go through instead of guessing the default address.
//!
//! The file holds one JSON object, `{"url": "http://127.0.0.1:7070", "pid": 4242}`. `serve`
//! writes it once it listens and removes it when it exits cleanly; a `serve` killed with -9
//! leaves it behind, so a reader trusts it only while the process is alive (where `/proc`
//! tells) and the address accepts connections.

use serde::{Deserialize, Serialize};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the file says.
#[derive(Serialize, Deserialize, Debug)]
struct Record {
    /// The server's base URL, as `serve` printed it.
    url: String,
    /// The server's process id.
    pid: u32,
}

/// The address file of the database `db`.
pub fn path_of(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".server");
    PathBuf::from(name)
}

/// Removes the address file when dropped: at `serve`'s exit, however it returns.
#[derive(Debug)]
pub struct Recorded(PathBuf);

impl Drop for Recorded {
    fn drop(&mut self) {
        // Already gone is fine: the file only ever helps.
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Records that this process serves `db` at `url`. A failure (a read-only folder) only loses
/// the hint, so it is returned for the caller to log, never to stop the server.
pub fn record(db: &Path, url: &str) -> std::io::Result<Recorded> {
    let path = path_of(db);
    let record = Record {
        url: url.to_owned(),
        pid: std::process::id(),
    };
    // Written whole to a temporary name, then renamed: a reader never sees half a file.
    let partial = path.with_extension("server.partial");
    std::fs::write(&partial, serde_json::to_vec(&record)?)?;
    std::fs::rename(&partial, &path)?;
    Ok(Recorded(path))
}

/// The URL of the `pathdb serve` that holds `db`, if one recorded it and still answers there.
/// `None` when there is no file, or a stale one (its process is gone, or nothing listens).
pub fn live_server(db: &Path) -> Option<String> {
    let text = std::fs::read(path_of(db)).ok()?;
    let record: Record = serde_json::from_slice(&text).ok()?;
    if !process_alive(record.pid) {
        return None;
    }
    let addr = socket_addr(&record.url)?;
    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    Some(record.url)
}

/// Whether process `pid` exists, where the system tells (Linux's `/proc`); elsewhere assumed,
/// and the connection check decides.
fn process_alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.is_dir() || proc.join(pid.to_string()).exists()
}

/// `http://HOST:PORT` to a socket address.
fn socket_addr(url: &str) -> Option<SocketAddr> {
    let authority = url.split_once("://")?.1.split('/').next()?;
    authority.to_socket_addrs().ok()?.next()
}
