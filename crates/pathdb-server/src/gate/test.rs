use super::*;
use crate::origin::AllowedOrigins;
use axum::body::Body;
use std::convert::Infallible;

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
