//! `/v1/namespaces` over HTTP: definitions as a resource (ETag, If-Match, paging, unknown
//! members refused), the admin scope, the 422 `schema_violation` body on every write route,
//! the dry run and the violations listing.

use crate::TestServer;
use axum::body::Body;
use axum::http::Method;
use pathdb_server::Scope;
use serde_json::json;

const PERSON: &str = r#"{"schema": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]}, "history": 2, "description": "people"}"#;

#[tokio::test]
async fn definitions_are_a_versioned_resource() {
    let server = TestServer::new();
    server
        .get("/v1/namespaces/person")
        .await
        .expect_error(404, "not_found");
    let created = server.put("/v1/namespaces/person", PERSON).await;
    let body = created.expect(201);
    assert_eq!(created.headers["etag"], "\"1\"");
    assert_eq!(body["namespace"], "person");
    assert_eq!(body["version"], 1);
    assert_eq!(body["history"], 2);
    assert_eq!(body["description"], "people");
    assert_eq!(body["schema"]["required"], json!(["name"]));
    let read = server.get("/v1/namespaces/person").await;
    assert_eq!(read.expect(200), body);
    assert_eq!(read.headers["etag"], "\"1\"");
    // A cached copy is still good: 304 with the validator, no body.
    let cached = server
        .call(
            Method::GET,
            "/v1/namespaces/person",
            &[("if-none-match", "\"1\"")],
            Body::empty(),
        )
        .await;
    assert_eq!(cached.status.as_u16(), 304);
    assert_eq!(cached.headers["etag"], "\"1\"");
    assert!(cached.body.is_empty());
    // If-Match: a stale version is 412 and changes nothing; the current one replaces.
    let stale = server
        .call(
            Method::PUT,
            "/v1/namespaces/person",
            &[("if-match", "\"7\"")],
            "{}",
        )
        .await;
    stale.expect_error(412, "condition_failed");
    let exists = server
        .call(
            Method::PUT,
            "/v1/namespaces/person",
            &[("if-none-match", "*")],
            "{}",
        )
        .await;
    exists.expect_error(412, "condition_failed");
    let replaced = server
        .call(
            Method::PUT,
            "/v1/namespaces/person",
            &[("if-match", "\"1\"")],
            r#"{"history": 3}"#,
        )
        .await;
    let body = replaced.expect(200);
    assert_eq!(replaced.headers["etag"], "\"2\"");
    assert_eq!(
        (body["history"].clone(), body["schema"].clone()),
        (json!(3), json!(null))
    );
    // Unknown members (the next issue's `aliases`) and bad values are refused, not ignored.
    for bad in [
        r#"{"aliases": {}}"#,
        r#"{"history": 0}"#,
        r#"{"history": "x"}"#,
        "[]",
    ] {
        let reply = server.put("/v1/namespaces/person", bad).await;
        assert_eq!(reply.status.as_u16(), 400, "{bad}: {}", reply.text());
    }
    server
        .put("/v1/namespaces/Bad-Name", "{}")
        .await
        .expect_error(400, "invalid_request");
    // Schemas that are not valid schemas, or that need one from elsewhere.
    for (schema, says) in [
        (json!({"type": 12}), "type"),
        (
            json!({"$ref": "https://example.com/person.json"}),
            "never fetches",
        ),
        (json!("string"), "object or a boolean"),
    ] {
        let reply = server
            .put(
                "/v1/namespaces/person",
                &json!({ "schema": schema }).to_string(),
            )
            .await;
        let message = reply.expect_error(400, "invalid_schema");
        assert!(message.contains(says), "{schema}: {message}");
    }
    assert_eq!(
        server.get("/v1/namespaces/person").await.expect(200)["version"],
        2
    );
    // Paged in namespace order.
    for ns in ["beta", "alpha", "gamma"] {
        server
            .put(&format!("/v1/namespaces/{ns}"), "{}")
            .await
            .expect(201);
    }
    let page = server.get("/v1/namespaces?limit=2").await.expect(200);
    let names: Vec<&str> = page["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha", "beta"]);
    let token = page["next_page_token"].as_str().unwrap().to_owned();
    let page = server
        .get(&format!("/v1/namespaces?limit=2&page_token={token}"))
        .await
        .expect(200);
    assert_eq!(page["namespaces"].as_array().unwrap().len(), 2);
    assert_eq!(page["next_page_token"], json!(null));
    server
        .get("/v1/namespaces?limit=0")
        .await
        .expect_error(400, "invalid_request");
    // A delete takes If-Match, answers 204, and keeps the items.
    server.put_item("/gamma-1", "1").await;
    let stale = server
        .call(
            Method::DELETE,
            "/v1/namespaces/gamma",
            &[("if-match", "\"9\"")],
            Body::empty(),
        )
        .await;
    stale.expect_error(412, "condition_failed");
    let removed = server.delete("/v1/namespaces/gamma").await;
    assert_eq!(removed.status.as_u16(), 204);
    server
        .delete("/v1/namespaces/gamma")
        .await
        .expect_error(404, "not_found");
    server.get("/v1/items/gamma-1").await.expect(200);
}

#[tokio::test]
async fn changing_a_definition_needs_the_admin_scope() {
    let mut server = TestServer::with_tokens(&[
        ("reader-token-0001", Scope::Read),
        ("writer-token-0001", Scope::ReadWrite),
        ("admin-token-00001", Scope::Admin),
    ]);
    server.use_token("writer-token-0001");
    server
        .put("/v1/namespaces/x", "{}")
        .await
        .expect_error(403, "forbidden");
    server
        .put("/v1/namespaces/x?dry_run=true", r#"{"schema": true}"#)
        .await
        .expect_error(403, "forbidden");
    server
        .delete("/v1/namespaces/x")
        .await
        .expect_error(403, "forbidden");
    server.use_token("admin-token-00001");
    server.put("/v1/namespaces/x", PERSON).await.expect(201);
    assert_eq!(
        server.get("/v1/session").await.expect(200)["scope"],
        "admin"
    );
    // An admin token also reads and writes items.
    server.put_item("/x-1", r#"{"name": "a"}"#).await;
    // Reading definitions needs only read.
    server.use_token("reader-token-0001");
    server.get("/v1/namespaces/x").await.expect(200);
    server.get("/v1/namespaces").await.expect(200);
    server.get("/v1/namespaces/x/violations").await.expect(200);
    server
        .put("/v1/namespaces/x", "{}")
        .await
        .expect_error(403, "forbidden");
}

#[tokio::test]
async fn every_write_route_answers_422_with_the_violations() {
    let server = TestServer::new();
    server
        .put("/v1/namespaces/person", PERSON)
        .await
        .expect(201);
    let reply = server
        .put("/v1/items/team-1/person-1", r#"{"name": 7, "age": "x"}"#)
        .await;
    let body = reply.expect(422);
    let error = &body["error"];
    assert_eq!(error["code"], "schema_violation");
    assert_eq!(error["path"], "/team-1/person-1");
    let violations = error["violations"].as_array().unwrap();
    let at: Vec<(&str, &str)> = violations
        .iter()
        .map(|v| {
            (
                v["instance_path"].as_str().unwrap(),
                v["schema_path"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(at.contains(&("/name", "/properties/name/type")), "{at:?}");
    assert!(at.contains(&("/age", "/properties/age/type")), "{at:?}");
    assert!(
        violations
            .iter()
            .all(|v| v["message"].as_str().is_some_and(|m| !m.is_empty()))
    );
    server
        .get("/v1/items/team-1/person-1")
        .await
        .expect_error(404, "not_found");
    // A duplicate member is still the strict JSON reading's 400, before any schema.
    server
        .put("/v1/items/person-1", r#"{"name": "a", "name": "b"}"#)
        .await
        .expect_error(400, "invalid_json");
    // Create with a generated id.
    server
        .call(Method::POST, "/v1/items/team-1/person?id=uuid", &[], "{}")
        .await
        .expect_error(422, "schema_violation");
    // PATCH: the patched value is checked.
    server
        .put_item("/team-1/person-2", r#"{"name": "Bo"}"#)
        .await;
    server
        .call(
            Method::PATCH,
            "/v1/items/team-1/person-2",
            &[("content-type", "application/merge-patch+json")],
            r#"{"name": null}"#,
        )
        .await
        .expect_error(422, "schema_violation");
    // A transaction names the operation; nothing of it is written.
    let reply = server
        .post(
            "/v1/transact",
            &json!({"ops": [
                {"op": "put", "path": "/team-1/note-1", "value": 1},
                {"op": "put", "path": "/team-1/person-3", "value": {"age": 1}}
            ]}),
        )
        .await;
    let body = reply.expect(422);
    assert_eq!(body["error"]["index"], 1);
    assert_eq!(body["error"]["path"], "/team-1/person-3");
    server
        .get("/v1/items/team-1/note-1")
        .await
        .expect_error(404, "not_found");
    // An import names the line (blank lines count); nothing of it is written.
    let lines = "{\"path\": \"/team-1/note-2\", \"value\": 1}\n\n{\"path\": \"/team-1/person-4\", \"value\": {}}\n";
    let reply = server
        .call(
            Method::POST,
            "/v1/import",
            &[("content-type", "application/x-ndjson")],
            lines,
        )
        .await;
    let body = reply.expect(422);
    assert_eq!(body["error"]["line"], 3);
    assert_eq!(body["error"]["code"], "schema_violation");
    server
        .get("/v1/items/team-1/note-2")
        .await
        .expect_error(404, "not_found");
    // A move whose root becomes a person.
    server.put_item("/team-5", r#"{"name": 5}"#).await;
    let reply = server
        .post("/v1/move", &json!({"from": "/team-5", "to": "/person-5"}))
        .await;
    reply.expect_error(422, "schema_violation");
    server.get("/v1/items/team-5").await.expect(200);
}

#[tokio::test]
async fn dry_run_and_violations() {
    let server = TestServer::new();
    for (i, age) in [(1, "1"), (2, "\"x\""), (3, "3"), (4, "\"y\"")] {
        server
            .put_item(
                &format!("/org-1/person-{i}"),
                &format!(r#"{{"name": "p", "age": {age}}}"#),
            )
            .await;
    }
    server.put_item("/org-1/pet-1", r#"{"age": "x"}"#).await;
    let dry = server
        .put("/v1/namespaces/person?dry_run=true", PERSON)
        .await
        .expect(200);
    assert_eq!(
        (dry["checked"].clone(), dry["violating"].clone()),
        (json!(4), json!(2))
    );
    assert_eq!(dry["first"][0]["path"], "/org-1/person-2");
    assert_eq!(dry["first"][0]["violations"][0]["instance_path"], "/age");
    // Nothing was stored.
    server
        .get("/v1/namespaces/person")
        .await
        .expect_error(404, "not_found");
    server
        .put(
            "/v1/namespaces/person?dry_run=true",
            r#"{"schema": {"type": 1}}"#,
        )
        .await
        .expect_error(400, "invalid_schema");
    // A dry run refuses what the real PUT would: a bad member, a precondition that fails.
    server
        .put("/v1/namespaces/person?dry_run=true", r#"{"history": 0}"#)
        .await
        .expect_error(400, "invalid_request");
    server
        .call(
            Method::PUT,
            "/v1/namespaces/person?dry_run=true",
            &[("if-match", "\"3\"")],
            PERSON,
        )
        .await
        .expect_error(412, "condition_failed");
    server
        .get("/v1/namespaces/person/violations")
        .await
        .expect_error(404, "not_found");
    server
        .put("/v1/namespaces/person", PERSON)
        .await
        .expect(201);
    let mut found = Vec::new();
    let mut uri = "/v1/namespaces/person/violations?limit=1".to_owned();
    loop {
        let page = server.get(&uri).await.expect(200);
        for item in page["items"].as_array().unwrap() {
            found.push(item["path"].as_str().unwrap().to_owned());
            assert_eq!(item["violations"][0]["instance_path"], "/age");
        }
        match page["next_page_token"].as_str() {
            Some(token) => {
                uri = format!("/v1/namespaces/person/violations?limit=1&page_token={token}")
            }
            None => break,
        }
    }
    assert_eq!(found, ["/org-1/person-2", "/org-1/person-4"]);
    server
        .get("/v1/namespaces/person/violations?page_token=nope")
        .await
        .expect_error(400, "invalid_page_token");
}

/// Alias paths over HTTP (docs/aliases.md): reads through an alias answer the item with its
/// own path and `alias`, and the item's ETag; the refusals are 409 `alias_taken` and
/// `path_is_alias`, 422 `alias_invalid`, each naming what it is about.
#[tokio::test]
async fn alias_paths_over_http() {
    let server = TestServer::new();
    let defined = server
        .put(
            "/v1/namespaces/user",
            r#"{"aliases": [{"path": "/email-{email}"}]}"#,
        )
        .await
        .expect(201);
    assert_eq!(
        defined["aliases"],
        json!([{"path": "/email-{email}", "state": "ready", "checked": 0, "written": 0}])
    );
    server
        .put_item("/user-1", r#"{"email": "ada@example.org"}"#)
        .await;
    let read = server.get("/v1/items/email-ada@example.org").await;
    let item = read.expect(200);
    assert_eq!(item["path"], "/user-1");
    assert_eq!(item["alias"], "/email-ada@example.org");
    assert_eq!(read.headers["etag"], "\"1\"");
    let cached = server
        .call(
            Method::GET,
            "/v1/items/email-ada@example.org",
            &[("if-none-match", "\"1\"")],
            Body::empty(),
        )
        .await;
    assert_eq!(cached.status.as_u16(), 304);
    let listed = server
        .get("/v1/list/email-ada@example.org")
        .await
        .expect(200);
    assert_eq!(listed["items"][0]["alias"], "/email-ada@example.org");
    let many = server
        .post("/v1/get", &json!({"paths": ["/email-ada@example.org"]}))
        .await
        .expect(200);
    assert_eq!(many["items"][0]["path"], "/user-1");

    let taken = server
        .put("/v1/items/user-2", r#"{"email": "ada@example.org"}"#)
        .await;
    taken.expect_error(409, "alias_taken");
    let error = &taken.json()["error"];
    assert_eq!(
        (&error["alias"], &error["holder"]),
        (&json!("/email-ada@example.org"), &json!("/user-1"))
    );
    let at_alias = server.put("/v1/items/email-ada@example.org", "{}").await;
    at_alias.expect_error(409, "path_is_alias");
    assert_eq!(at_alias.json()["error"]["item"], "/user-1");
    let invalid = server.put("/v1/items/user-3", r#"{"email": 7.5}"#).await;
    invalid.expect_error(422, "alias_invalid");
    assert_eq!(invalid.json()["error"]["member"], "email");
    let tx = json!({"ops": [
        {"op": "put", "path": "/user-4", "value": {"email": "x@example.org"}},
        {"op": "put", "path": "/user-5", "value": {"email": "ada@example.org"}}
    ]});
    let refused = server.post("/v1/transact", &tx).await;
    refused.expect_error(409, "alias_taken");
    assert_eq!(refused.json()["error"]["index"], 1);
    server
        .get("/v1/items/user-4")
        .await
        .expect_error(404, "not_found");
    // PATCH and DELETE through the alias act on the item.
    let patched = server
        .call(
            Method::PATCH,
            "/v1/items/email-ada@example.org",
            &[("content-type", "application/merge-patch+json")],
            r#"{"n": 1}"#,
        )
        .await
        .expect(200);
    assert_eq!(patched["path"], "/user-1");
    server
        .delete("/v1/items/email-ada@example.org")
        .await
        .expect(200);
    server
        .get("/v1/items/user-1")
        .await
        .expect_error(404, "not_found");
}

/// A template added to a namespace with items: reads through it answer 503 `alias_building`
/// (with `Retry-After`) until its build is done; a build is retried only from a conflict, and
/// only by an admin.
#[tokio::test]
async fn alias_builds_over_http() {
    let mut server = TestServer::with_tokens(&[("w", Scope::ReadWrite), ("a", Scope::Admin)]);
    server.use_token("a");
    for n in 1..=3 {
        server
            .put_item(&format!("/order-{n}"), r#"{"status": "open"}"#)
            .await;
    }
    // Defined through the store, whose tests run no background builder: the build waits.
    let definition = pathdb_store::Definition {
        aliases: vec![pathdb_store::AliasDefinition {
            path: "/status-{status}/order-{@order}".into(),
        }],
        ..pathdb_store::Definition::default()
    };
    server
        .store
        .define_namespace("order", definition, None)
        .expect("defined");
    let waiting = server.get("/v1/items/status-open/order-1").await;
    waiting.expect_error(503, "alias_building");
    assert_eq!(waiting.headers["retry-after"], "1");
    assert_eq!(waiting.json()["error"]["state"], "building");
    server
        .get("/v1/list/status-open")
        .await
        .expect_error(503, "alias_building");
    let state = server.get("/v1/namespaces/order").await.expect(200);
    assert_eq!(state["aliases"][0]["state"], "building");
    let not_conflict = server
        .post(
            "/v1/namespaces/order/aliases/retry",
            &json!({"path": "/status-{status}/order-{@order}"}),
        )
        .await;
    not_conflict.expect_error(400, "invalid_request");
    server.use_token("w");
    server
        .post(
            "/v1/namespaces/order/aliases/retry",
            &json!({"path": "/status-{status}/order-{@order}"}),
        )
        .await
        .expect_error(403, "forbidden");
    server.store.run_alias_builds().expect("built");
    let state = server.get("/v1/namespaces/order").await.expect(200);
    assert_eq!(
        state["aliases"][0],
        json!({"path": "/status-{status}/order-{@order}", "state": "ready", "checked": 3, "written": 3})
    );
    assert_eq!(
        server.list_paths("/v1/list/status-open").await,
        ["/order-1", "/order-2", "/order-3"]
    );
}
