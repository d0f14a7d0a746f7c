//! What one request costs the application itself, without sockets, hyper or a load generator
//! sharing the cores: the app over a copy of a database, driven with `oneshot` on one thread,
//! timed per request. On the wire these costs come back larger (caches are cold after the
//! kernel's share of each request), but they move together; see docs/benchmarks.md, "Gets
//! against the ceiling".
//!
//! ```sh
//! cargo build --release -p pathdb-server --example service
//! target/release/examples/service DB [REQUESTS] URI...   # e.g. /v1/items/bench-0/item-0
//! ```
//!
//! `DB` is opened as it is (make a copy of a database a server has open); `REQUESTS` defaults
//! to 200,000 per URI.

use axum::body::Body;
use axum::http::Request;
use pathdb_server::{AppState, Auth, router};
use pathdb_store::Store;
use tower::ServiceExt;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let db = args.next().ok_or("usage: service DB [REQUESTS] URI...")?;
    let mut uris: Vec<String> = args.collect();
    let requests = match uris.first().map(|first| first.parse::<u32>()) {
        Some(Ok(n)) => {
            uris.remove(0);
            n
        }
        _ => 200_000,
    };
    let store = Store::open(db, Default::default(), Default::default())?;
    let app = router(AppState::new(store), Auth::default());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    for uri in &uris {
        let started = std::time::Instant::now();
        let mut status = None;
        runtime.block_on(async {
            for _ in 0..requests {
                let request = Request::get(uri.as_str())
                    .header("host", "127.0.0.1")
                    .body(Body::empty())?;
                let response = app.clone().oneshot(request).await?;
                status = Some(response.status());
                axum::body::to_bytes(response.into_body(), usize::MAX).await?;
            }
            Ok::<_, Box<dyn std::error::Error>>(())
        })?;
        let micros = started.elapsed().as_secs_f64() * 1e6 / f64::from(requests.max(1));
        let status = status.map_or_else(|| "-".to_owned(), |s| s.as_u16().to_string());
        println!("{uri}: {micros:.2} us per request ({status})");
    }
    Ok(())
}
