//! Filters and projections (docs/filters.md) from the command line: `ls --filter/--fields/
//! --max-scan`, `count`, `get --fields`, `watch --filter` and invalid filters, each the same on a
//! local file and through `pathdb serve`.

use crate::server::normalize;
use crate::{Served, json_lines, ok, pathdb};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// `--db FILE` or `--server URL`.
fn target(db: &Path) -> Vec<String> {
    vec!["--db".into(), db.to_str().expect("utf-8 temp path").into()]
}

fn remote(server: &Served) -> Vec<String> {
    vec!["--server".into(), server.url.clone()]
}

/// `target` followed by `args`.
fn with<'a>(target: &'a [String], args: &[&'a str]) -> Vec<&'a str> {
    target
        .iter()
        .map(String::as_str)
        .chain(args.iter().copied())
        .collect()
}

/// `/shop-1/order-1` to `order-12` (total 25 to 300, every third closed) and
/// `/shop-1/order-2/line-1` (total 1000): 13 items in all.
fn put_orders(target: &[String]) {
    for i in 1..=12 {
        let status = if i % 3 == 0 { "closed" } else { "open" };
        let value = json!({"total": i * 25, "status": status}).to_string();
        ok(&with(
            target,
            &["put", &format!("/shop-1/order-{i}"), &value],
        ));
    }
    let line = json!({"total": 1000, "status": "open"}).to_string();
    ok(&with(target, &["put", "/shop-1/order-2/line-1", &line]));
}

/// The paths of `ls --filter 'value.total > 100'` in key order.
fn over_100() -> Vec<String> {
    let mut paths = vec!["/shop-1/order-2/line-1".to_owned()];
    paths.extend((5..=12).map(|i| format!("/shop-1/order-{i}")));
    paths
}

/// Runs `pathdb --json ls ...` page by page (following the token it prints on stderr): the
/// paths of each page.
fn pages(target: &[String], ls: &[&str]) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut args = with(target, &["--json", "ls"]);
        args.extend_from_slice(ls);
        if let Some(t) = &token {
            args.extend_from_slice(&["--page-token", t]);
        }
        let out = pathdb(&args);
        let stderr = String::from_utf8(out.stderr).expect("utf-8");
        assert!(out.status.success(), "{args:?}: {stderr}");
        let stdout = String::from_utf8(out.stdout).expect("utf-8");
        pages.push(
            json_lines(&stdout)
                .iter()
                .map(|item| item["path"].as_str().expect("a path").to_owned())
                .collect(),
        );
        if stderr.trim().is_empty() {
            return pages;
        }
        let line: Value = serde_json::from_str(stderr.trim()).expect("one JSON line on stderr");
        token = Some(
            line["next_page_token"]
                .as_str()
                .expect("a token")
                .to_owned(),
        );
        assert!(pages.len() < 100, "the pages never end");
    }
}

/// Runs `args` after `--db` and after `--server`: both succeed with the same output (times and
/// tokens masked), which is returned.
fn same(local: &[String], server: &[String], args: &[&str]) -> String {
    let (here, there) = (ok(&with(local, args)), ok(&with(server, args)));
    assert_eq!(normalize(&there), normalize(&here), "pathdb {args:?}");
    here
}

#[test]
fn filtered_listings_are_the_same_on_a_file_and_through_a_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = Served::file(&dir.path().join("served.pathdb"));
    let local = target(&dir.path().join("local.pathdb"));
    let server = remote(&served);
    for t in [&local, &server] {
        put_orders(t);
    }
    let filter = "value.total > 100";
    for t in [&local, &server] {
        // Every page, in the listing's order, however small the pages and the scans.
        let all = pages(t, &["/shop-1", "--filter", filter, "--all"]);
        assert_eq!(all, [over_100()], "{t:?}");
        for (limit, max_scan) in [
            ("2", "2"),
            ("2", "3"),
            ("1", "1"),
            ("3", "5"),
            ("1000", "1"),
        ] {
            let paged = pages(
                t,
                &[
                    "/shop-1",
                    "--filter",
                    filter,
                    "--limit",
                    limit,
                    "--max-scan",
                    max_scan,
                ],
            );
            assert_eq!(paged.concat(), over_100(), "{t:?} {limit} {max_scan}");
            // No page over its limit; reading 2 items a page, the first (order-1, order-2)
            // matches none and still has a next one.
            assert!(
                paged.iter().all(|p| p.len() <= limit.parse().expect("n")),
                "{paged:?}"
            );
            if max_scan == "2" {
                assert!(paged[0].is_empty(), "{paged:?}");
            }
        }
        // --all follows the empty pages too.
        let all = pages(
            t,
            &[
                "/shop-1",
                "--filter",
                filter,
                "--all",
                "--limit",
                "2",
                "--max-scan",
                "2",
            ],
        );
        assert_eq!(all.concat(), over_100(), "{t:?}");
        let mut reversed = over_100();
        reversed.reverse();
        let all = pages(
            t,
            &["/shop-1", "--filter", filter, "--reverse", "--limit", "4"],
        );
        assert_eq!(all.concat(), reversed, "{t:?}");
        // Direct children: the line below order-2 is not one.
        let children = pages(t, &["/shop-1", "--filter", filter, "--children", "--all"]);
        assert_eq!(children.concat(), over_100()[1..], "{t:?}");
    }
    // The table says how many items it read to find its rows, over all pages.
    let table = same(
        &local,
        &server,
        &[
            "ls",
            "/shop-1",
            "--filter",
            filter,
            "--all",
            "--limit",
            "2",
            "--max-scan",
            "3",
        ],
    );
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("PATH "), "{table}");
    assert_eq!(lines.len(), 1 + 9 + 1, "{table}");
    assert_eq!(lines[10], "9 matched, scanned 13", "{table}");
    // One page: its rows, its scan, the next page.
    let table = same(
        &local,
        &server,
        &["ls", "/shop-1", "--filter", filter, "--max-scan", "3"],
    );
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    assert!(lines[1].starts_with("/shop-1/order-2/line-1 "), "{table}");
    assert_eq!(lines[2], "1 matched, scanned 3", "{table}");
    assert!(lines[3].starts_with("next page: --page-token "), "{table}");
    // An unfiltered table has no such line.
    let table = same(&local, &server, &["ls", "/shop-1/order-2"]);
    assert!(!table.contains("scanned"), "{table}");

    // --fields keeps only those members, in a table and in JSON lines.
    let projected = same(
        &local,
        &server,
        &[
            "--json",
            "ls",
            "/shop-1",
            "--filter",
            r#"value.total > 250 && value.status != "nothing""#,
            "--fields",
            "status,missing",
        ],
    );
    let items = json_lines(&projected);
    let shown: Vec<(&str, &Value)> = items
        .iter()
        .map(|i| (i["path"].as_str().expect("path"), &i["value"]))
        .collect();
    assert_eq!(
        shown,
        [
            ("/shop-1/order-2/line-1", &json!({"status": "open"})),
            ("/shop-1/order-11", &json!({"status": "open"})),
            ("/shop-1/order-12", &json!({"status": "closed"})),
        ]
    );
    assert!(items.iter().all(|i| i["version"] == 1), "{projected}");
    let table = same(
        &local,
        &server,
        &["ls", "/shop-1", "--fields", "total", "--limit", "1"],
    );
    assert!(table.contains(r#"{"total":25}"#), "{table}");
    assert!(!table.contains("status"), "{table}");
    // `ls /` lists groups: a filter means nothing there.
    for t in [&local, &server] {
        let stderr = crate::fails(&with(t, &["ls", "/", "--filter", filter]));
        assert!(stderr.contains("ls / takes only"), "{stderr}");
        let stderr = crate::fails(&with(t, &["ls", "/shop-1", "--max-scan", "0"]));
        assert!(stderr.contains("--max-scan"), "{stderr}");
        let stderr = crate::fails(&with(t, &["ls", "/shop-1", "--fields", "a,,b"]));
        assert!(stderr.contains("fields"), "{stderr}");
    }
}

#[test]
fn count_and_get_fields_are_the_same_on_a_file_and_through_a_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = Served::file(&dir.path().join("served.pathdb"));
    let local = target(&dir.path().join("local.pathdb"));
    let server = remote(&served);
    for t in [&local, &server] {
        put_orders(t);
    }
    let open = r#"value.status == "open""#;
    let counts: &[(&[&str], &str)] = &[
        (&["count", "/shop-1"], "13"),
        (&["count", "/shop-1/"], "13"),
        (&["count", "/shop-1/order-2"], "2"),
        (&["count", "/shop-1", "--filter", open], "9"),
        // Counted 4 items a request, added up.
        (
            &["count", "/shop-1", "--filter", open, "--max-scan", "4"],
            "9",
        ),
        (&["count", "/shop-1", "--max-scan", "1"], "13"),
        (&["count", "/shop-1", "--children"], "12"),
        (
            &[
                "count",
                "/shop-1",
                "--children",
                "--filter",
                "value.total > 100",
            ],
            "8",
        ),
        (&["count", "/shop-1", "--gt", "/shop-1/order-10"], "2"),
        (
            &[
                "count",
                "/shop-1",
                "--gte",
                "/shop-1/order-2",
                "--lt",
                "/shop-1/order-4",
                "--filter",
                "value.total >= 50",
            ],
            "3",
        ),
        (&["count", "/shop-9"], "0"),
    ];
    for (args, expected) in counts {
        assert_eq!(same(&local, &server, args).trim(), *expected, "{args:?}");
    }
    let counted = same(
        &local,
        &server,
        &[
            "--json",
            "count",
            "/shop-1",
            "--filter",
            open,
            "--max-scan",
            "5",
        ],
    );
    assert_eq!(
        serde_json::from_str::<Value>(&counted).expect("JSON"),
        json!({"count": 9, "scanned": 13})
    );
    for t in [&local, &server] {
        let stderr = crate::fails(&with(t, &["count", "/"]));
        assert!(stderr.contains("count counts a subtree"), "{stderr}");
        crate::fails(&with(t, &["count", "/shop-1", "--max-scan", "100001"]));
    }

    // get --fields: the value with only those members, the item's metadata as it is.
    let got = same(
        &local,
        &server,
        &[
            "--json",
            "get",
            "/shop-1/order-3",
            "--fields",
            "total,missing",
        ],
    );
    let got: Value = serde_json::from_str(&got).expect("JSON");
    assert_eq!(got["value"], json!({"total": 75}));
    assert_eq!(got["path"], "/shop-1/order-3");
    assert_eq!(got["version"], 1);
    let table = same(
        &local,
        &server,
        &["get", "/shop-1/order-3", "--fields", "status"],
    );
    assert!(table.contains(r#"{"status":"closed"}"#), "{table}");
    assert!(!table.contains("total"), "{table}");
    for t in [&local, &server] {
        crate::fails_with(
            1,
            &with(t, &["get", "/shop-1/order-99", "--fields", "total"]),
        );
    }
}

/// The first lines of an invalid filter's error: the message, the filter, a caret under the
/// position the message names.
fn assert_points_at(stderr: &str, filter: &str, reason: &str) -> usize {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    let rest = lines[0]
        .strip_prefix("error: invalid filter at character ")
        .unwrap_or_else(|| panic!("{stderr}"));
    let (position, why) = rest.split_once(": ").expect("a reason");
    assert!(why.contains(reason), "{stderr}");
    let position: usize = position.parse().expect("a position");
    assert_eq!(lines[1], format!("  {filter}"), "{stderr}");
    assert_eq!(
        lines[2],
        format!("{}^", " ".repeat(2 + position)),
        "{stderr}"
    );
    position
}

#[test]
fn an_invalid_filter_is_shown_with_a_caret_under_its_position() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = Served::file(&dir.path().join("served.pathdb"));
    let local = target(&dir.path().join("local.pathdb"));
    let server = remote(&served);
    for t in [&local, &server] {
        put_orders(t);
    }
    let cases: &[(&str, &str, Option<usize>)] = &[
        ("value.total > > 100", "", None),
        ("total > 100", "unknown name `total`", Some(0)),
        (
            "value.total > 100 && ids.shop == 1 && nope",
            "unknown name `nope`",
            Some(38),
        ),
        ("value.total >", "", None),
    ];
    for (filter, reason, at) in cases {
        let commands: [&[&str]; 3] = [
            &["ls", "/shop-1", "--filter", filter],
            &["count", "/shop-1", "--filter", filter],
            &["watch", "/shop-1", "--filter", filter],
        ];
        for command in commands {
            let here = crate::fails(&with(&local, command));
            let there = crate::fails(&with(&server, command));
            assert_eq!(here, there, "{command:?}");
            let position = assert_points_at(&here, filter, reason);
            if let Some(at) = at {
                assert_eq!(position, *at, "{here}");
            }
            assert!(position <= filter.chars().count(), "{here}");
            // --json: one object, with the server's code and the position.
            for t in [&local, &server] {
                let mut args = with(t, &["--json"]);
                args.extend_from_slice(command);
                let stderr = crate::fails(&args);
                let error: Value = serde_json::from_str(stderr.trim()).expect("one JSON line");
                assert_eq!(error["error"]["code"], "invalid_filter", "{stderr}");
                assert_eq!(error["error"]["position"], position, "{stderr}");
                assert_eq!(error["error"]["exit"], 2, "{stderr}");
            }
        }
    }
    // The server refuses an invalid filter in its own words, which the CLI shows the same way
    // (a filter it compiled itself never gets there).
    let (status, body) = crate::server::http(
        served.addr(),
        "GET",
        "/v1/list/shop-1?filter=value.total%20%3E%20%3E%20100",
        "",
    )
    .expect("the server answers");
    assert_eq!(status, 400, "{body}");
    let answer: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(answer["error"]["code"], "invalid_filter", "{body}");
    let here = crate::fails(&with(
        &local,
        &["ls", "/shop-1", "--filter", "value.total > > 100"],
    ));
    assert!(
        here.starts_with(&format!(
            "error: {}",
            answer["error"]["message"].as_str().expect("message")
        )),
        "{here} / {body}"
    );
}

/// A `pathdb watch` running in the background, its stdout read line by line.
struct Watch {
    child: Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Watch {
    fn start(args: &[&str]) -> Watch {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pathdb"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("watch starts");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        // It takes its starting position when it starts; give it a moment.
        std::thread::sleep(Duration::from_millis(500));
        Watch { child, lines }
    }

    fn next(&mut self) -> String {
        self.lines
            .next()
            .expect("a line before the watch ends")
            .expect("utf-8")
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The writes the feed tests follow, under `/shop-2` (after a first put outside the filter).
fn feed_writes(target: &[String]) {
    let writes: &[&[&str]] = &[
        // Matches neither before nor after: not in the filtered feed.
        &["put", "/shop-2/order-1", r#"{"total": 50}"#],
        // Enters.
        &["put", "/shop-2/order-1", r#"{"total": 150}"#],
        // Changes in it.
        &["put", "/shop-2/order-1", r#"{"total": 200}"#],
        // Leaves: changed so that it no longer matches.
        &["put", "/shop-2/order-1", r#"{"total": 20}"#],
        &["put", "/shop-2/order-2", r#"{"total": 500}"#],
        // Leaves: deleted (a delete names the version deleted).
        &["rm", "/shop-2/order-2"],
        // Deleted, but it had left already.
        &["rm", "/shop-2/order-1"],
        &["put", "/shop-2/order-3", r#"{"total": 101}"#],
    ];
    for args in writes {
        ok(&with(target, args));
    }
}

/// What `watch /shop-2 --filter 'value.total > 100'` prints for [`feed_writes`].
const FEED_TEXT: [&str; 6] = [
    r#"put /shop-2/order-1 v2 {"total":150}"#,
    r#"put /shop-2/order-1 v3 {"total":200}"#,
    "left /shop-2/order-1 v4",
    r#"put /shop-2/order-2 v1 {"total":500}"#,
    "left /shop-2/order-2 v1",
    r#"put /shop-2/order-3 v1 {"total":101}"#,
];

/// The same with --json, without the tokens and times.
fn feed_json() -> Vec<Value> {
    let put = |path: &str, version: u64, total: u64| {
        json!({"op": "put", "item": {"path": path, "version": version, "value": {"total": total},
            "expires_at": null}})
    };
    let left = |path: &str, version: u64| json!({"op": "delete", "path": path, "version": version, "left": true});
    vec![
        put("/shop-2/order-1", 2, 150),
        put("/shop-2/order-1", 3, 200),
        left("/shop-2/order-1", 4),
        put("/shop-2/order-2", 1, 500),
        left("/shop-2/order-2", 1),
        put("/shop-2/order-3", 1, 101),
    ]
}

/// A JSON change line without what differs between runs (its token and the item's times).
fn without_tokens(line: &str) -> Value {
    let mut change: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
    let token = change
        .as_object_mut()
        .expect("an object")
        .remove("token")
        .expect("each change has its token");
    assert!(token.is_string(), "{line}");
    if let Some(item) = change.get_mut("item").and_then(Value::as_object_mut) {
        assert!(
            item.remove("created_at").is_some_and(|t| t.is_i64()),
            "{line}"
        );
        assert!(
            item.remove("modified_at").is_some_and(|t| t.is_i64()),
            "{line}"
        );
    }
    change
}

/// A token from which the feed of `/shop-2` follows: a put, seen by an unfiltered watch through
/// `url`.
fn token_after_a_put(url: &str) -> String {
    let mut watch = Watch::start(&[
        "--server", url, "--json", "watch", "/shop-2", "--count", "1",
    ]);
    ok(&["--server", url, "put", "/shop-2/start-1", r#"{"total": 1}"#]);
    let line: Value = serde_json::from_str(&watch.next()).expect("a JSON line");
    assert_eq!(line["item"]["path"], "/shop-2/start-1", "{line}");
    line["token"].as_str().expect("a token").to_owned()
}

#[test]
fn watch_follows_a_filter_entering_changing_and_leaving() {
    let dir = tempfile::tempdir().expect("tempdir");
    let filter = "value.total > 100";

    // Through a server: a watch that runs while the writes happen.
    let served = Served::file(&dir.path().join("served.pathdb"));
    let server = remote(&served);
    let since = token_after_a_put(&served.url);
    let mut live = Watch::start(&with(
        &server,
        &[
            "--json", "watch", "/shop-2", "--filter", filter, "--count", "6",
        ],
    ));
    feed_writes(&server);
    let followed: Vec<Value> = (0..6).map(|_| without_tokens(&live.next())).collect();
    assert_eq!(followed, feed_json());
    let status = live.child.wait().expect("the watch ends after --count");
    assert!(status.success());
    // The same changes again from a token, as text and as JSON.
    let text = ok(&with(
        &server,
        &[
            "watch", "/shop-2", "--filter", filter, "--since", &since, "--count", "6",
        ],
    ));
    assert_eq!(text.lines().collect::<Vec<_>>(), FEED_TEXT);
    let lines = ok(&with(
        &server,
        &[
            "--json", "watch", "/shop-2", "--filter", filter, "--since", &since, "--count", "6",
        ],
    ));
    let lines: Vec<Value> = lines.lines().map(without_tokens).collect();
    assert_eq!(lines, feed_json());
    // Unfiltered, the same writes are plain puts and deletes, none of them a leave.
    let all = ok(&with(
        &server,
        &["watch", "/shop-2", "--since", &since, "--count", "8"],
    ));
    assert!(all.contains("delete /shop-2/order-2 v1"), "{all}");
    assert!(!all.contains("left"), "{all}");
    drop(served);

    // On a file: the same writes, then the filtered feed from before them (the token comes from
    // a server on the file, which then stops: a local watch holds the file).
    let file = dir.path().join("local.pathdb");
    let since = {
        let served = Served::file(&file);
        token_after_a_put(&served.url)
    };
    let local = target(&file);
    feed_writes(&local);
    let text = ok(&with(
        &local,
        &[
            "watch", "/shop-2", "--filter", filter, "--since", &since, "--count", "6",
        ],
    ));
    assert_eq!(text.lines().collect::<Vec<_>>(), FEED_TEXT);
    let lines = ok(&with(
        &local,
        &[
            "--json", "watch", "/shop-2", "--filter", filter, "--since", &since, "--count", "6",
        ],
    ));
    let lines: Vec<Value> = lines.lines().map(without_tokens).collect();
    assert_eq!(lines, feed_json());
}
