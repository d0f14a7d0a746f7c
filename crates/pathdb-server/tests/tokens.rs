//! Altered tokens over HTTP: every single-bit flip, truncation and extension of a valid list
//! page token, groups page token and change token is a 400 with the token's own error
//! code, never a page. The flips cover the token's whole text, bytes that are not base64 (or not
//! UTF-8) included, sent percent-encoded as a client would.

use crate::TestServer;
use proptest::prelude::*;

/// Percent-encodes every byte but the unreserved ones (RFC 3986), so any byte string reaches
/// the server's query decoding as sent.
fn query_encode(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The token's text with every single bit flipped, one at a time, then every truncation.
fn flips_and_truncations(token: &str) -> Vec<Vec<u8>> {
    let bytes = token.as_bytes();
    let mut out = Vec::new();
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut altered = bytes.to_vec();
            altered[i] ^= 1 << bit;
            out.push(altered);
        }
    }
    out.extend((0..bytes.len()).map(|len| bytes[..len].to_vec()));
    out
}

/// A server with a few items, and one valid token of each kind with the URI that takes it.
async fn tokens(server: &TestServer) -> Vec<(&'static str, String, &'static str)> {
    let since = server.get("/v1/changes/k-1").await.expect(200)["next_token"]
        .as_str()
        .unwrap()
        .to_owned();
    for path in ["/k-1/a-1", "/k-1/a-1/b-1", "/k-1/a-2", "/k-1/a-10", "/k-2"] {
        server.put_item(path, "null").await;
    }
    let page = |uri: &'static str| async move {
        server.get(uri).await.expect(200)["next_page_token"]
            .as_str()
            .unwrap_or_else(|| panic!("{uri} has a next page"))
            .to_owned()
    };
    vec![
        (
            "/v1/list/k-1?limit=1&page_token=",
            page("/v1/list/k-1?limit=1").await,
            "invalid_page_token",
        ),
        (
            "/v1/list/k-1?children=true&reverse=true&limit=1&page_token=",
            page("/v1/list/k-1?children=true&reverse=true&limit=1").await,
            "invalid_page_token",
        ),
        (
            "/v1/groups?limit=1&page_token=",
            page("/v1/groups?limit=1").await,
            "invalid_page_token",
        ),
        ("/v1/changes/k-1?since=", since, "invalid_change_token"),
    ]
}

#[tokio::test]
async fn every_bit_flip_and_truncation_of_a_token_is_a_400() {
    let server = TestServer::new();
    for (uri, token, code) in tokens(&server).await {
        server.get(&format!("{uri}{token}")).await.expect(200);
        for altered in flips_and_truncations(&token) {
            let reply = server
                .get(&format!("{uri}{}", query_encode(&altered)))
                .await;
            assert_eq!(
                reply.status,
                400,
                "{uri} with {:?} (from {token}): {}",
                String::from_utf8_lossy(&altered),
                reply.text()
            );
            // Bytes that are not UTF-8 fail the query's decoding before the token is read.
            if std::str::from_utf8(&altered).is_ok() {
                reply.expect_error(400, code);
            }
        }
    }
}

/// A token of one kind is not a token of another: a listing's changes token is no page token,
/// and a page token is no change token.
#[tokio::test]
async fn a_token_of_another_kind_is_a_400() {
    let server = TestServer::new();
    server.put_item("/x-1/a-1", "1").await;
    server.put_item("/x-1/a-2", "1").await;
    let first = server.get("/v1/list/x-1?limit=1").await.expect(200);
    let changes = first["changes_token"].as_str().unwrap();
    let page = first["next_page_token"].as_str().unwrap();
    server
        .get(&format!("/v1/list/x-1?limit=1&page_token={changes}"))
        .await
        .expect_error(400, "invalid_page_token");
    server
        .get(&format!("/v1/changes/x-1?since={page}"))
        .await
        .expect_error(400, "invalid_change_token");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any bytes appended to a valid token.
    #[test]
    fn extended_tokens_are_a_400(tail in proptest::collection::vec(any::<u8>(), 1..24)) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let server = TestServer::new();
            for (uri, token, _) in tokens(&server).await {
                let mut extended = token.as_bytes().to_vec();
                extended.extend_from_slice(&tail);
                let reply = server.get(&format!("{uri}{}", query_encode(&extended))).await;
                assert_eq!(reply.status, 400, "{uri} + {tail:?}: {}", reply.text());
            }
        });
    }
}
