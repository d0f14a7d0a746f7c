//! `pathdb bench http` against a `pathdb serve` on a free port.

use crate::{Served, ok};

/// The value after `name:` on its own line of the report.
fn field<'a>(report: &'a str, name: &str) -> &'a str {
    report
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {name}: line in\n{report}"))
        .trim()
}

#[test]
fn bench_http_reports_requests_per_second_and_latency() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Served::file(&dir.path().join("bench.pathdb"));
    let common = [
        "--url",
        &server.url,
        "--concurrency",
        "4",
        "--keys",
        "200",
        "--groups",
        "4",
    ];

    let mut args = vec!["bench", "http", "--duration", "1"];
    args.extend_from_slice(&common);
    let report = ok(&args);
    assert!(field(&report, "target").starts_with("pathdb at http://127.0.0.1:"));
    assert!(
        field(&report, "preload").starts_with("200 puts in "),
        "{report}"
    );
    let requests: u64 = field(&report, "requests").parse().expect("a count");
    let per_second: f64 = field(&report, "requests/s").parse().expect("a rate");
    assert!(requests > 0 && per_second > 0.0, "{report}");
    assert_eq!(field(&report, "errors"), "0", "{report}");
    let header = report
        .lines()
        .find(|l| l.starts_with("op "))
        .unwrap_or_else(|| panic!("no table in\n{report}"));
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        [
            "op", "requests", "errors", "req/s", "p50", "ms", "p99", "ms", "p999", "ms", "max",
            "ms"
        ]
    );
    let all: Vec<&str> = report
        .lines()
        .find(|l| l.starts_with("all "))
        .expect("an all row")
        .split_whitespace()
        .collect();
    assert_eq!(all.len(), 8, "{all:?}");
    let [p50, p99, p999]: [f64; 3] = [4, 5, 6].map(|i| all[i].parse().expect("milliseconds"));
    assert!(0.0 < p50 && p50 <= p99 && p99 <= p999, "{all:?}");

    // JSON: the same figures, per operation too; the items are already there.
    let mut args = vec![
        "--json",
        "bench",
        "http",
        "--duration",
        "0.5",
        "--no-preload",
    ];
    args.extend_from_slice(&common);
    args.extend_from_slice(&["--mix", "get=1,list=1"]);
    let json: serde_json::Value = serde_json::from_str(&ok(&args)).expect("one JSON object");
    assert_eq!(json["target"], "pathdb");
    assert_eq!(json["errors"], 0, "{json}");
    assert!(json["requests_per_s"].as_f64().expect("a rate") > 0.0);
    assert!(json["latency_ms"]["p999"].as_f64().expect("p999") > 0.0);
    assert!(json["ops"]["get"]["requests"].as_u64().expect("gets") > 0);
    assert!(json["ops"]["list"]["requests"].as_u64().expect("lists") > 0);
    assert_eq!(json["ops"]["put"]["requests"], 0);
    assert!(json["ops"]["put"]["latency_ms"].is_null());
}
