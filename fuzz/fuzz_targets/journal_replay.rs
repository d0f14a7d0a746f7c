//! The file backend's commit journal, as a crash or a bad disk may leave it: arbitrary bytes
//! after a valid journal header in each of its two files (the input's first two bytes, little
//! endian, say how many of the rest go to the first), beside a cleanly closed database. Opening never panics; when it succeeds,
//! reads work, and closing leaves one file that a read-only open accepts.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pathdb_store::backend::{Backend, FileBackend, FileOptions, Reader};
use std::path::PathBuf;
use std::sync::OnceLock;

const MAX_LEN: usize = 64 * 1024;

/// A scratch directory, an empty database's bytes and its journal's header.
struct Base {
    dir: PathBuf,
    database: Vec<u8>,
    header: Vec<u8>,
}

fn base() -> &'static Base {
    static BASE: OnceLock<Base> = OnceLock::new();
    BASE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("pathdb-fuzz-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let db = dir.join("base.redb");
        let backend = FileBackend::open(&db, FileOptions::default()).expect("a new database");
        // The journal exists while the database is open; its first 16 bytes name the database.
        let journal = std::fs::read(dir.join("base.redb-journal")).expect("the journal");
        drop(backend);
        Base {
            database: std::fs::read(&db).expect("the database file"),
            header: journal[..16].to_vec(),
            dir,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_LEN {
        return;
    }
    let base = base();
    let db = base.dir.join("case.redb");
    let journal = base.dir.join("case.redb-journal");
    let second = base.dir.join("case.redb-journal2");
    let (first_part, second_part) = match data {
        [low, high, rest @ ..] => {
            rest.split_at(usize::from(u16::from_le_bytes([*low, *high])).min(rest.len()))
        }
        _ => (data, &[][..]),
    };
    std::fs::write(&db, &base.database).expect("write the database");
    std::fs::write(&journal, [base.header.as_slice(), first_part].concat())
        .expect("write the journal");
    std::fs::write(&second, [base.header.as_slice(), second_part].concat())
        .expect("write the journal's second file");
    let Ok(backend) = FileBackend::open(&db, FileOptions::default()) else {
        return;
    };
    let reader = backend.reader().expect("a reader after the replay");
    let _ = reader.scan_all(None, 100);
    drop(reader);
    drop(backend);
    assert!(
        !journal.exists() && !second.exists(),
        "a clean close removes the journal"
    );
    FileBackend::open_read_only(&db, FileOptions::default())
        .expect("a closed database opens read-only");
});
