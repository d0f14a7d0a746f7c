//! The OpenAPI document as generated clients read it: operation ids, tagged unions with a
//! discriminator, media types, optional security, and the headers responses carry.

use crate::TestServer;
use serde_json::{Value, json};

async fn document() -> Value {
    TestServer::new().get("/openapi.json").await.expect(200)
}

fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("path item") {
            out.push((method.clone(), path.clone(), operation));
        }
    }
    out
}

#[tokio::test]
async fn every_operation_has_a_stable_operation_id() {
    let doc = document().await;
    let mut ids: Vec<(String, String, String)> = operations(&doc)
        .into_iter()
        .map(|(method, path, op)| {
            let id = op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} has no operationId"))
                .to_owned();
            (method, path, id)
        })
        .collect();
    ids.sort();
    let expected = [
        ("get", "/healthz", "healthz"),
        ("get", "/metrics", "metrics"),
        ("get", "/readyz", "readyz"),
        ("get", "/v1/export", "exportItems"),
        ("post", "/v1/get", "getMany"),
        ("get", "/v1/groups", "listGroups"),
        ("get", "/v1/history/{path}", "getHistory"),
        ("post", "/v1/import", "importItems"),
        ("delete", "/v1/items/{path}", "deleteItem"),
        ("get", "/v1/items/{path}", "getItem"),
        ("put", "/v1/items/{path}", "putItem"),
        ("get", "/v1/keys/{path}", "explainKey"),
        ("get", "/v1/list/{prefix}", "listItems"),
        ("get", "/v1/session", "getSession"),
        ("post", "/v1/transact", "transact"),
        ("get", "/v1/changes/{prefix}", "getChanges"),
        ("post", "/v1/items/{path}", "createItem"),
        ("post", "/v1/move", "moveSubtree"),
        ("post", "/v1/copy", "copySubtree"),
        ("patch", "/v1/items/{path}", "patchItem"),
        ("get", "/v1/namespaces", "listNamespaces"),
        ("get", "/v1/namespaces/{namespace}", "getNamespace"),
        (
            "get",
            "/v1/namespaces/{namespace}/versions",
            "listNamespaceVersions",
        ),
        (
            "get",
            "/v1/namespaces/{namespace}/versions/{version}",
            "getNamespaceVersion",
        ),
        ("put", "/v1/namespaces/{namespace}", "putNamespace"),
        ("delete", "/v1/namespaces/{namespace}", "deleteNamespace"),
        (
            "get",
            "/v1/namespaces/{namespace}/violations",
            "listNamespaceViolations",
        ),
        (
            "post",
            "/v1/namespaces/{namespace}/aliases/retry",
            "retryAliasBuild",
        ),
        ("get", "/v1/roles", "listRoles"),
        ("get", "/v1/roles/{name}", "getRole"),
        ("put", "/v1/roles/{name}", "putRole"),
        ("delete", "/v1/roles/{name}", "deleteRole"),
        ("get", "/v1/tokens", "listTokens"),
        ("post", "/v1/tokens", "createToken"),
        ("get", "/v1/tokens/{id}", "getToken"),
        ("delete", "/v1/tokens/{id}", "revokeToken"),
        ("get", "/v1/backup", "takeBackup"),
        ("get", "/v1/archive", "archiveStatus"),
    ];
    let mut expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(m, p, i)| ((*m).to_owned(), (*p).to_owned(), (*i).to_owned()))
        .collect();
    expected.sort();
    assert_eq!(ids, expected);
}

#[tokio::test]
async fn transaction_ops_and_results_are_discriminated_unions() {
    let doc = document().await;
    let schemas = &doc["components"]["schemas"];
    for (union, prefix) in [("TxOpIn", "TxOp"), ("TxResultOut", "TxResult")] {
        let schema = &schemas[union];
        let refs: Vec<&str> = schema["oneOf"]
            .as_array()
            .expect("oneOf")
            .iter()
            .map(|v| v["$ref"].as_str().expect("each variant is a reference"))
            .collect();
        let mut mapping = json!({
            "put": format!("#/components/schemas/{prefix}Put"),
            "delete": format!("#/components/schemas/{prefix}Delete"),
            "check": format!("#/components/schemas/{prefix}Check"),
            "check_list": format!("#/components/schemas/{prefix}CheckList"),
        });
        if union == "TxOpIn" {
            // A create's and a patch's result is the item it put.
            mapping["create"] = json!(format!("#/components/schemas/{prefix}Create"));
            mapping["patch"] = json!(format!("#/components/schemas/{prefix}Patch"));
        }
        assert_eq!(schema["discriminator"]["propertyName"], "op", "{schema}");
        assert_eq!(schema["discriminator"]["mapping"], mapping, "{schema}");
        for (tag, reference) in mapping.as_object().expect("mapping") {
            assert!(refs.contains(&reference.as_str().expect("ref")), "{refs:?}");
            let name = reference
                .as_str()
                .expect("ref")
                .rsplit('/')
                .next()
                .expect("name");
            let variant = &schemas[name];
            assert_eq!(
                variant["properties"]["op"]["enum"],
                json!([tag]),
                "{variant}"
            );
            assert!(
                variant["required"]
                    .as_array()
                    .expect("required")
                    .contains(&json!("op")),
                "{variant}"
            );
        }
    }
}

#[tokio::test]
async fn media_types_security_and_etags_are_declared() {
    let doc = document().await;
    let import = &doc["paths"]["/v1/import"]["post"]["requestBody"]["content"];
    assert!(import["application/x-ndjson"].is_object(), "{import}");
    assert!(import["application/jsonl"].is_object(), "{import}");
    let export = &doc["paths"]["/v1/export"]["get"]["responses"]["200"]["content"];
    assert!(export["application/x-ndjson"].is_object(), "{export}");
    let put = &doc["paths"]["/v1/items/{path}"]["put"];
    assert!(put["requestBody"]["content"]["application/json"].is_object());
    for status in ["412", "415"] {
        assert!(put["responses"][status].is_object(), "PUT {status}");
    }
    assert!(doc["paths"]["/v1/items/{path}"]["get"]["responses"]["304"].is_object());

    for (method, path, op) in operations(&doc) {
        let open = ["/healthz", "/readyz"].contains(&path.as_str());
        if open {
            assert!(op.get("security").is_none(), "{method} {path}");
        } else {
            // Tokens are optional (a local server has none): anonymous or bearer.
            assert_eq!(
                op["security"],
                json!([{}, {"bearer": []}]),
                "{method} {path}"
            );
        }
        for (status, response) in op["responses"].as_object().expect("responses") {
            let carries_etag =
                path == "/v1/items/{path}" && matches!(status.as_str(), "200" | "201" | "304");
            if carries_etag {
                assert!(
                    response["headers"]["ETag"]["schema"].is_object(),
                    "{method} {path} {status}: {response}"
                );
            }
        }
    }
}

#[tokio::test]
async fn descriptions_carry_no_implementation_notes() {
    let text = document().await.to_string();
    for internal in [
        "TxOpFields",
        "RawValue",
        "serde",
        "[`",
        "redb",
        "spawn_blocking",
    ] {
        assert!(!text.contains(internal), "{internal:?} in the document");
    }
}
