//! Rows that another tool wrote into PathDB's table: listings, groups and exports skip them,
//! with a warning and a count, and serve the PathDB items beside them.

use crate::{Dynamo, endpoint};
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use pathdb_keys::KeyPath;
use pathdb_store::{ExportStatus, Json, ListRequest, PutOptions, Store, StoreOptions};

fn path(text: &str) -> KeyPath {
    text.parse().expect("test path")
}

#[test]
fn rows_written_by_another_tool_are_skipped_not_fatal() {
    let Some((url, _)) = endpoint() else {
        eprintln!("skipped: PATHDB_DYNAMODB_ENDPOINT is not set");
        return;
    };
    let backend = Dynamo::new(url).backend();
    let client = backend.client().clone();
    let table = backend.table_name().to_owned();
    let metrics = backend.metrics();
    let store = Store::new(backend, StoreOptions::default()).expect("store");
    for p in ["/f-1/a-1", "/f-1/a-3"] {
        store
            .put(
                &path(p),
                Json::parse("1").expect("json"),
                PutOptions::default(),
            )
            .expect("put");
    }
    let group = path("/f-1").partition_key();
    let b = |bytes: &[u8]| AttributeValue::B(Blob::new(bytes));
    let n = |v: &str| AttributeValue::N(v.to_owned());
    // One row with PathDB's key shape but none of its attributes, one with its attributes but
    // a sort key that is not a key path, and one in a partition that is not a group.
    let rows = [
        vec![
            ("pk", b(b"OTHER#1")),
            ("sk", b(b"x")),
            ("name", AttributeValue::S("another tool".into())),
        ],
        vec![
            ("pk", b(&group)),
            ("sk", b(&path("/f-1/a-2").sort_key())),
            ("name", AttributeValue::S("another tool".into())),
        ],
        vec![
            ("pk", b(&group)),
            ("sk", b(b"zz not a key path")),
            ("v", n("1")),
            ("c", n("1")),
            ("m", n("1")),
            ("val", b(b"1")),
        ],
    ];
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for row in rows {
        let mut put = client.put_item().table_name(&table);
        for (name, value) in row {
            put = put.item(name, value);
        }
        runtime.block_on(put.send()).expect("foreign row written");
    }

    let listed: Vec<String> = store
        .list(&ListRequest::new(path("/f-1")))
        .expect("listing beside a foreign row")
        .items
        .iter()
        .map(|i| i.path().to_string())
        .collect();
    assert_eq!(listed, ["/f-1/a-1", "/f-1/a-3"]);
    assert!(metrics.counts().foreign >= 1, "{:?}", metrics.counts());
    let groups = store
        .groups(10, None)
        .expect("groups beside a foreign partition");
    assert_eq!(groups.groups, [path("/f-1")]);

    let mut out = Vec::new();
    let end = store.export(&mut out, &mut |_| {}).expect("export");
    assert_eq!(end.export, ExportStatus::Complete);
    // Every foreign row is counted: the two the backend cannot read (one in a partition that is
    // not a group) and the one whose key is not a key path.
    assert_eq!((end.records, end.skipped), (2, 3), "{end:?}");
    let text = String::from_utf8(out).expect("utf-8");
    assert_eq!(text.lines().count(), 3, "{text}");
}
