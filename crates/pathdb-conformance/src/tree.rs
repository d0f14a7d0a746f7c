//! Subtree delete, move and copy: segment boundaries, groups, history, the change feed, the
//! errors, and a large move that stops part-way and is run again.

use crate::{Harness, item_texts, items_of, list_all, open_manual, path, put, value};
use pathdb_keys::KeyPath;
use pathdb_store::backend::Backend;
use pathdb_store::{
    Change, Error, Expiry, Item, ListRequest, MAX_LIST_LIMIT, PutOptions, Store, SubtreeJob,
    SubtreeOp, Transaction,
};
use std::collections::BTreeMap;
use std::time::Duration;

fn with_history() -> PutOptions {
    PutOptions {
        history: true,
        ..PutOptions::default()
    }
}

/// Every live item at or below `prefix`, in key order.
fn subtree<B: Backend>(store: &Store<B>, prefix: &str) -> Vec<Item> {
    let mut request = ListRequest::new(path(prefix));
    request.limit = MAX_LIST_LIMIT;
    items_of(list_all(store, &request))
}

fn no_progress(_: u64) {}

/// The changes the feed of `group` shows after `token`: `+path@version` or `-path@version`.
fn feed<B: Backend>(
    store: &Store<B>,
    group: &str,
    token: &pathdb_store::ChangeToken,
) -> Vec<String> {
    let page = store.changes(&path(group), Some(token), 1000).unwrap();
    page.changes
        .iter()
        .map(|entry| match &entry.change {
            Change::Put(item) => format!("+{}@{}", item.path, item.version),
            Change::Delete { path, version, .. } => format!("-{path}@{version}"),
        })
        .collect()
}

/// A subtree delete takes the item and everything below it, never a sibling whose id extends
/// its id (`/p-1` and `/p-10`); each leaves its tombstone, history stays, and the feed shows
/// the deletes. Deleting nothing is an error.
pub fn subtree_delete<H: Harness>(harness: &H) {
    let (_, store) = open_manual(harness);
    for text in [
        "/a-1/p-1",
        "/a-1/p-1/c-1",
        "/a-1/p-1/c-2/d-1",
        "/a-1/p-10",
        "/a-1/p-10/c-1",
        "/a-1/p-2",
    ] {
        put(&store, text, 1);
    }
    store
        .put(&path("/a-1/p-1/c-1"), value(2), with_history())
        .unwrap();
    let token = store.changes_token(&path("/a-1")).unwrap();
    let mut seen = Vec::new();
    let deleted = store
        .delete_subtree(&path("/a-1/p-1"), &mut |n| seen.push(n))
        .unwrap();
    assert_eq!(deleted, 3);
    assert_eq!(seen, [3], "one batch, one progress report");
    assert_eq!(
        item_texts(&subtree(&store, "/a-1")),
        ["/a-1/p-2", "/a-1/p-10", "/a-1/p-10/c-1"]
    );
    assert_eq!(
        feed(&store, "/a-1", &token),
        ["-/a-1/p-1@1", "-/a-1/p-1/c-1@2", "-/a-1/p-1/c-2/d-1@1"]
    );
    // History outlives the items; a later put continues the numbering past the tombstone.
    assert_eq!(store.history(&path("/a-1/p-1/c-1"), 10).unwrap().len(), 1);
    assert_eq!(put(&store, "/a-1/p-1/c-1", 3).version, 4);
    // A path whose only items are below it (a node) is deleted the same way.
    put(&store, "/a-1/p-3/c-1", 1);
    assert_eq!(
        store
            .delete_subtree(&path("/a-1/p-3"), &mut no_progress)
            .unwrap(),
        1
    );
    // A whole group: p-2, p-10 and its child, and p-1/c-1 put again.
    assert_eq!(
        store
            .delete_subtree(&path("/a-1"), &mut no_progress)
            .unwrap(),
        4
    );
    assert!(subtree(&store, "/a-1").is_empty());
    match store.delete_subtree(&path("/a-1/p-1"), &mut no_progress) {
        Err(Error::NothingBelow { operation, path: p }) => {
            assert_eq!((operation, p), ("delete", path("/a-1/p-1")));
        }
        other => panic!("expected NothingBelow, got {other:?}"),
    }
    assert!(matches!(
        store.delete_subtree(&path("/a-1/p"), &mut no_progress),
        Err(Error::InvalidRequest(_))
    ));
}

/// A move re-keys every live item of the subtree, with its value, `created_at`, expiry and
/// history; the sources become tombstones (a later put continues their numbering); both groups'
/// feeds show it; a destination's used versions are never reused.
pub fn subtree_move<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    let created = put(&store, "/drive-a91/folder-docs", 1);
    clock.advance(Duration::from_secs(5));
    for n in 1..=2 {
        store
            .put(
                &path("/drive-a91/folder-docs/file-1"),
                value(n),
                with_history(),
            )
            .unwrap();
    }
    put(&store, "/drive-a91/folder-docs/sub-1/file-2", 7);
    let expiring = PutOptions {
        expires: Some(Expiry::After(Duration::from_secs(60))),
        ..PutOptions::default()
    };
    store
        .put(&path("/drive-a91/folder-docs/tmp-1"), value(8), expiring)
        .unwrap();
    put(&store, "/drive-a91/folder-docs0", 9);
    put(&store, "/drive-a91/folder-doc", 9);
    // The destination used a version before: what arrives goes above it.
    put(&store, "/drive-b22/folder-docs/file-1", 1);
    put(&store, "/drive-b22/folder-docs/file-1", 2);
    store
        .delete(&path("/drive-b22/folder-docs/file-1"), None)
        .unwrap();
    let before = subtree(&store, "/drive-a91/folder-docs");
    let source_token = store.changes_token(&path("/drive-a91")).unwrap();
    let target_token = store.changes_token(&path("/drive-b22")).unwrap();
    clock.advance(Duration::from_secs(5));

    let moved = store
        .move_subtree(
            &path("/drive-a91/folder-docs"),
            &path("/drive-b22/folder-docs"),
            &mut no_progress,
        )
        .unwrap();
    assert_eq!(moved, 4);
    assert!(subtree(&store, "/drive-a91/folder-docs").is_empty());
    assert_eq!(
        item_texts(&subtree(&store, "/drive-a91")),
        ["/drive-a91/folder-doc", "/drive-a91/folder-docs0"],
        "siblings that share a prefix of the name stay"
    );
    let after = subtree(&store, "/drive-b22/folder-docs");
    assert_eq!(
        item_texts(&after),
        [
            "/drive-b22/folder-docs",
            "/drive-b22/folder-docs/file-1",
            "/drive-b22/folder-docs/sub-1/file-2",
            "/drive-b22/folder-docs/tmp-1",
        ]
    );
    for (old, new) in before.iter().zip(&after) {
        assert_eq!(new.value, old.value);
        assert_eq!(new.created_at, old.created_at);
        assert_eq!(new.modified_at, old.modified_at);
        assert_eq!(new.expires_at, old.expires_at);
    }
    assert_eq!(after[0].created_at, created.created_at);
    // file-1 was at version 2 here, and the destination had used 3 (2 puts and a delete).
    let file = &after[1];
    assert_eq!(file.version, 5);
    let history: Vec<u64> = store
        .history(&file.path, 10)
        .unwrap()
        .iter()
        .map(|i| i.version)
        .collect();
    assert_eq!(
        history,
        [5, 4],
        "revisions move, renumbered with their item"
    );
    assert_eq!(
        store.get_version(&file.path, 4).unwrap().map(|i| i.value),
        Some(value(1))
    );
    assert!(
        store
            .history(&path("/drive-a91/folder-docs/file-1"), 10)
            .unwrap()
            .is_empty()
    );
    // The sources keep tombstones: a later put continues their numbering.
    assert_eq!(put(&store, "/drive-a91/folder-docs/file-1", 3).version, 4);
    assert_eq!(
        feed(&store, "/drive-a91", &source_token),
        [
            "-/drive-a91/folder-docs@1",
            "-/drive-a91/folder-docs/file-1@2",
            "-/drive-a91/folder-docs/sub-1/file-2@1",
            "-/drive-a91/folder-docs/tmp-1@1",
            "+/drive-a91/folder-docs/file-1@4",
        ]
    );
    assert_eq!(
        feed(&store, "/drive-b22", &target_token),
        [
            "+/drive-b22/folder-docs@1",
            "+/drive-b22/folder-docs/file-1@5",
            "+/drive-b22/folder-docs/sub-1/file-2@1",
            "+/drive-b22/folder-docs/tmp-1@1",
        ]
    );
    // Expiry goes along: the moved item expires at its time.
    clock.advance(Duration::from_secs(60));
    store.sweep_expired().unwrap();
    assert_eq!(
        store.get(&path("/drive-b22/folder-docs/tmp-1")).unwrap(),
        None
    );

    // A whole group, into another group, and back under a deeper path.
    put(&store, "/user-7", 1);
    put(&store, "/user-7/post-1", 2);
    put(&store, "/user-7/post-1/comment-3", 3);
    assert_eq!(
        store
            .move_subtree(&path("/user-7"), &path("/user-8"), &mut no_progress)
            .unwrap(),
        3
    );
    assert!(subtree(&store, "/user-7").is_empty());
    assert_eq!(
        item_texts(&subtree(&store, "/user-8")),
        ["/user-8", "/user-8/post-1", "/user-8/post-1/comment-3"]
    );
    store
        .move_subtree(
            &path("/user-8"),
            &path("/archive-1/user-8"),
            &mut no_progress,
        )
        .unwrap();
    assert_eq!(
        item_texts(&subtree(&store, "/archive-1")),
        [
            "/archive-1/user-8",
            "/archive-1/user-8/post-1",
            "/archive-1/user-8/post-1/comment-3"
        ]
    );
    assert_eq!(
        store
            .get(&path("/archive-1/user-8/post-1/comment-3"))
            .unwrap()
            .map(|i| i.value),
        Some(value(3))
    );
}

/// A copy writes the same items, values and history under the destination and leaves the
/// source as it is.
pub fn subtree_copy<H: Harness>(harness: &H) {
    let (_, store) = open_manual(harness);
    for n in 1..=2 {
        store
            .put(&path("/t-1/doc-1"), value(n), with_history())
            .unwrap();
    }
    put(&store, "/t-1/doc-1/part-1", 3);
    put(&store, "/t-1/doc-10", 4);
    let before = subtree(&store, "/t-1");
    let copied = store
        .copy_subtree(&path("/t-1/doc-1"), &path("/t-2/doc-1"), &mut no_progress)
        .unwrap();
    assert_eq!(copied, 2);
    assert_eq!(subtree(&store, "/t-1"), before, "the source is as it was");
    let copy = subtree(&store, "/t-2");
    assert_eq!(item_texts(&copy), ["/t-2/doc-1", "/t-2/doc-1/part-1"]);
    assert_eq!(copy[0].version, before[0].version);
    assert_eq!(copy[0].value, before[0].value);
    assert_eq!(store.history(&path("/t-2/doc-1"), 10).unwrap().len(), 2);
    assert_eq!(store.history(&path("/t-1/doc-1"), 10).unwrap().len(), 2);
    // Both are items of their own from now on.
    put(&store, "/t-2/doc-1", 9);
    assert_eq!(
        store.get(&path("/t-1/doc-1")).unwrap().map(|i| i.value),
        Some(value(2))
    );
}

/// The errors: a destination with a live item (nothing is written), paths inside each other,
/// an empty source, and a path without id.
pub fn subtree_errors<H: Harness>(harness: &H) {
    let (_, store) = open_manual(harness);
    put(&store, "/e-1/a-1", 1);
    put(&store, "/e-1/a-1/b-1", 2);
    put(&store, "/e-1/c-1/d-1", 3);
    let everything =
        |store: &Store<H::Backend>| [subtree(store, "/e-1"), subtree(store, "/e-2")].concat();
    let before = everything(&store);
    for op in [SubtreeOp::Move, SubtreeOp::Copy] {
        let job = |from: &str, to: &str| SubtreeJob {
            op,
            from: path(from),
            to: Some(path(to)),
        };
        match store.run_subtree_job(&job("/e-1/a-1", "/e-1/c-1"), &mut no_progress) {
            Err(Error::DestinationNotEmpty { to, item }) => {
                assert_eq!((to, item), (path("/e-1/c-1"), path("/e-1/c-1/d-1")));
            }
            other => panic!("expected DestinationNotEmpty, got {other:?}"),
        }
        for (from, to) in [
            ("/e-1/a-1", "/e-1/a-1/b-2"),
            ("/e-1/a-1/b-1", "/e-1/a-1"),
            ("/e-1/a-1", "/e-1/a-1"),
            ("/e-1", "/e-1/x-1"),
            ("/e-1/a", "/e-2/a"),
        ] {
            assert!(
                matches!(
                    store.run_subtree_job(&job(from, to), &mut no_progress),
                    Err(Error::InvalidRequest(_))
                ),
                "{from} to {to}"
            );
        }
        assert!(matches!(
            store.run_subtree_job(&job("/e-1/z-1", "/e-2/z-1"), &mut no_progress),
            Err(Error::NothingBelow { .. })
        ));
    }
    assert_eq!(everything(&store), before, "nothing was written");
    assert!(store.subtree_jobs().unwrap().is_empty());
}

/// Items a test subtree needs for several batches on this backend.
fn batched_size<B: Backend>(store: &Store<B>) -> usize {
    // A move writes at least 2 operations per item; batches hold at most 1000 items.
    let batch = (store.backend().max_batch_ops() / 2).min(1000);
    batch * 5 / 2
}

/// Puts `{"n": i}` at each path, many per transaction.
fn load<B: Backend>(store: &Store<B>, paths: &[KeyPath]) {
    let per = (store.backend().max_batch_ops() / 3).clamp(1, 100);
    for (chunk_index, chunk) in paths.chunks(per).enumerate() {
        let mut tx = Transaction::new();
        for (i, p) in chunk.iter().enumerate() {
            let n = (chunk_index * per + i) as i64;
            tx = tx.put(p.clone(), value(n), PutOptions::default());
        }
        store.transact(tx).unwrap();
    }
}

/// Runs `job` and stops it (a panic, as a crash would) after `batches` batches committed.
fn crash_after<B: Backend>(store: &Store<B>, job: &SubtreeJob, batches: usize) -> u64 {
    let mut reports = Vec::new();
    let stopped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        store.run_subtree_job(job, &mut |n| {
            reports.push(n);
            if reports.len() == batches {
                panic!("crash after {batches} batches");
            }
        })
    }));
    assert!(stopped.is_err(), "the job ended before the crash");
    *reports.last().expect("a batch committed")
}

/// A subtree larger than one batch is moved in batches: stopped after two, every item is at
/// its source or its destination, the job is listed, and running the move again finishes it
/// with every item exactly once, at its destination. Deletes and copies resume the same way.
pub fn large_move_resumes<H: Harness>(harness: &H) {
    let (_, store) = open_manual(harness);
    let n = batched_size(&store);
    let sources: Vec<KeyPath> = (0..n)
        .map(|i| path(&format!("/big-1/dir-1/f-{}/x-{i}", i % 7)))
        .collect();
    load(&store, &sources);
    let expected: BTreeMap<String, pathdb_store::Json> = subtree(&store, "/big-1/dir-1")
        .into_iter()
        .map(|i| {
            (
                i.path.to_string().replace("/big-1/dir-1", "/big-2/dir-2"),
                i.value,
            )
        })
        .collect();
    assert_eq!(expected.len(), n);

    let job = SubtreeJob::relocate(path("/big-1/dir-1"), path("/big-2/dir-2"));
    let done = crash_after(&store, &job, 2);
    assert!(
        done > 0 && (done as usize) < n,
        "stopped part-way: {done} of {n}"
    );
    let pending = store.subtree_jobs().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        (pending[0].job.clone(), pending[0].done),
        (job.clone(), done)
    );
    let at_source = subtree(&store, "/big-1/dir-1");
    let at_target = subtree(&store, "/big-2/dir-2");
    assert_eq!(
        at_source.len() + at_target.len(),
        n,
        "each item in one place"
    );
    assert_eq!(at_target.len() as u64, done);
    for item in &at_target {
        assert_eq!(Some(&item.value), expected.get(&item.path.to_string()));
    }

    // Running it again finishes it, counting the items of the first run too.
    let mut reports = Vec::new();
    let total = store
        .run_subtree_job(&job, &mut |n| reports.push(n))
        .unwrap();
    assert_eq!(total as usize, n);
    assert!(reports.windows(2).all(|w| w[0] < w[1]));
    assert!(subtree(&store, "/big-1").is_empty());
    let moved: BTreeMap<String, pathdb_store::Json> = subtree(&store, "/big-2/dir-2")
        .into_iter()
        .map(|i| (i.path.to_string(), i.value))
        .collect();
    assert_eq!(moved, expected);
    assert!(store.subtree_jobs().unwrap().is_empty());

    // A copy and a delete, each stopped and run again.
    let copy = SubtreeJob::copy(path("/big-2/dir-2"), path("/big-3/dir-3"));
    crash_after(&store, &copy, 1);
    assert_eq!(
        store.run_subtree_job(&copy, &mut no_progress).unwrap() as usize,
        n
    );
    assert_eq!(subtree(&store, "/big-3/dir-3").len(), n);
    assert_eq!(subtree(&store, "/big-2/dir-2").len(), n);
    let delete = SubtreeJob::delete(path("/big-3"));
    crash_after(&store, &delete, 1);
    assert_eq!(
        store.run_subtree_job(&delete, &mut no_progress).unwrap() as usize,
        n
    );
    assert!(subtree(&store, "/big-3").is_empty());
    assert!(store.subtree_jobs().unwrap().is_empty());
}
