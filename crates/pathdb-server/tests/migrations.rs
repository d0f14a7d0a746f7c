//! Schema migrations over HTTP (docs/migrations.md): a rename shipped while version-1 clients
//! go on, `Schema-Version` on every route that reads or writes values, the refusals (409
//! `incompatible_schema` with its problems, 400 `unknown_schema_version`, 422
//! `migration_failed`), `force`, the dry run after migration, kept versions and the rewrite.

use crate::TestServer;
use axum::http::Method;
use serde_json::{Value, json};

const V1: &str = "user=1";

fn v1() -> Value {
    json!({"schema": {"type": "object", "required": ["name"],
        "properties": {"name": {"type": "string"}, "status": {"enum": ["new", "shipped"]}}}})
}

fn v2() -> Value {
    json!({"schema": {"type": "object", "required": ["full_name", "tier"],
        "properties": {"full_name": {"type": "string"}, "tier": {"type": "string"},
                       "status": {"enum": ["new", "sent"]}}},
        "migrate": [{"op": "rename", "from": "/name", "to": "/full_name"},
                    {"op": "add", "path": "/tier", "default": "free"},
                    {"op": "rename_value", "path": "/status", "from": "shipped", "to": "sent"}]})
}

async fn speaking(
    server: &TestServer,
    method: Method,
    uri: &str,
    version: &str,
    body: &str,
) -> crate::Reply {
    server
        .call(method, uri, &[("schema-version", version)], body.to_owned())
        .await
}

/// A server where `items` (path, value) were written in version 1, before version 2.
async fn written_before_version_2(items: &[(&str, &str)]) -> TestServer {
    let server = TestServer::new();
    server
        .put("/v1/namespaces/user", &v1().to_string())
        .await
        .expect(201);
    for (path, value) in items {
        server.put_item(path, value).await;
    }
    server
        .put("/v1/namespaces/user", &v2().to_string())
        .await
        .expect(200);
    server
}

async fn two_versions() -> TestServer {
    written_before_version_2(&[("/user-1", r#"{"name": "Ada", "status": "shipped"}"#)]).await
}

#[tokio::test]
async fn old_and_new_clients_read_and_write_side_by_side() {
    let server = two_versions().await;
    // An item stored in version 1, read by a new client and an old one.
    let new = server.get("/v1/items/user-1").await.expect(200);
    assert_eq!(
        new["value"],
        json!({"status": "sent", "full_name": "Ada", "tier": "free"})
    );
    assert_eq!(new["schema_version"], 2);
    let old = speaking(&server, Method::GET, "/v1/items/user-1", V1, "")
        .await
        .expect(200);
    assert_eq!(old["value"], json!({"status": "shipped", "name": "Ada"}));
    assert_eq!(old["schema_version"], 1);
    // An old client's write is stored in the newest shape and checked against its schema.
    let put = speaking(
        &server,
        Method::PUT,
        "/v1/items/user-2",
        V1,
        r#"{"name": "Bob", "status": "shipped"}"#,
    )
    .await
    .expect(201);
    assert_eq!(
        put["value"],
        json!({"name": "Bob", "status": "shipped"}),
        "answered in version 1"
    );
    let stored = server.get("/v1/items/user-2").await.expect(200);
    assert_eq!(
        stored["value"],
        json!({"status": "sent", "full_name": "Bob", "tier": "free"})
    );
    // A version-1 patch applies to the item as version 1 reads it.
    let patched = server
        .call(
            Method::PATCH,
            "/v1/items/user-2",
            &[
                ("schema-version", V1),
                ("content-type", "application/merge-patch+json"),
            ],
            r#"{"name": "Bobby"}"#.to_owned(),
        )
        .await
        .expect(200);
    assert_eq!(patched["value"]["name"], "Bobby");
    let stored = server.get("/v1/items/user-2").await.expect(200);
    assert_eq!(stored["value"]["full_name"], "Bobby");
    // Listings, get_many, a create and transactions in version 1.
    let listed = speaking(&server, Method::GET, "/v1/list/user-1", V1, "")
        .await
        .expect(200);
    assert_eq!(listed["items"][0]["value"]["name"], "Ada");
    let many = server
        .call(
            Method::POST,
            "/v1/get",
            &[("schema-version", V1)],
            json!({"paths": ["/user-1", "/user-2"]}).to_string(),
        )
        .await
        .expect(200);
    assert_eq!(many["items"][1]["value"]["name"], "Bobby");
    let created = speaking(
        &server,
        Method::POST,
        "/v1/items/user",
        V1,
        r#"{"name": "Cy"}"#,
    )
    .await
    .expect(201);
    assert_eq!(created["value"], json!({"name": "Cy"}));
    let tx = json!({"ops": [{"op": "put", "path": "/user-3", "value": {"name": "Di"}}]});
    let done = server
        .call(
            Method::POST,
            "/v1/transact",
            &[("schema-version", V1)],
            tx.to_string(),
        )
        .await
        .expect(200);
    assert_eq!(
        done["results"][0]["item"]["value"],
        json!({"name": "Di"}),
        "{done}"
    );
    assert_eq!(
        server.get("/v1/items/user-3").await.expect(200)["value"]["full_name"],
        "Di"
    );
    // The feed, followed by a new client and resumed by an old one, delivers values in the
    // version each asks.
    let token = server.get("/v1/changes/user-1").await.expect(200)["next_token"].clone();
    let token = token.as_str().expect("a token").to_owned();
    server
        .put_item(
            "/user-1",
            r#"{"full_name": "Ada L", "tier": "pro", "status": "sent"}"#,
        )
        .await;
    let uri = format!("/v1/changes/user-1?since={token}");
    let new = server.get(&uri).await.expect(200);
    assert_eq!(
        new["changes"][0]["item"]["value"]["full_name"], "Ada L",
        "{new}"
    );
    let old = speaking(&server, Method::GET, &uri, V1, "")
        .await
        .expect(200);
    assert_eq!(
        old["changes"][0]["item"]["value"],
        json!({"name": "Ada L", "status": "shipped"}),
        "{old}"
    );
    // History and a delete answer in the version asked too.
    for name in ["Eve", "Eva"] {
        let body = json!({"full_name": name, "tier": "pro"}).to_string();
        let put = server.put("/v1/items/user-4?history=true", &body).await;
        assert!(put.status.is_success(), "{}", put.text());
    }
    let history = speaking(&server, Method::GET, "/v1/history/user-4", V1, "")
        .await
        .expect(200);
    let names: Vec<&Value> = history["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| &i["value"]["name"])
        .collect();
    assert_eq!(names, [&json!("Eva"), &json!("Eve")], "{history}");
    let deleted = speaking(&server, Method::DELETE, "/v1/items/user-3", V1, "")
        .await
        .expect(200);
    assert_eq!(deleted["value"], json!({"name": "Di"}), "{deleted}");
    // Export: every value in the version asked, each line saying it.
    let export = speaking(&server, Method::GET, "/v1/export", V1, "").await;
    let text = export.text();
    let first: Value = serde_json::from_str(text.lines().next().expect("a line")).expect("JSON");
    assert_eq!(first["schema_version"], 1, "{text}");
    assert!(first["value"].get("name").is_some(), "{text}");
}

#[tokio::test]
async fn refusals_name_what_is_wrong() {
    let server = two_versions().await;
    // A version that does not exist, on reads and writes; a header that does not parse.
    for (method, uri, body) in [
        (Method::GET, "/v1/items/user-1", ""),
        (
            Method::PUT,
            "/v1/items/user-9",
            r#"{"full_name": "x", "tier": "t"}"#,
        ),
        (Method::GET, "/v1/list/user-1", ""),
        (Method::GET, "/v1/export", ""),
    ] {
        speaking(&server, method.clone(), uri, "user=7", body)
            .await
            .expect_error(400, "unknown_schema_version");
        speaking(&server, method, uri, "user=x", body)
            .await
            .expect_error(400, "invalid_request");
    }
    // A version-1 write with both the old and the new name.
    let both = speaking(
        &server,
        Method::PUT,
        "/v1/items/user-9",
        V1,
        r#"{"name": "a", "full_name": "b"}"#,
    )
    .await;
    both.expect_error(422, "migration_failed");
    server.get("/v1/items/user-9").await.expect(404);
    // Incompatible: a new required member without a default, named; forced, stored.
    let v3 = json!({"schema": {"type": "object", "required": ["full_name", "tier", "plan"],
        "properties": {"full_name": {"type": "string"}, "tier": {"type": "string"}, "plan": {"type": "string"}}}});
    let refused = server.put("/v1/namespaces/user", &v3.to_string()).await;
    refused.expect_error(409, "incompatible_schema");
    let problems = refused.json()["error"]["problems"].clone();
    assert!(
        problems[0]
            .as_str()
            .expect("a problem")
            .starts_with("/plan is required"),
        "{problems}"
    );
    // The dry run says the same, and counts what the new schema refuses after migration.
    let dry = server
        .put("/v1/namespaces/user?dry_run=true", &v3.to_string())
        .await
        .expect(200);
    assert_eq!(dry["problems"], problems);
    assert_eq!(dry["violating"], dry["checked"], "{dry}");
    server
        .put("/v1/namespaces/user?force=true", &v3.to_string())
        .await
        .expect(200);
}

#[tokio::test]
async fn versions_stay_readable_and_the_rewrite_reports_progress() {
    let server = two_versions().await;
    let versions = server.get("/v1/namespaces/user/versions").await.expect(200);
    let list = versions["versions"].as_array().expect("versions");
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["version"], 1);
    assert_eq!(list[1]["migrate"], v2()["migrate"]);
    let one = server
        .get("/v1/namespaces/user/versions/1")
        .await
        .expect(200);
    assert_eq!(one["schema"], v1()["schema"]);
    server
        .get("/v1/namespaces/user/versions/9")
        .await
        .expect_error(404, "not_found");
    server
        .get("/v1/namespaces/user/versions/0")
        .await
        .expect_error(400, "invalid_request");
    let definition = server.get("/v1/namespaces/user").await.expect(200);
    assert_eq!(definition["rewrite"]["to"], 2, "{definition}");
    // `formats`: asserted on request.
    let formats = json!({"schema": {"type": "object", "properties": {"mail": {"format": "email"}}}, "formats": "assert"});
    server
        .put("/v1/namespaces/contact", &formats.to_string())
        .await
        .expect(201);
    server
        .put("/v1/items/contact-1", r#"{"mail": "notanemail"}"#)
        .await
        .expect_error(422, "schema_violation");
    server
        .put("/v1/items/contact-1", r#"{"mail": "ada@example.org"}"#)
        .await
        .expect(201);
}

#[tokio::test]
async fn filters_read_the_newest_version_of_items_stored_before_it() {
    let server = written_before_version_2(&[
        ("/team-1/user-1", r#"{"name": "Ada", "status": "shipped"}"#),
        ("/team-1/user-2", r#"{"name": "Bob", "status": "new"}"#),
    ])
    .await;
    // `sent` and `tier` exist only in version 2: stored in version 1 and not rewritten yet,
    // user-1 matches by what the steps make of it, whichever version the page speaks.
    let filter = "value.status%20%3D%3D%20%22sent%22%20%26%26%20value.tier%20%3D%3D%20%22free%22";
    for (version, value) in [
        ("user=1", json!({"name": "Ada", "status": "shipped"})),
        (
            "user=2",
            json!({"status": "sent", "full_name": "Ada", "tier": "free"}),
        ),
    ] {
        let uri = format!("/v1/list/team-1?filter={filter}");
        let listed = speaking(&server, Method::GET, &uri, version, "")
            .await
            .expect(200);
        let items = listed["items"].as_array().expect("items");
        assert_eq!(items.len(), 1, "{version}: {listed}");
        assert_eq!(items[0]["path"], "/team-1/user-1");
        assert_eq!(items[0]["value"], value, "{version}");
    }
}
