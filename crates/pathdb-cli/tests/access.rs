//! Access control as an attacker tries it (docs/access.md): tokens of six roles against every
//! route, alias, listing, feed, transaction operation and the console's API, on a file and (with
//! `PATHDB_DYNAMODB_ENDPOINT`) on DynamoDB; every answer searched for values the token may not
//! read. Then JWTs (each bad token a 401 with its reason, a key rotation picked up) and
//! revocation (at once on the server that revoked, within the documented bound on a second
//! server sharing the DynamoDB table).

use crate::Served;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const ADMIN: &str = "admin-secret-0123456789";
const PUBLIC: &str = "public-secret-0123456789";

/// Where the JWT test keys are (the server crate's fixtures).
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pathdb-server/tests/fixtures/jwt")
        .join(name)
}

/// A config file: an admin token, a public-read token (a role with no variables), the roles.
fn config(dir: &Path) -> PathBuf {
    let path = dir.join("pathdb.toml");
    let text = format!(
        r#"
[[tokens]]
token = "{ADMIN}"
scope = "admin"

[[tokens]]
token = "{PUBLIC}"
role = "public"

[[roles]]
name = "public"
rules = [{{ path = "/public-1/**", allow = ["read"] }}]

[[roles]]
name = "tenant"
description = "one team's items, and the doc names (an alias) to find them"
rules = [
  {{ path = "/team-{{team}}/**", allow = ["read", "write"] }},
  {{ path = "/docname-*", allow = ["read", "write"] }},
]

[[roles]]
name = "tenant-reader"
rules = [
  {{ path = "/team-{{team}}/**", allow = ["read"] }},
  {{ path = "/docname-*", allow = ["read"] }},
]

[[roles]]
name = "user"
rules = [{{ path = "/user-{{sub}}/**", allow = ["read", "write"] }}]
"#
    );
    std::fs::write(&path, text).expect("config file");
    path
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

/// One answer: its status and body text.
struct Answer {
    status: u16,
    body: String,
}

fn send(
    url: &str,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: Option<(&str, &str)>,
) -> Answer {
    let agent = agent();
    let uri = format!("{url}{path}");
    let mut request = ureq::http::Request::builder().method(method).uri(&uri);
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let response = match body {
        Some((media, text)) => {
            let request = request
                .header("Content-Type", media)
                .body(text.to_owned())
                .expect("request");
            agent.run(request)
        }
        None => agent.run(request.body(()).expect("request")),
    };
    let mut response = response.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    Answer {
        status: response.status().as_u16(),
        body: response.body_mut().read_to_string().unwrap_or_default(),
    }
}

fn json_of(answer: &Answer) -> Value {
    serde_json::from_str(&answer.body).unwrap_or_else(|_| panic!("not JSON: {}", answer.body))
}

/// Signs a JWT with `key` (a PEM file in the fixtures) and `kid`.
fn jwt(algorithm: jsonwebtoken::Algorithm, key: &str, kid: &str, claims: &Value) -> String {
    let pem = std::fs::read(fixture(key)).expect("key");
    let key = match algorithm {
        jsonwebtoken::Algorithm::ES256 => jsonwebtoken::EncodingKey::from_ec_pem(&pem),
        _ => jsonwebtoken::EncodingKey::from_rsa_pem(&pem),
    }
    .expect("a PEM key");
    let mut header = jsonwebtoken::Header::new(algorithm);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &key).expect("signs")
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

fn claims(sub: &str, role: &str) -> Value {
    json!({"sub": sub, "role": role, "iss": "https://id.example", "aud": "pathdb",
        "exp": now() + 600, "iat": now()})
}

/// The JWT flags of a server whose JWK Set is the file `jwks`.
fn jwt_flags(jwks: &Path) -> Vec<String> {
    [
        "--jwt-jwks",
        jwks.to_str().expect("utf-8"),
        "--jwt-issuer",
        "https://id.example",
        "--jwt-audience",
        "pathdb",
        "--jwt-refresh",
        "1",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// `pathdb serve` on a new file in `dir` with the [`config`] file, and JWTs signed by the keys of
/// the JWK Set file `jwks`.
fn serve_file(dir: &Path, jwks: Option<&Path>) -> Served {
    let config = config(dir);
    let db = dir.join("access.pathdb");
    let mut args = vec![
        "serve".to_owned(),
        "--addr".into(),
        "127.0.0.1:0".into(),
        "--db".into(),
        db.to_str().expect("utf-8").into(),
        "--config".into(),
        config.to_str().expect("utf-8").into(),
    ];
    if let Some(jwks) = jwks {
        args.extend(jwt_flags(jwks));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Served::start(&args)
}

/// The markers stored in values, and who may read each.
const MARKERS: [(&str, &[&str]); 5] = [
    ("MARK-T7", &["tenant", "tenant-reader", "admin"]),
    ("MARK-T8", &["admin"]),
    ("MARK-ALICE", &["user", "admin"]),
    ("MARK-BOB", &["admin"]),
    ("MARK-PUB", &["public", "admin"]),
];

/// The six principals: their role, and the token they present.
struct Principals {
    tokens: Vec<(&'static str, Option<String>)>,
}

/// The data every matrix run starts from, written by the admin.
fn seed(url: &str) {
    let put = |path: &str, value: Value| {
        let answer = send(
            url,
            Some(ADMIN),
            "PUT",
            &format!("/v1/items{path}"),
            Some(("application/json", &value.to_string())),
        );
        assert!(answer.status < 300, "{path}: {}", answer.body);
    };
    let definition = json!({"aliases": [{"path": "/docname-{name}"}]}).to_string();
    let answer = send(
        url,
        Some(ADMIN),
        "PUT",
        "/v1/namespaces/doc",
        Some(("application/json", &definition)),
    );
    assert!(answer.status < 300, "{}", answer.body);
    put("/team-7/doc-1", json!({"v": "MARK-T7"}));
    put("/team-7/doc-3", json!({"v": "MARK-T7", "name": "seven"}));
    put("/team-8/doc-1", json!({"v": "MARK-T8"}));
    put("/team-8/doc-2", json!({"v": "MARK-T8", "name": "secret8"}));
    put("/user-alice/note-1", json!({"v": "MARK-ALICE"}));
    put("/user-bob/note-1", json!({"v": "MARK-BOB"}));
    put("/public-1/doc-1", json!({"v": "MARK-PUB"}));
}

/// Issues the tokens of the matrix through the API.
fn principals(url: &str) -> Principals {
    let issue = |role: &str, vars: Value| {
        let body = json!({"role": role, "vars": vars, "description": "matrix"}).to_string();
        let answer = send(
            url,
            Some(ADMIN),
            "POST",
            "/v1/tokens",
            Some(("application/json", &body)),
        );
        assert_eq!(answer.status, 201, "{}", answer.body);
        json_of(&answer)["token"]
            .as_str()
            .expect("the secret")
            .to_owned()
    };
    Principals {
        tokens: vec![
            ("tenant", Some(issue("tenant", json!({"team": 7})))),
            (
                "tenant-reader",
                Some(issue("tenant-reader", json!({"team": "7"}))),
            ),
            (
                "user",
                Some(jwt(
                    jsonwebtoken::Algorithm::RS256,
                    "rsa-a.key.pem",
                    "rsa-a",
                    &claims("alice", "user"),
                )),
            ),
            ("public", Some(PUBLIC.to_owned())),
            ("admin", Some(ADMIN.to_owned())),
            ("none", None),
        ],
    }
}

/// One request of the matrix and the status class each principal gets, in the order of
/// [`Principals`]: tenant, tenant-reader, user, public, admin, none. `2` is any 2xx.
struct Case {
    method: &'static str,
    path: &'static str,
    body: Option<(&'static str, String)>,
    expect: [u16; 6],
}

fn case(method: &'static str, path: &'static str, expect: [u16; 6]) -> Case {
    Case {
        method,
        path,
        body: None,
        expect,
    }
}

fn with_body(
    method: &'static str,
    path: &'static str,
    media: &'static str,
    body: Value,
    expect: [u16; 6],
) -> Case {
    let text = match body {
        Value::String(text) => text,
        other => other.to_string(),
    };
    Case {
        method,
        path,
        body: Some((media, text)),
        expect,
    }
}

const JSON: &str = "application/json";

fn cases(list_token: &str) -> Vec<Case> {
    let tx = |ops: Value| json!({"ops": ops});
    vec![
        // Items, each route.
        case("GET", "/v1/items/team-7/doc-1", [2, 2, 403, 403, 2, 401]),
        case("GET", "/v1/items/team-7/doc-1?version=1", [2, 2, 403, 403, 2, 401]),
        case("GET", "/v1/items/team-8/doc-1", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/items/team-8/doc-1?version=1", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/items/user-alice/note-1", [403, 403, 2, 403, 2, 401]),
        case("GET", "/v1/items/user-bob/note-1", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/items/public-1/doc-1", [403, 403, 403, 2, 2, 401]),
        case("GET", "/v1/items/team-8/nothing-1", [403, 403, 403, 403, 404, 401]),
        // Aliases: the item's own path decides.
        case("GET", "/v1/items/docname-seven", [2, 2, 403, 403, 2, 401]),
        case("GET", "/v1/items/docname-secret8", [403, 403, 403, 403, 2, 401]),
        // A past version through an alias is the item's too.
        case("GET", "/v1/items/docname-secret8?version=1", [403, 403, 403, 403, 2, 401]),
        with_body("PATCH", "/v1/items/docname-secret8", "application/merge-patch+json", json!({"v": "stolen"}), [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/history/docname-secret8", [403, 403, 403, 403, 2, 401]),
        with_body("POST", "/v1/get", JSON, json!({"paths": ["/docname-secret8"]}), [403, 403, 403, 403, 2, 401]),
        // Many at once: the first refused path is named.
        with_body("POST", "/v1/get", JSON, json!({"paths": ["/team-7/doc-1", "/team-8/doc-1"]}), [403, 403, 403, 403, 2, 401]),
        with_body("POST", "/v1/get", JSON, json!({"paths": ["/team-7/doc-1"]}), [2, 2, 403, 403, 2, 401]),
        // Listings are refused whole, never thinned out.
        case("GET", "/v1/list/team-7", [2, 2, 403, 403, 2, 401]),
        case("GET", "/v1/list/team-7?children=true", [2, 2, 403, 403, 2, 401]),
        case("GET", "/v1/list/team-8", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/list/docname-seven", [2, 2, 403, 403, 2, 401]),
        case("GET", "/v1/list/docname-secret8", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/list/user-alice", [403, 403, 2, 403, 2, 401]),
        // Filters and counts (docs/filters.md) decide on every item they read: one the token may
        // not read refuses the request whole, even when nothing would match.
        case("GET", "/v1/list/team-7?filter=has(value.v)", [2, 2, 403, 403, 2, 401]),
        case("GET", "/v1/list/team-7?count=true&filter=has(value.v)", [2, 2, 403, 403, 2, 401]),
        case("GET", "/v1/list/team-8?filter=false", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/list/team-8?count=true", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/list/docname-seven?filter=has(value.v)", [2, 2, 403, 403, 2, 401]),
        case("GET", "/v1/list/docname-secret8?filter=false", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/list/docname-secret8?count=true", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/changes/docname-secret8?filter=false", [403, 403, 403, 403, 2, 401]),
        with_body("POST", "/v1/get?filter=false", JSON, json!({"paths": ["/docname-secret8"]}), [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/items/docname-secret8?fields=v", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/history/team-8/doc-1", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/history/team-7/doc-1", [2, 2, 403, 403, 2, 401]),
        // Feeds: only a subtree the token reads entirely.
        case("GET", "/v1/changes/team-7", [2, 2, 403, 403, 2, 401]),
        case("GET", "/v1/changes/team-8", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/changes/docname-secret8", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/changes/user-alice", [403, 403, 2, 403, 2, 401]),
        // Writes.
        with_body("PUT", "/v1/items/team-7/doc-9", JSON, json!({"v": "w"}), [2, 403, 403, 403, 2, 401]),
        with_body("PUT", "/v1/items/team-8/doc-9", JSON, json!({"v": "w"}), [403, 403, 403, 403, 2, 401]),
        with_body("PUT", "/v1/items/user-alice/note-9", JSON, json!({"v": "w"}), [403, 403, 2, 403, 2, 401]),
        with_body("PATCH", "/v1/items/team-8/doc-1", "application/merge-patch+json", json!({"x": 1}), [403, 403, 403, 403, 2, 401]),
        case("DELETE", "/v1/items/team-8/doc-9", [403, 403, 403, 403, 2, 401]),
        case("DELETE", "/v1/items/team-8/doc-77?recursive=true", [403, 403, 403, 403, 404, 401]),
        with_body("POST", "/v1/items/team-7/doc?id=uuid", JSON, json!({"v": "new"}), [2, 403, 403, 403, 2, 401]),
        with_body("POST", "/v1/items/team-8/doc?id=uuid", JSON, json!({"v": "new"}), [403, 403, 403, 403, 2, 401]),
        with_body("POST", "/v1/items/team?id=uuid", JSON, json!({"v": "new"}), [403, 403, 403, 403, 2, 401]),
        // Move and copy: read the source, write both ends.
        with_body("POST", "/v1/move", JSON, json!({"from": "/team-8/doc-1/sub-1", "to": "/team-7/stolen-1"}), [403, 403, 403, 403, 404, 401]),
        with_body("POST", "/v1/move", JSON, json!({"from": "/team-7/none-1", "to": "/team-8/moved-1"}), [403, 403, 403, 403, 404, 401]),
        with_body("POST", "/v1/copy", JSON, json!({"from": "/team-8/doc-2", "to": "/team-8/copy-1"}), [403, 403, 403, 403, 2, 401]),
        with_body("POST", "/v1/copy", JSON, json!({"from": "/team-8/doc-1", "to": "/team-7/copy-1"}), [403, 403, 403, 403, 2, 401]),
        // Transactions: every operation, checks included.
        with_body("POST", "/v1/transact", JSON, tx(json!([{"op": "put", "path": "/team-7/doc-t", "value": 1}])), [2, 403, 403, 403, 2, 401]),
        with_body("POST", "/v1/transact", JSON, tx(json!([
            {"op": "put", "path": "/team-7/doc-u", "value": 1},
            {"op": "check", "path": "/team-8/doc-1", "must_exist": true}])), [403, 403, 403, 403, 2, 401]),
        with_body("POST", "/v1/transact", JSON, tx(json!([{"op": "patch", "path": "/docname-secret8", "merge": {"v": "x"}}])), [403, 403, 403, 403, 2, 401]),
        with_body("POST", "/v1/transact", JSON, tx(json!([{"op": "check", "path": "/docname-secret8", "must_exist": true}])), [403, 403, 403, 403, 2, 401]),
        with_body("POST", "/v1/transact", JSON, tx(json!([{"op": "check_list", "prefix": "/team-8", "changes_token": list_token}])), [403, 403, 403, 403, 409, 401]),
        with_body("POST", "/v1/transact", JSON, tx(json!([{"op": "create", "path": "/team-8/doc", "id": "uuid", "value": 1}])), [403, 403, 403, 403, 2, 401]),
        // Export and import.
        case("GET", "/v1/export", [403, 403, 403, 403, 2, 401]),
        with_body("POST", "/v1/import", "application/x-ndjson", Value::String("{\"path\": \"/team-8/imp-1\", \"value\": 1}\n".into()), [403, 403, 403, 403, 2, 401]),
        with_body("POST", "/v1/import", "application/x-ndjson", Value::String("{\"path\": \"/team-7/imp-1\", \"value\": 1}\n{\"path\": \"/team-8/imp-2\", \"value\": 1}\n".into()), [403, 403, 403, 403, 2, 401]),
        // Backups: the whole database, and where its archive stands: admin only.
        case("GET", "/v1/backup", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/archive", [403, 403, 403, 403, 2, 401]),
        // What the console reads besides items.
        case("GET", "/v1/groups", [2, 2, 2, 2, 2, 401]),
        case("GET", "/v1/session", [2, 2, 2, 2, 2, 401]),
        case("GET", "/v1/keys/team-8/doc-1", [2, 2, 2, 2, 2, 401]),
        case("GET", "/v1/namespaces", [2, 2, 2, 2, 2, 401]),
        case("GET", "/v1/namespaces/doc", [2, 2, 2, 2, 2, 401]),
        case("GET", "/v1/namespaces/doc/violations", [403, 403, 403, 403, 2, 401]),
        // Kept definition versions: as public to readers as the definition.
        case("GET", "/v1/namespaces/doc/versions", [2, 2, 2, 2, 2, 401]),
        case("GET", "/v1/namespaces/doc/versions/1", [2, 2, 2, 2, 2, 401]),
        case("GET", "/ui/", [2, 2, 2, 2, 2, 2]),
        case("GET", "/metrics", [2, 2, 2, 2, 2, 401]),
        // Administration.
        with_body("PUT", "/v1/namespaces/other", JSON, json!({}), [403, 403, 403, 403, 2, 401]),
        with_body("POST", "/v1/namespaces/doc/aliases/retry", JSON, json!({"path": "/docname-{name}"}), [403, 403, 403, 403, 400, 401]),
        case("DELETE", "/v1/namespaces/other", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/roles", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/roles/tenant", [403, 403, 403, 403, 2, 401]),
        with_body("PUT", "/v1/roles/tenant", JSON, json!({"rules": [{"path": "/**", "allow": ["read", "write", "admin"]}]}), [403, 403, 403, 403, 2, 401]),
        case("DELETE", "/v1/roles/tenant", [403, 403, 403, 403, 2, 401]),
        case("GET", "/v1/tokens", [403, 403, 403, 403, 2, 401]),
        with_body("POST", "/v1/tokens", JSON, json!({"role": "admin"}), [403, 403, 403, 403, 2, 401]),
        // Last: for the admin it deletes the item behind the alias.
        case("DELETE", "/v1/items/docname-secret8", [403, 403, 403, 403, 2, 401]),
    ]
}

/// Runs the matrix against the server at `url`.
fn matrix(url: &str) {
    seed(url);
    let principals = principals(url);
    let before = send(url, Some(ADMIN), "GET", "/v1/export", None).body;
    let listed = json_of(&send(url, Some(ADMIN), "GET", "/v1/list/team-8", None));
    let list_token = listed["changes_token"]
        .as_str()
        .expect("a changes token")
        .to_owned();
    for case in cases(&list_token) {
        for ((role, token), expect) in principals.tokens.iter().zip(case.expect) {
            // The admin's writes would change what the others see: it goes last, below.
            if *role == "admin" {
                continue;
            }
            let answer = send(
                url,
                token.as_deref(),
                case.method,
                case.path,
                case.body.as_ref().map(|(m, b)| (*m, b.as_str())),
            );
            check(role, &case, expect, &answer);
        }
    }
    // A write refused for an alias never names another tenant's item: not the holder of an
    // alias it would take, not the item behind an alias path it writes.
    let tenant = principals.tokens[0].1.as_deref();
    for (method, path, body, code) in [
        (
            "PUT",
            "/v1/items/team-7/doc-5",
            json!({"name": "secret8"}),
            "alias_taken",
        ),
        (
            "PUT",
            "/v1/items/docname-secret8",
            json!({"v": 1}),
            "path_is_alias",
        ),
    ] {
        let answer = send(url, tenant, method, path, Some((JSON, &body.to_string())));
        assert_eq!(answer.status, 409, "{path}: {}", answer.body);
        assert_eq!(json_of(&answer)["error"]["code"], code, "{}", answer.body);
        assert!(
            !answer.body.contains("team-8"),
            "{path} names another tenant's item: {}",
            answer.body
        );
    }
    // A refusal through an alias names the alias, never the item behind it.
    for (method, path, body) in [
        ("GET", "/v1/items/docname-secret8", None),
        ("GET", "/v1/items/docname-secret8?version=1", None),
        ("GET", "/v1/history/docname-secret8", None),
        (
            "POST",
            "/v1/get",
            Some(json!({"paths": ["/docname-secret8"]})),
        ),
        ("PATCH", "/v1/items/docname-secret8", Some(json!({"v": 1}))),
        ("DELETE", "/v1/items/docname-secret8", None),
    ] {
        let text = body.map(|b| b.to_string());
        let media = if method == "PATCH" {
            "application/merge-patch+json"
        } else {
            JSON
        };
        let answer = send(
            url,
            tenant,
            method,
            path,
            text.as_deref().map(|t| (media, t)),
        );
        assert_eq!(answer.status, 403, "{method} {path}: {}", answer.body);
        assert!(
            !answer.body.contains("team-8"),
            "{method} {path} names the item: {}",
            answer.body
        );
    }
    // Nothing any refused request sent changed the data (the others wrote only their own).
    let after = send(url, Some(ADMIN), "GET", "/v1/export", None).body;
    let without_own = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| {
                !l.contains("/team-7/")
                    && !l.contains("/user-alice/")
                    && !l.contains("\"export\"")
                    && !l.contains("/docname-")
            })
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        without_own(&before),
        without_own(&after),
        "a refused request changed nothing"
    );
    // The admin may do all of it.
    for case in cases(&list_token) {
        let answer = send(
            url,
            Some(ADMIN),
            case.method,
            case.path,
            case.body.as_ref().map(|(m, b)| (*m, b.as_str())),
        );
        check("admin", &case, case.expect[4], &answer);
    }
}

/// Asserts an answer's status class, its error shape, and that it shows no value the role
/// may not read.
fn check(role: &str, case: &Case, expect: u16, answer: &Answer) {
    let what = format!("{role}: {} {}", case.method, case.path);
    if expect == 2 {
        assert!(
            (200..300).contains(&answer.status),
            "{what}: {} {}",
            answer.status,
            answer.body
        );
    } else {
        assert_eq!(answer.status, expect, "{what}: {}", answer.body);
    }
    if answer.status == 403 && case.path.starts_with("/v1/") {
        let error = json_of(answer);
        assert_eq!(error["error"]["code"], "forbidden", "{what}");
        assert!(
            error["error"]["operation"].is_string(),
            "{what}: names the operation"
        );
    }
    if answer.status == 401 {
        assert_eq!(json_of(answer)["error"]["code"], "unauthorized", "{what}");
    }
    for (marker, readers) in MARKERS {
        if !readers.contains(&role) {
            assert!(
                !answer.body.contains(marker),
                "{what} shows {marker}: {}",
                answer.body
            );
        }
    }
    if case.path == "/v1/groups" && role.starts_with("tenant") {
        assert!(
            !answer.body.contains("team-8"),
            "{what}: lists only groups it may read: {}",
            answer.body
        );
    }
}

/// The oldest invariants with rules switched on, through a tenant's token: a version is never
/// used twice for a path (a put after a delete continues from it), and transfers between two
/// accounts by concurrent transactions keep their sum exactly.
fn invariants_under_rules(url: &str, transfers: usize) {
    // Its own role (the matrix's admin rewrites and deletes `tenant`).
    let role = json!({"rules": [{"path": "/team-{team}/**", "allow": ["read", "write"]}]});
    let made = send(
        url,
        Some(ADMIN),
        "PUT",
        "/v1/roles/accountant",
        Some((JSON, &role.to_string())),
    );
    assert!(made.status < 300, "{}", made.body);
    let body = json!({"role": "accountant", "vars": {"team": 7}}).to_string();
    let issued = json_of(&send(
        url,
        Some(ADMIN),
        "POST",
        "/v1/tokens",
        Some((JSON, &body)),
    ));
    let token = issued["token"].as_str().expect("token").to_owned();
    let put = |path: &str, value: &str| {
        let answer = send(
            url,
            Some(&token),
            "PUT",
            &format!("/v1/items{path}"),
            Some((JSON, value)),
        );
        assert!(answer.status < 300, "{}", answer.body);
        json_of(&answer)["version"].as_u64().expect("a version")
    };
    assert_eq!(put("/team-7/v-1", "1"), 1);
    assert_eq!(put("/team-7/v-1", "2"), 2);
    assert_eq!(
        send(url, Some(&token), "DELETE", "/v1/items/team-7/v-1", None).status,
        200
    );
    assert_eq!(put("/team-7/v-1", "3"), 4, "a version is never used twice");
    put("/team-7/acct-1", "100");
    put("/team-7/acct-2", "100");
    std::thread::scope(|s| {
        for worker in 0..4 {
            let token = token.clone();
            s.spawn(move || {
                let (from, to) = if worker % 2 == 0 { ("/team-7/acct-1", "/team-7/acct-2") } else { ("/team-7/acct-2", "/team-7/acct-1") };
                let mut done = 0;
                while done < transfers {
                    let got = json_of(&send(url, Some(&token), "POST", "/v1/get", Some((JSON, &json!({"paths": [from, to]}).to_string()))));
                    let items = got["items"].as_array().expect("items");
                    let (a, b) = (&items[0], &items[1]);
                    let ops = json!({"ops": [
                        {"op": "put", "path": from, "value": a["value"].as_i64().expect("n") - 1, "if_version": a["version"]},
                        {"op": "put", "path": to, "value": b["value"].as_i64().expect("n") + 1, "if_version": b["version"]},
                    ]});
                    let answer = send(url, Some(&token), "POST", "/v1/transact", Some((JSON, &ops.to_string())));
                    match answer.status {
                        200 => done += 1,
                        409 => {}
                        other => panic!("transfer: {other} {}", answer.body),
                    }
                }
            });
        }
    });
    let got = json_of(&send(
        url,
        Some(&token),
        "POST",
        "/v1/get",
        Some((
            JSON,
            &json!({"paths": ["/team-7/acct-1", "/team-7/acct-2"]}).to_string(),
        )),
    ));
    let sum: i64 = got["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["value"].as_i64().expect("n"))
        .sum();
    assert_eq!(sum, 200, "transactions are exact");
    // The same transfer into another team's account is refused whole.
    let ops = json!({"ops": [
        {"op": "put", "path": "/team-7/acct-1", "value": 0},
        {"op": "put", "path": "/team-8/acct-1", "value": 200},
    ]});
    assert_eq!(
        send(
            url,
            Some(&token),
            "POST",
            "/v1/transact",
            Some((JSON, &ops.to_string()))
        )
        .status,
        403
    );
    let after = json_of(&send(
        url,
        Some(&token),
        "GET",
        "/v1/items/team-7/acct-1",
        None,
    ));
    assert_ne!(
        after["value"], 0,
        "nothing of a refused transaction was written"
    );
}

#[test]
fn invariants_on_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve_file(dir.path(), None);
    invariants_under_rules(&server.url, 25);
}

#[test]
fn every_route_on_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve_file(dir.path(), Some(&fixture("jwks-a.json")));
    matrix(&server.url);
}

/// A new table's flags (`crate::dynamodb::table_flags`), the table made.
#[cfg(feature = "dynamodb")]
fn dynamodb_flags(name: &str) -> Option<Vec<String>> {
    let (_, flags) = crate::dynamodb::table_flags(name)?;
    let args: Vec<&str> = flags.iter().map(String::as_str).collect();
    crate::ok(&[&["dynamodb", "create-table"][..], &args].concat());
    Some(flags)
}

#[cfg(feature = "dynamodb")]
fn serve_dynamodb(flags: &[String], config: &Path) -> Served {
    let mut args = vec![
        "serve".to_owned(),
        "--backend".into(),
        "dynamodb".into(),
        "--addr".into(),
        "127.0.0.1:0".into(),
        "--config".into(),
        config.to_str().expect("utf-8").into(),
    ];
    args.extend(flags.iter().cloned());
    args.extend(jwt_flags(&fixture("jwks-a.json")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Served::start(&args)
}

#[cfg(feature = "dynamodb")]
#[test]
fn every_route_on_dynamodb() {
    let Some(flags) = dynamodb_flags("pathdb-access") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve_dynamodb(&flags, &config(dir.path()));
    matrix(&server.url);
    // moto answers one request at a time: a few transfers each.
    invariants_under_rules(&server.url, 5);
}

/// A revoked token is refused by the next request to the server that revoked it, and within
/// the documented bound ([`pathdb_server::REVALIDATE`], one second) by a second server sharing
/// the table.
#[cfg(feature = "dynamodb")]
#[test]
fn revocation_reaches_every_server_of_a_table() {
    let Some(flags) = dynamodb_flags("pathdb-revoke") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(dir.path());
    let (a, b) = (
        serve_dynamodb(&flags, &config),
        serve_dynamodb(&flags, &config),
    );
    // An item the narrowed role below no longer reads.
    let put = send(
        &a.url,
        Some(ADMIN),
        "PUT",
        "/v1/items/team-7/doc-2",
        Some((JSON, "1")),
    );
    assert!(put.status < 300, "{}", put.body);
    let body = json!({"role": "tenant", "vars": {"team": 7}}).to_string();
    let issued = json_of(&send(
        &a.url,
        Some(ADMIN),
        "POST",
        "/v1/tokens",
        Some((JSON, &body)),
    ));
    let (token, id) = (
        issued["token"].as_str().expect("token"),
        issued["id"].as_str().expect("id"),
    );
    for server in [&a, &b] {
        let answer = send(&server.url, Some(token), "GET", "/v1/list/team-7", None);
        assert_eq!(answer.status, 200, "{}", answer.body);
    }
    // A role changed on one server: the other sees the new rules within the bound too.
    let narrower =
        json!({"rules": [{"path": "/team-{team}/doc-1", "allow": ["read"]}]}).to_string();
    assert_eq!(
        send(
            &a.url,
            Some(ADMIN),
            "PUT",
            "/v1/roles/tenant",
            Some((JSON, &narrower))
        )
        .status,
        200
    );
    assert_eq!(
        send(&a.url, Some(token), "GET", "/v1/list/team-7", None).status,
        403
    );
    refused_within(&b.url, token, "/v1/list/team-7", 403);
    let revoked = send(
        &a.url,
        Some(ADMIN),
        "DELETE",
        &format!("/v1/tokens/{id}"),
        None,
    );
    assert_eq!(revoked.status, 204, "{}", revoked.body);
    assert_eq!(
        send(&a.url, Some(token), "GET", "/v1/items/team-7/doc-1", None).status,
        401,
        "at once where revoked"
    );
    refused_within(&b.url, token, "/v1/items/team-7/doc-1", 401);
}

/// Asserts that `path` with `token` answers `status` on `url` within the revalidation bound
/// (plus time for a slow machine), and keeps answering it.
#[cfg(feature = "dynamodb")]
fn refused_within(url: &str, token: &str, path: &str, status: u16) {
    // The cache's bound, plus what the requests themselves take on a busy 2-core machine with
    // moto answering one request at a time (the run prints how long it took).
    let bound = pathdb_server::REVALIDATE + Duration::from_secs(4);
    let started = Instant::now();
    loop {
        let answer = send(url, Some(token), "GET", path, None);
        if answer.status == status {
            break;
        }
        assert!(
            started.elapsed() < bound,
            "still {} after {:?}: {}",
            answer.status,
            started.elapsed(),
            answer.body
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!(
        "{path} answered {status} on the second server after {:?}",
        started.elapsed()
    );
    assert_eq!(send(url, Some(token), "GET", path, None).status, status);
}

/// An open change stream ends once its token is revoked: a feed is asked about its token again
/// every `REVALIDATE`, as the next request would be.
#[test]
fn revocation_ends_an_open_change_stream() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let server = serve_file(dir.path(), None);
    let url = server.url.clone();
    let body = json!({"role": "tenant", "vars": {"team": 7}}).to_string();
    let issued = json_of(&send(
        &url,
        Some(ADMIN),
        "POST",
        "/v1/tokens",
        Some((JSON, &body)),
    ));
    let (token, id) = (
        issued["token"].as_str().expect("token").to_owned(),
        issued["id"].as_str().expect("id").to_owned(),
    );
    let (lines, seen) = std::sync::mpsc::channel::<String>();
    let reader = {
        let (url, token) = (url.clone(), token.clone());
        std::thread::spawn(move || {
            let mut response = agent()
                .get(format!("{url}/v1/changes/team-7"))
                .header("Authorization", format!("Bearer {token}"))
                .header("Accept", "text/event-stream")
                .call()
                .expect("the stream opens");
            assert_eq!(response.status(), 200);
            let stream = std::io::BufReader::new(response.body_mut().as_reader());
            for line in stream.lines() {
                let Ok(line) = line else { break };
                if lines.send(line).is_err() {
                    break;
                }
            }
        })
    };
    // A change reaches the stream; then the token is revoked, and the stream says so and ends.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        send(
            &url,
            Some(ADMIN),
            "PUT",
            "/v1/items/team-7/doc-1",
            Some((JSON, "1"))
        )
        .status
            < 300
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got_change = false;
    while !got_change {
        let line = seen
            .recv_timeout(deadline - Instant::now())
            .expect("the change arrives");
        got_change = line.starts_with("data:") && line.contains("/team-7/doc-1");
    }
    assert_eq!(
        send(
            &url,
            Some(ADMIN),
            "DELETE",
            &format!("/v1/tokens/{id}"),
            None
        )
        .status,
        204
    );
    let revoked = Instant::now();
    let mut ended = false;
    while let Ok(line) = seen.recv_timeout(Duration::from_secs(10)) {
        if line == "event: failure" {
            ended = true;
        }
    }
    assert!(ended, "the stream says why it ends");
    assert!(
        revoked.elapsed() < pathdb_server::REVALIDATE + Duration::from_secs(8),
        "ended within the bound"
    );
    reader.join().expect("the reader thread");
}

/// Every bad JWT is a 401 naming why; a key rotation in the JWK Set file is picked up.
#[test]
fn bad_jwts_are_refused_and_rotations_picked_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jwks = dir.path().join("jwks.json");
    std::fs::copy(fixture("jwks-a.json"), &jwks).expect("jwks");
    let server = serve_file(dir.path(), Some(&jwks));
    let url = &server.url;
    use jsonwebtoken::Algorithm::{ES256, HS256, RS256};
    let good = claims("alice", "user");
    let with = |changes: Value| {
        let mut c = good.clone();
        for (k, v) in changes.as_object().expect("object") {
            c[k] = v.clone();
        }
        c
    };
    let ok = jwt(RS256, "rsa-a.key.pem", "rsa-a", &good);
    assert_eq!(
        send(url, Some(&ok), "GET", "/v1/list/user-alice", None).status,
        200
    );
    let session = json_of(&send(url, Some(&ok), "GET", "/v1/session", None));
    assert_eq!(
        (session["via"].as_str(), session["role"].as_str()),
        (Some("jwt"), Some("user"))
    );
    assert_eq!(
        send(url, Some(&ok), "GET", "/v1/items/user-bob/note-1", None).status,
        403
    );
    // alg none, and HS256 keyed with the RSA public key (algorithm confusion).
    let b64 = |v: &Value| {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT", "kid": "rsa-a"})),
        b64(&good)
    );
    let confused = {
        let public = std::fs::read(fixture("rsa-a.pub.pem")).expect("public key");
        let mut header = jsonwebtoken::Header::new(HS256);
        header.kid = Some("rsa-a".into());
        jsonwebtoken::encode(
            &header,
            &good,
            &jsonwebtoken::EncodingKey::from_secret(&public).expect("a key"),
        )
        .expect("signs")
    };
    let tampered = {
        let mut parts: Vec<String> = ok.split('.').map(str::to_owned).collect();
        parts[1] = b64(&with(json!({"sub": "bob"})));
        parts.join(".")
    };
    for (token, reason) in [
        (
            jwt(
                RS256,
                "rsa-a.key.pem",
                "rsa-a",
                &with(json!({"exp": now() - 60})),
            ),
            "expired",
        ),
        (
            jwt(
                RS256,
                "rsa-a.key.pem",
                "rsa-a",
                &with(json!({"nbf": now() + 600})),
            ),
            "not_yet_valid",
        ),
        (
            jwt(
                RS256,
                "rsa-a.key.pem",
                "rsa-a",
                &with(json!({"iss": "https://evil.example"})),
            ),
            "wrong_issuer",
        ),
        (
            jwt(
                RS256,
                "rsa-a.key.pem",
                "rsa-a",
                &with(json!({"aud": "other"})),
            ),
            "wrong_audience",
        ),
        (jwt(RS256, "rsa-b.key.pem", "rsa-b", &good), "unknown_key"),
        (jwt(ES256, "ec-p256.key.pem", "ec-1", &good), "unknown_key"),
        (none, "algorithm_not_allowed"),
        (confused, "algorithm_not_allowed"),
        (tampered, "bad_signature"),
        (
            jwt(
                RS256,
                "rsa-a.key.pem",
                "rsa-a",
                &json!({"sub": "alice", "iss": "https://id.example", "aud": "pathdb", "exp": now() + 600}),
            ),
            "no_role",
        ),
        ("a.b.c".to_owned(), "malformed"),
    ] {
        let answer = send(
            url,
            Some(&token),
            "GET",
            "/v1/items/user-alice/note-1",
            None,
        );
        assert_eq!(answer.status, 401, "{reason}: {}", answer.body);
        assert_eq!(
            json_of(&answer)["error"]["reason"],
            reason,
            "{}",
            answer.body
        );
        assert!(!answer.body.contains("MARK-"), "{reason}: {}", answer.body);
    }
    // Rotation: the file now holds only key B. Within the refresh interval (1 s here) tokens of
    // B work and tokens of A no longer do.
    std::fs::copy(fixture("jwks-b.json"), &jwks).expect("rotate");
    let b = jwt(RS256, "rsa-b.key.pem", "rsa-b", &claims("alice", "user"));
    let a = jwt(
        RS256,
        "rsa-a.key.pem",
        "rsa-a",
        &with(json!({"iat": now() + 1})),
    );
    let started = Instant::now();
    while send(url, Some(&b), "GET", "/v1/list/user-alice", None).status != 200 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "key B not picked up"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let answer = send(url, Some(&a), "GET", "/v1/list/user-alice", None);
    assert_eq!(answer.status, 401, "{}", answer.body);
    assert_eq!(json_of(&answer)["error"]["reason"], "unknown_key");
}

/// Issued tokens through the CLI: made, used, listed without secrets, revoked.
#[test]
fn tokens_from_the_cli() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("cli.pathdb");
    let db = db.to_str().expect("utf-8");
    crate::ok(&[
        "--db",
        db,
        "role",
        "set",
        "member",
        "--rule",
        "/team-{team}/**=read,write",
    ]);
    let secret = crate::ok(&[
        "--db", db, "token", "create", "--role", "member", "--var", "team=7",
    ]);
    let secret = secret.trim();
    assert!(secret.starts_with("pdb_"), "{secret}");
    let listed = crate::ok(&["--json", "--db", db, "token", "ls"]);
    let line: Value = serde_json::from_str(listed.trim()).expect("json");
    // The secret is all after `pdb_<id>_` (base64url, which may itself hold a `_`).
    let id = line["id"].as_str().expect("an id");
    let tail = secret
        .strip_prefix(&format!("pdb_{id}_"))
        .expect("a secret");
    assert!(!listed.contains(tail), "no secret in the listing");
    assert_eq!(line["vars"], json!({"team": 7}));
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        format!("[[tokens]]\ntoken = \"{ADMIN}\"\nscope = \"admin\"\n"),
    )
    .expect("config");
    let server = Served::start(&[
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--db",
        db,
        "--config",
        config.to_str().expect("utf-8"),
    ]);
    let url = &server.url;
    crate::ok(&[
        "--server",
        url,
        "--token",
        secret,
        "put",
        "/team-7/doc-1",
        "1",
    ]);
    let refused = crate::pathdb_command()
        .args([
            "--server",
            url,
            "--token",
            secret,
            "put",
            "/team-8/doc-1",
            "1",
        ])
        .output()
        .expect("runs");
    assert_eq!(
        refused.status.code(),
        Some(5),
        "refused: {}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let id = line["id"].as_str().expect("id");
    crate::ok(&["--server", url, "--token", ADMIN, "token", "rm", id]);
    let after = crate::pathdb_command()
        .args(["--server", url, "--token", secret, "get", "/team-7/doc-1"])
        .output()
        .expect("runs");
    assert_eq!(
        after.status.code(),
        Some(5),
        "revoked: {}",
        String::from_utf8_lossy(&after.stderr)
    );
}
