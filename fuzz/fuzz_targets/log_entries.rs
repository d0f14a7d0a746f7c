//! Change log entries as a disk or a table may hold them: arbitrary bytes, in either form
//! (JSON, or compact when the first byte says so). Reading never panics. An entry that reads
//! joins with itself into one whose changes are its own twice, when it ends its commit (a
//! backend's group commit joins the entries of several batches).

#![no_main]

use libfuzzer_sys::fuzz_target;
use pathdb_store::backend::Record;
use pathdb_store::{decode_log_entry, join_log_entries};

/// Longer inputs only slow the fuzzer down without reaching new code.
const MAX_LEN: usize = 16 * 1024;

fuzz_target!(|data: &[u8]| {
    if data.len() > MAX_LEN {
        return;
    }
    let Ok(changes) = decode_log_entry(data) else {
        return;
    };
    let record = Record {
        version: 1,
        created_at: 1,
        modified_at: 1,
        expires_at: None,
        value: data.to_vec(),
    };
    if let Some(joined) = join_log_entries(&[&record, &record]) {
        let twice = decode_log_entry(&joined.value).expect("a joined entry reads");
        assert_eq!(twice.len(), 2 * changes.len());
        assert_eq!(&twice[..changes.len()], &changes[..]);
        assert_eq!(&twice[changes.len()..], &changes[..]);
    }
});
