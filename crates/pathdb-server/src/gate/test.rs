use super::*;
use crate::origin::AllowedOrigins;
use axum::body::Body;
use std::convert::Infallible;
use tower::ServiceBuilder;

/// An answer with headers of its own (`Vary` optionally, and an `Access-Control-Expose-Headers`),
/// to see how CORS merges its headers into them.
fn answer(
    own_vary: bool,
) -> impl Service<Request, Response = Response, Error = Infallible, Future: Send> + Clone + Send {
    tower::service_fn(move |_: Request| async move {
        let mut response = Response::new(Body::empty());
        let headers = response.headers_mut();
        if own_vary {
            headers.insert(header::VARY, HeaderValue::from_static("accept"));
        }
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("x-own"),
        );
        Ok::<_, Infallible>(response)
    })
}

fn head(response: &Response) -> (StatusCode, Vec<(String, Vec<u8>)>) {
    let headers = response.headers().iter();
    let headers = headers.map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()));
    (response.status(), headers.collect())
}

/// `gate::Cors` answers every request as tower-http's `Cors` does: requests without `Origin`
/// through its fixed headers, the rest through tower-http itself.
#[tokio::test]
async fn cors_answers_as_tower_http_does() {
    let page = "http://localhost:3000";
    for origins in [
        AllowedOrigins::default(),
        AllowedOrigins::new([page]).unwrap(),
    ] {
        for method in ["GET", "PUT", "POST", "DELETE", "HEAD", "PATCH", "OPTIONS"] {
            for origin in [None, Some(page), Some("http://elsewhere.example")] {
                for own_vary in [false, true] {
                    let request = || {
                        let mut request = Request::builder().method(method).uri("/v1/items/a");
                        if let Some(origin) = origin {
                            request = request
                                .header(header::ORIGIN, origin)
                                .header(header::ACCESS_CONTROL_REQUEST_METHOD, "PUT");
                        }
                        request.body(Body::empty()).unwrap()
                    };
                    let theirs = origins.cors_layer().layer(answer(own_vary));
                    let theirs = theirs.oneshot(request()).await.unwrap();
                    let ours = CorsLayer(origins.cors_layer()).layer(answer(own_vary));
                    let ours = ours.oneshot(request()).await.unwrap();
                    assert_eq!(
                        head(&ours),
                        head(&theirs),
                        "{method} from {origin:?}, own Vary {own_vary}"
                    );
                }
            }
        }
    }
}

/// A service that answers after `after`, or never.
fn slow(
    after: Option<std::time::Duration>,
) -> impl Service<Request, Response = Response, Error = Infallible, Future: Send> + Clone + Send {
    tower::service_fn(move |_: Request| async move {
        match after {
            Some(after) => tokio::time::sleep(after).await,
            None => std::future::pending::<()>().await,
        }
        Ok::<_, Infallible>(Response::new(Body::from("done")))
    })
}

/// `gate::Timeout` answers as tower-http's `TimeoutLayer::with_status_code(408)` does: the
/// service's answer in time, an empty 408 after the limit.
#[tokio::test]
async fn timeout_answers_as_tower_http_does() {
    use http_body_util::BodyExt;
    let limit = std::time::Duration::from_millis(50);
    for after in [
        Some(std::time::Duration::ZERO),
        Some(limit / 5),
        None,
        Some(limit * 20),
    ] {
        let request = || Request::new(Body::empty());
        let theirs =
            tower_http::timeout::TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, limit);
        let theirs = theirs.layer(slow(after)).oneshot(request()).await.unwrap();
        let started = std::time::Instant::now();
        let ours = TimeoutLayer(limit)
            .layer(slow(after))
            .oneshot(request())
            .await
            .unwrap();
        let took = started.elapsed();
        assert_eq!(head(&ours), head(&theirs), "{after:?}");
        let ours = ours.into_body().collect().await.unwrap().to_bytes();
        let theirs = theirs.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(ours, theirs, "{after:?}");
        if after.is_none_or(|after| after > limit) {
            assert!(took >= limit && took < limit * 10, "{after:?}: {took:?}");
        }
    }
}

/// Log lines written while a test's subscriber is the default.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// Runs `requests` through `RequestIdLayer` in front of a service answering each with `status`
/// (an `ApiError` for errors), logging at `level`; returns the answers' request ids and the log.
fn logged(level: tracing::Level, status: StatusCode, uri: &str) -> (String, String) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let service = RequestIdLayer.layer(tower::service_fn(move |_: Request| async move {
        let response = if status.is_success() {
            Response::new(Body::empty())
        } else {
            ApiError::new(status, "unavailable", "disk on fire").into_response()
        };
        Ok::<_, Infallible>(response)
    }));
    let request = Request::builder()
        .method("PUT")
        .uri(uri)
        .body(Body::empty())
        .unwrap();
    let response = tracing::subscriber::with_default(subscriber, || {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(service.oneshot(request))
            .unwrap()
    });
    let id = response.headers()[&REQUEST_ID].to_str().unwrap().to_owned();
    (id, captured.text())
}

/// A 5xx answer is one error line naming the request and the cause; other answers log nothing
/// unless the access log's debug level is on, which has a line per request.
#[test]
fn the_request_log_names_failed_requests() {
    let (id, log) = logged(
        tracing::Level::INFO,
        StatusCode::SERVICE_UNAVAILABLE,
        "/v1/items/a-1?x=1",
    );
    assert_eq!(log.lines().count(), 1, "{log}");
    for part in [
        "ERROR",
        "request failed",
        &format!("request_id=\"{id}\""),
        "method=PUT",
        "uri=/v1/items/a-1?x=1",
        "status=503",
        "code=\"unavailable\"",
        "error=\"disk on fire\"",
    ] {
        assert!(log.contains(part), "{part:?} in {log}");
    }
    let (_, log) = logged(tracing::Level::INFO, StatusCode::OK, "/v1/items/a-1");
    assert_eq!(log, "");
    let (id, log) = logged(tracing::Level::DEBUG, StatusCode::OK, "/v1/items/a-1");
    assert_eq!(log.lines().count(), 1, "{log}");
    for part in [
        "DEBUG",
        "pathdb_server::access",
        &format!("request_id=\"{id}\""),
        "status=200",
        "micros=",
    ] {
        assert!(log.contains(part), "{part:?} in {log}");
    }
}

/// A check that notes what it saw in a shared log, and refuses requests with `x-refuse: <name>`.
#[derive(Clone)]
struct Noting(&'static str, Arc<std::sync::Mutex<Vec<String>>>);

impl Check for Noting {
    type Memo = (&'static str, Arc<std::sync::Mutex<Vec<String>>>);

    fn before(&self, request: &mut Request) -> (Self::Memo, Option<Response>) {
        self.1.lock().unwrap().push(format!("{} before", self.0));
        let refused = request
            .headers()
            .get("x-refuse")
            .is_some_and(|v| v.as_bytes() == self.0.as_bytes());
        let refusal = refused.then(|| {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::FORBIDDEN;
            response
        });
        ((self.0, self.1.clone()), refusal)
    }

    fn after((name, log): Self::Memo, response: &mut Response) {
        let status = response.status().as_u16();
        log.lock().unwrap().push(format!("{name} after {status}"));
    }
}

/// A pair of checks runs as the two nested check layers do, and [`answer_now`] runs a check as
/// its layer does: the same steps in the same order, whoever refuses.
#[tokio::test]
async fn a_pair_of_checks_runs_as_two_nested_layers() {
    for refuse in ["", "outer", "inner"] {
        let request = || {
            Request::get("/x")
                .header("x-refuse", refuse)
                .body(Body::empty())
                .unwrap()
        };
        let ok = || {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::NO_CONTENT;
            response
        };
        let run = async |how: u8| {
            let log = Arc::new(std::sync::Mutex::new(Vec::new()));
            let (outer, inner) = (Noting("outer", log.clone()), Noting("inner", log.clone()));
            let answer = tower::service_fn(|_: Request| async { Ok::<_, Infallible>(ok()) });
            let response = match how {
                0 => {
                    let nested = ServiceBuilder::new()
                        .layer(CheckLayer(outer))
                        .layer(CheckLayer(inner));
                    nested.service(answer).oneshot(request()).await.unwrap()
                }
                1 => {
                    let pair = CheckLayer((outer, inner));
                    pair.layer(answer).oneshot(request()).await.unwrap()
                }
                _ => answer_now(&(outer, inner), request(), |_, _| ok()),
            };
            let log = log.lock().unwrap().clone();
            (response.status(), log)
        };
        let nested = run(0).await;
        if refuse.is_empty() {
            let steps = [
                "outer before",
                "inner before",
                "inner after 204",
                "outer after 204",
            ];
            assert_eq!(
                nested,
                (StatusCode::NO_CONTENT, steps.map(String::from).to_vec())
            );
        }
        assert_eq!(run(1).await, nested, "refused by {refuse:?}");
        assert_eq!(run(2).await, nested, "refused by {refuse:?}");
    }
}
