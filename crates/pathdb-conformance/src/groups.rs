//! Listing groups: key order across types, paging, the system partition, groups with nothing
//! left to read.

use super::{Harness, open_manual, path, put, value};
use pathdb_store::{Error, Expiry, MAX_GROUPS_LIMIT, PutOptions};
use std::time::Duration;

/// [`pathdb_store::Store::groups`] lists every group that holds a live item once, in typed key
/// order, page by page; never the system partition (written here by a namespace setting); never a
/// group left with nothing a read can see, though its partition still holds records: its items
/// deleted (tombstones, history), moved away as a whole group, or expired. A group whose first
/// and last many items are tombstones but which holds a live item between them is listed. A bad limit or
/// token is refused.
pub fn groups_in_key_order<H: Harness>(harness: &H) {
    let (clock, store) = open_manual(harness);
    assert_eq!(
        store.groups(10, None).unwrap().groups,
        Vec::new(),
        "empty store"
    );
    // Out of order on purpose; integers sort numerically, descending ids reversed.
    for (n, text) in [
        "/user-10/post-1",
        "/user-2",
        "/user-2/post-1",
        "/user-2/post-2",
        "/season-2026-spring/score-!1500",
        "/user-!3",
        "/user-!30",
        "/orders-abc",
        "/user-%01",
    ]
    .into_iter()
    .enumerate()
    {
        put(&store, text, n as i64);
    }
    // A namespace setting is a record in the system partition `00` (one write, no
    // transaction, so the workload also runs on dynalite; a namespace no path here ends in, so
    // no put keeps a revision, which would need a transaction).
    store.set_namespace_history("audit", Some(2)).unwrap();
    put(&store, "/session-7", 1);
    // Groups with nothing left to read, though their partitions hold records. Only a
    // tombstone (and the change log) is stored:
    put(&store, "/gone-1", 1);
    store.delete(&path("/gone-1"), None).unwrap();
    // Tombstones, revisions and the change log, after a whole group moved away (the move
    // creates `/moved-2`, which is listed):
    for text in ["/moved-1/a-1", "/moved-1/a-2"] {
        let history = PutOptions {
            history: true,
            ..PutOptions::default()
        };
        store.put(&path(text), value(1), history).unwrap();
    }
    store
        .move_subtree(&path("/moved-1"), &path("/moved-2"), &mut |_| {})
        .unwrap();
    // An item whose expiry has passed, not yet swept:
    let expiring = PutOptions {
        expires: Some(Expiry::After(Duration::from_secs(5))),
        ..PutOptions::default()
    };
    store
        .put(&path("/lapsed-1/a-1"), value(1), expiring)
        .unwrap();
    clock.advance(Duration::from_secs(10));
    // More tombstones at each end than one probe reads, around the group's one live item:
    for i in 0..12 {
        for end in ["a", "z"] {
            put(&store, &format!("/sparse-1/{end}-{i}"), i);
            store
                .delete(&path(&format!("/sparse-1/{end}-{i}")), None)
                .unwrap();
        }
    }
    put(&store, "/sparse-1/m-1", 1);
    // ... and a group of tombstones only, as long.
    for i in 0..20 {
        put(&store, &format!("/sparse-2/a-{i}"), i);
        store
            .delete(&path(&format!("/sparse-2/a-{i}")), None)
            .unwrap();
    }

    let expected = [
        "/moved-2",
        "/orders-abc",
        "/season-2026-spring",
        "/session-7",
        "/sparse-1",
        "/user-2",
        "/user-10",
        "/user-!30",
        "/user-!3",
        "/user-%01",
    ];
    for limit in [1, 2, 3, 9, 10, MAX_GROUPS_LIMIT] {
        let mut listed = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let page = store.groups(limit, token.as_deref()).unwrap();
            assert!(page.groups.len() <= limit, "page over its limit");
            listed.extend(page.groups.iter().map(ToString::to_string));
            match page.next_page_token {
                Some(t) => {
                    assert_eq!(
                        page.groups.len(),
                        limit,
                        "a page followed by a token is full"
                    );
                    token = Some(t);
                }
                None => break,
            }
            assert!(
                listed.len() <= expected.len(),
                "paging never ends at limit {limit}"
            );
        }
        assert_eq!(listed, expected, "limit {limit}");
    }

    assert!(matches!(
        store.groups(0, None),
        Err(Error::InvalidRequest(_))
    ));
    assert!(matches!(
        store.groups(MAX_GROUPS_LIMIT + 1, None),
        Err(Error::InvalidRequest(_))
    ));
    assert!(matches!(
        store.groups(10, Some("not a token!")),
        Err(Error::InvalidPageToken(_))
    ));
    // A listing's token is not a groups token.
    let mut request = pathdb_store::ListRequest::new(path("/user-2"));
    request.limit = 1;
    let listing_token = store.list(&request).unwrap().next_page_token.unwrap();
    assert!(matches!(
        store.groups(10, Some(&listing_token)),
        Err(Error::InvalidPageToken(_))
    ));
}
