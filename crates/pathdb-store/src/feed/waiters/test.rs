use super::*;
use crate::backend::{Key, Record};
use event_listener::Listener as _;
use std::time::{Duration, Instant};

fn append(partition: &[u8]) -> WriteOp {
    WriteOp::Append {
        log: layout::change_log(partition),
        record: Record {
            version: 1,
            created_at: 0,
            modified_at: 0,
            expires_at: None,
            value: Vec::new(),
        },
    }
}

fn woken(listener: EventListener) -> bool {
    listener
        .wait_deadline(Instant::now() + Duration::from_millis(20))
        .is_some()
}

#[test]
fn a_commit_wakes_the_waiters_of_its_groups_only() {
    let waiters = Waiters::new();
    let (a1, a2, b) = (
        waiters.listen(b"a"),
        waiters.listen(b"a"),
        waiters.listen(b"b"),
    );
    let batch = WriteBatch {
        ops: vec![
            // An item's own write is not a log append: it wakes no one by itself.
            WriteOp::Put {
                key: Key {
                    partition: b"b".to_vec(),
                    sort: vec![0],
                },
                record: Record {
                    version: 1,
                    created_at: 0,
                    modified_at: 0,
                    expires_at: None,
                    value: Vec::new(),
                },
                expect: None,
            },
            append(b"a"),
            append(b"a"),
        ],
    };
    let groups = ChangedGroups::of(&batch);
    assert_eq!(groups.0, [b"a".to_vec()]);
    waiters.notify(&groups);
    assert!(woken(a1) && woken(a2));
    assert!(!woken(b), "a commit of another group woke b's waiter");
    // A listener made after the commit waits for the next one.
    let late = waiters.listen(b"a");
    assert!(!woken(late));
}

#[test]
fn events_without_listeners_are_swept_out() {
    let waiters = Waiters::new();
    for n in 0..10 * SHARDS * SWEEP_SLACK {
        drop(waiters.listen(format!("g{n}").as_bytes()));
    }
    let held: usize = waiters
        .shards
        .iter()
        .map(|s| s.lock().expect("shard").events.len())
        .sum();
    assert!(held <= SHARDS * (SWEEP_SLACK + 1), "{held} events kept");
    // Merging keeps each group once.
    let mut groups = ChangedGroups(vec![b"a".to_vec()]);
    groups.merge(ChangedGroups(vec![b"a".to_vec(), b"b".to_vec()]));
    assert_eq!(groups.0, [b"a".to_vec(), b"b".to_vec()]);
}
