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
