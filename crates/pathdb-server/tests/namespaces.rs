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
