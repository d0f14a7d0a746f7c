use super::ApiError;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use pathdb_store::{StorageError, StorageErrorKind};

/// The answer a storage error of `kind` gets: status, code, message, Retry-After.
fn answer(error: StorageError) -> (StatusCode, String, String, Option<String>) {
    let response = ApiError::from(pathdb_store::Error::Storage(error)).into_response();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let status = response.status();
    let body = body_bytes(response);
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    (
        status,
        body["error"]["code"].as_str().unwrap().to_owned(),
        body["error"]["message"].as_str().unwrap().to_owned(),
        retry_after,
    )
}

fn body_bytes(response: axum::response::Response) -> Vec<u8> {
    use http_body_util::BodyExt as _;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime
        .block_on(response.into_body().collect())
        .unwrap()
        .to_bytes()
        .to_vec()
}

#[test]
fn each_storage_fault_is_named_once_with_its_status() {
    let enospc = std::io::Error::from_raw_os_error(28);
    let (status, code, message, retry) = answer(StorageError::io("commit", &enospc));
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::INSUFFICIENT_STORAGE, "insufficient_storage")
    );
    assert!(message.starts_with("disk full: commit: "), "{message}");
    assert!(message.contains("No space left on device"), "{message}");
    assert_eq!(retry.as_deref(), Some("1"));

    // Another I/O error: 503 with the OS error's text.
    let eio = std::io::Error::from_raw_os_error(5);
    let (status, code, message, _) = answer(StorageError::io("read page", &eio));
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
    );
    assert!(message.starts_with("I/O error: read page: "), "{message}");
    assert!(message.contains("Input/output error"), "{message}");

    let (status, code, message, retry) = answer(
        StorageError::msg("TransactWriteItems: gave up after 6 attempts")
            .with_kind(StorageErrorKind::OutcomeUnknown),
    );
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "outcome_unknown")
    );
    assert!(message.starts_with("write outcome unknown: "), "{message}");
    // The client must read before it retries: no invitation to retry blindly.
    assert_eq!(retry, None);

    let (status, code, _, retry) =
        answer(StorageError::msg("throttled").with_kind(StorageErrorKind::Unavailable));
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
    );
    assert_eq!(retry.as_deref(), Some("1"));

    // Each prefix once: the issue found "storage error: storage error: commit".
    let (_, _, full, _) = answer(StorageError::io("commit", &enospc));
    let (_, _, io, _) = answer(StorageError::io("read page", &eio));
    assert_eq!(full.matches("disk full").count(), 1, "{full}");
    assert_eq!(io.matches("I/O error").count(), 1, "{io}");
    for message in [full, io] {
        assert_eq!(message.matches("storage error").count(), 0, "{message}");
    }
}
