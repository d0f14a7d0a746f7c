//! The S3 target against an S3-compatible server: moto, which `scripts/dynamodb-local.sh start
//! moto` starts (it serves S3 on the same port as DynamoDB). Set `PATHDB_S3_ENDPOINT` (e.g.
//! `http://127.0.0.1:8000`); without it every test here returns at once, saying so (the tests
//! need no outside resources unless asked).

use pathdb_s3::{MIN_PART_SIZE, S3Options, S3Target};
use pathdb_store::backup::ArchiveTarget;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The configured endpoint, or `None` (and a note on stderr) when unset.
fn endpoint() -> Option<String> {
    let Ok(endpoint) = std::env::var("PATHDB_S3_ENDPOINT") else {
        eprintln!(
            "skipped: PATHDB_S3_ENDPOINT is not set (scripts/dynamodb-local.sh start moto starts \
             a server)"
        );
        return None;
    };
    dummy_credentials();
    Some(endpoint)
}

/// Local servers still want credentials to be present.
fn dummy_credentials() {
    for (k, v) in [
        ("AWS_ACCESS_KEY_ID", "pathdb-test"),
        ("AWS_SECRET_ACCESS_KEY", "pathdb-test"),
    ] {
        if std::env::var_os(k).is_none() {
            // SAFETY: every test sets the same values before it starts a client, so a race is
            // between identical writes.
            unsafe { std::env::set_var(k, v) };
        }
    }
}

fn options(endpoint: &str) -> S3Options {
    S3Options::default()
        .with_endpoint(endpoint)
        .with_region("us-east-1")
}

/// A new, empty bucket, so tests are independent.
fn bucket(endpoint: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "pathdb-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(aws_config::Region::new("us-east-1"))
            .load()
            .await;
        let config = aws_sdk_s3::config::Builder::from(&config)
            .force_path_style(true)
            .build();
        aws_sdk_s3::Client::from_conf(config)
            .create_bucket()
            .bucket(&name)
            .send()
            .await
            .map_err(aws_sdk_s3::error::DisplayErrorContext)
            .expect("bucket created");
    });
    name
}

fn target(url: &str, endpoint: &str) -> S3Target {
    S3Target::connect(url, options(endpoint)).expect("target")
}

/// Bytes that do not repeat with any short period, so a misplaced part would show.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn put_get_list_delete() {
    let Some(endpoint) = endpoint() else { return };
    let bucket = bucket(&endpoint);
    let url = format!("s3://{bucket}/db/one");
    let target = target(&format!("{url}/"), &endpoint);
    assert_eq!(target.describe(), url);
    target.check().expect("the bucket is there");

    target
        .put("pathdb-archive.json", b"{\"format\":1}\n")
        .expect("put");
    target.put("segments/0002.pdbseg", b"second").expect("put");
    target.put("segments/0001.pdbseg", b"first").expect("put");
    target
        .put("base/0001.pdbbak", b"")
        .expect("an empty object");
    // Replacing is allowed.
    target.put("segments/0002.pdbseg", b"2nd").expect("put");

    assert_eq!(target.get("segments/0001.pdbseg").expect("get"), b"first");
    assert_eq!(target.get("segments/0002.pdbseg").expect("get"), b"2nd");
    assert_eq!(target.get("base/0001.pdbbak").expect("get"), b"");
    assert_eq!(
        target.list("segments/").expect("list"),
        [
            ("segments/0001.pdbseg".to_string(), 5),
            ("segments/0002.pdbseg".to_string(), 3)
        ]
    );
    assert_eq!(
        target.list("base/").expect("list"),
        [("base/0001.pdbbak".to_string(), 0)]
    );
    assert!(target.list("nothing/").expect("list").is_empty());

    // A sibling prefix and the bucket's root are other archives.
    let sibling = self::target(&format!("s3://{bucket}/db/one-more"), &endpoint);
    sibling.put("segments/0009.pdbseg", b"other").expect("put");
    assert_eq!(target.list("segments/").expect("list").len(), 2);
    let root = self::target(&format!("s3://{bucket}"), &endpoint);
    assert_eq!(root.describe(), format!("s3://{bucket}"));
    assert_eq!(
        root.list("db/one/segments/").expect("list"),
        [
            ("db/one/segments/0001.pdbseg".to_string(), 5),
            ("db/one/segments/0002.pdbseg".to_string(), 3)
        ]
    );
    assert_eq!(
        root.get("db/one/segments/0001.pdbseg").expect("get"),
        b"first"
    );

    let missing = target.get("segments/0003.pdbseg").expect_err("missing");
    assert!(missing.not_found, "{missing}");
    assert_eq!(missing.name, "segments/0003.pdbseg");
    assert_eq!(missing.target, url);
    assert!(missing.to_string().contains("GetObject"), "{missing}");

    target.delete("segments/0001.pdbseg").expect("delete");
    let gone = target.get("segments/0001.pdbseg").expect_err("deleted");
    assert!(gone.not_found, "{gone}");
    target
        .delete("segments/0001.pdbseg")
        .expect("deleting a missing object is no error");
    assert_eq!(
        target.list("segments/").expect("list"),
        [("segments/0002.pdbseg".to_string(), 3)]
    );
}

#[test]
fn list_pages() {
    let Some(endpoint) = endpoint() else { return };
    let bucket = bucket(&endpoint);
    let target = target(&format!("s3://{bucket}/paged"), &endpoint).with_list_page_size(2);
    let mut names = Vec::new();
    // Put out of order: the listing sorts.
    for n in [4, 0, 6, 2, 1, 5, 3] {
        let name = format!("segments/{n:020}.pdbseg");
        target.put(&name, &vec![b'x'; n]).expect("put");
        names.push((name, n as u64));
    }
    target.put("base/1.pdbbak", b"base").expect("put");
    names.sort();
    assert_eq!(target.list("segments/").expect("list"), names);
    let all = target.list("").expect("list");
    assert_eq!(all.len(), 8);
    assert_eq!(all[0], ("base/1.pdbbak".to_string(), 4));
}

#[test]
fn files_round_trip() {
    let Some(endpoint) = endpoint() else { return };
    let bucket = bucket(&endpoint);
    let dir = tempfile::tempdir().expect("temporary directory");
    let target = target(&format!("s3://{bucket}/files"), &endpoint).with_part_size(MIN_PART_SIZE);

    // One PutObject.
    let small = pattern(100_000, 1);
    std::fs::write(dir.path().join("small"), &small).expect("write");
    target
        .put_file("base/small.pdbbak", &dir.path().join("small"))
        .expect("put_file");
    target
        .get_file("base/small.pdbbak", &dir.path().join("small.back"))
        .expect("get_file");
    assert!(std::fs::read(dir.path().join("small.back")).expect("read") == small);

    // A multipart upload: two full parts and a short one.
    let size = 2 * MIN_PART_SIZE as usize + 12_345;
    let large = pattern(size, 2);
    std::fs::write(dir.path().join("large"), &large).expect("write");
    target
        .put_file("base/large.pdbbak", &dir.path().join("large"))
        .expect("multipart put_file");
    assert_eq!(
        target.list("base/").expect("list"),
        [
            ("base/large.pdbbak".to_string(), size as u64),
            ("base/small.pdbbak".to_string(), small.len() as u64)
        ]
    );
    target
        .get_file("base/large.pdbbak", &dir.path().join("large.back"))
        .expect("get_file");
    assert!(std::fs::read(dir.path().join("large.back")).expect("read") == large);
    assert!(target.get("base/large.pdbbak").expect("get") == large);

    // A missing object leaves no file behind.
    let missing = dir.path().join("missing");
    let e = target
        .get_file("base/missing.pdbbak", &missing)
        .expect_err("missing");
    assert!(e.not_found, "{e}");
    assert!(!missing.exists());

    // A missing source file is an error naming the object.
    let e = target
        .put_file("base/none.pdbbak", &dir.path().join("none"))
        .expect_err("no such file");
    assert!(!e.not_found && e.name == "base/none.pdbbak", "{e}");
}

/// The server may call the target from `spawn_blocking`, and the archiver from plain threads,
/// several at once.
#[test]
fn from_blocking_threads() {
    let Some(endpoint) = endpoint() else { return };
    let bucket = bucket(&endpoint);
    let target = Arc::new(target(&format!("s3://{bucket}/threads"), &endpoint));
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    server.block_on(async {
        let tasks: Vec<_> = (0..4)
            .map(|n| {
                let target = Arc::clone(&target);
                tokio::task::spawn_blocking(move || {
                    let name = format!("segments/{n}.pdbseg");
                    target.put(&name, name.as_bytes()).expect("put");
                    assert_eq!(target.get(&name).expect("get"), name.as_bytes());
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("task");
        }
    });
    let threads: Vec<_> = (4..8)
        .map(|n| {
            let target = Arc::clone(&target);
            std::thread::spawn(move || {
                target
                    .put(&format!("segments/{n}.pdbseg"), b"x")
                    .expect("put");
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("thread");
    }
    assert_eq!(target.list("segments/").expect("list").len(), 8);
    // Dropping the target inside the server's runtime does not panic.
    server.block_on(async move { drop(target) });
}

#[test]
fn errors_say_what_happened() {
    let Some(endpoint) = endpoint() else { return };
    let target = target("s3://pathdb-no-such-bucket/db", &endpoint);
    let e = target
        .put("segments/1.pdbseg", b"x")
        .expect_err("no bucket");
    let text = e.to_string();
    assert!(!e.not_found, "{text}");
    assert!(text.starts_with("s3://pathdb-no-such-bucket/db: PutObject segments/1.pdbseg: "));
    assert!(text.contains("NoSuchBucket"), "{text}");
    let e = target.list("segments/").expect_err("no bucket");
    assert!(e.to_string().contains("ListObjectsV2"), "{e}");
    assert!(target.check().is_err());

    // A port nobody listens on fails, and soon.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address").port()
    };
    let dead = self::target("s3://bucket/db", &format!("http://127.0.0.1:{closed}"));
    let started = Instant::now();
    let e = dead.get("pathdb-archive.json").expect_err("nobody there");
    assert!(!e.not_found, "{e}");
    assert!(started.elapsed() < Duration::from_secs(60), "{e}");
}
