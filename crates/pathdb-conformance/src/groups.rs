//! Listing groups: key order across types, paging, the system partition, deleted groups.

use super::{Harness, open_manual, path, put};
use pathdb_store::{Error, MAX_GROUPS_LIMIT};

/// [`pathdb_store::Store::groups`] lists every group once, in typed key order, page by page; never the
/// system partition (written here by a namespace setting); and still lists a group whose only item was
/// deleted (its tombstone and history remain: see `groups.rs`). A group is listed once however
/// many items it holds, and a bad limit or token is refused.
pub fn groups_in_key_order<H: Harness>(harness: &H) {
    let (_clock, store) = open_manual(harness);
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
    // A group whose only item is deleted: only its tombstone is stored.
    put(&store, "/gone-1", 1);
    store.delete(&path("/gone-1"), None).unwrap();

    let expected = [
        "/gone-1",
        "/orders-abc",
        "/season-2026-spring",
        "/session-7",
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
