//! Through a real listener on 127.0.0.1:0 with our own shutdown future: racing conditional
//! writes, and shutdown finishing what was acknowledged.

use pathdb_server::{AppState, Auth, router};
use pathdb_store::backend::{FileBackend, FileOptions};
use pathdb_store::{Store, StoreOptions};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Barrier;
use tokio::sync::oneshot;

/// One HTTP/1.1 exchange on a fresh connection: (status, body).
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("receive");
    let text = String::from_utf8(response).expect("UTF-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete response");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line: {head}"));
    (status, body.to_owned())
}

struct Running {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
    store: Store<FileBackend>,
    _dir: tempfile::TempDir,
}

async fn start() -> Running {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(
        dir.path().join("t.pathdb"),
        FileOptions::default(),
        StoreOptions::default(),
    )
    .expect("open");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = router(AppState::new(store.clone()), Auth::default());
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(pathdb_server::serve(listener, app, async move {
        let _ = stopped.await;
    }));
    Running {
        addr,
        stop,
        server,
        store,
        _dir: dir,
    }
}

impl Running {
    async fn stop(self) -> Store<FileBackend> {
        let _ = self.stop.send(());
        self.server
            .await
            .expect("server task")
            .expect("server ends cleanly");
        self.store
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_creates_have_exactly_one_winner() {
    let running = start().await;
    let addr = running.addr;
    const RACERS: usize = 12;
    const ROUNDS: usize = 4;
    let outcomes = tokio::task::spawn_blocking(move || {
        (0..ROUNDS)
            .map(|round| {
                let barrier = Barrier::new(RACERS);
                std::thread::scope(|s| {
                    let handles: Vec<_> = (0..RACERS)
                        .map(|racer| {
                            let barrier = &barrier;
                            s.spawn(move || {
                                barrier.wait();
                                http(
                                    addr,
                                    "PUT",
                                    &format!("/v1/items/race-{round}/lock"),
                                    &[("If-None-Match", "*")],
                                    &format!(r#"{{"owner": {racer}}}"#),
                                )
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().expect("racer"))
                        .collect::<Vec<_>>()
                })
            })
            .collect::<Vec<_>>()
    })
    .await
    .expect("clients");

    for (round, replies) in outcomes.iter().enumerate() {
        let winners: Vec<&(u16, String)> = replies.iter().filter(|(s, _)| *s == 201).collect();
        assert_eq!(winners.len(), 1, "round {round}: {replies:?}");
        for (status, body) in replies.iter().filter(|(s, _)| *s != 201) {
            assert_eq!(*status, 412, "{body}");
            let error: Value = serde_json::from_str(body).expect("error JSON");
            assert_eq!(error["error"]["code"], "condition_failed");
        }
        let winner: Value = serde_json::from_str(&winners[0].1).expect("item JSON");
        let (status, stored) = tokio::task::spawn_blocking(move || {
            http(
                addr,
                "GET",
                &format!("/v1/items/race-{round}/lock"),
                &[],
                "",
            )
        })
        .await
        .expect("get");
        assert_eq!(status, 200);
        let stored: Value = serde_json::from_str(&stored).expect("item JSON");
        assert_eq!(stored, winner, "the stored item is the winner's");
        assert_eq!(stored["version"], 1);
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optimistic_increments_lose_no_update() {
    let running = start().await;
    let addr = running.addr;
    http(addr, "PUT", "/v1/items/counter-1", &[], "0");
    const WRITERS: usize = 4;
    const INCREMENTS: usize = 8;
    let conflicts = tokio::task::spawn_blocking(move || {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..WRITERS)
                .map(|_| {
                    s.spawn(move || {
                        let mut conflicts = 0;
                        for _ in 0..INCREMENTS {
                            // Bounded: each retry means another writer succeeded.
                            for attempt in 0.. {
                                assert!(attempt < WRITERS * INCREMENTS, "starved");
                                let (status, body) =
                                    http(addr, "GET", "/v1/items/counter-1", &[], "");
                                assert_eq!(status, 200, "{body}");
                                let item: Value = serde_json::from_str(&body).expect("item");
                                let version = item["version"].to_string();
                                let next = item["value"].as_u64().expect("number") + 1;
                                let (status, body) = http(
                                    addr,
                                    "PUT",
                                    "/v1/items/counter-1",
                                    &[("If-Match", &format!("\"{version}\""))],
                                    &next.to_string(),
                                );
                                match status {
                                    200 => break,
                                    412 => conflicts += 1,
                                    _ => panic!("{status} {body}"),
                                }
                            }
                        }
                        conflicts
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("writer"))
                .sum::<usize>()
        })
    })
    .await
    .expect("clients");
    let store = running.stop().await;
    let item = store
        .get(&"/counter-1".parse().expect("path"))
        .expect("get")
        .expect("exists");
    let total = (WRITERS * INCREMENTS) as u64;
    assert_eq!(
        item.value.as_str(),
        total.to_string(),
        "{conflicts} conflicts"
    );
    assert_eq!(item.version, total + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_headers_are_refused_on_a_real_connection() {
    let running = start().await;
    let addr = running.addr;
    let big_header = "h".repeat(pathdb_server::MAX_HEADER_BYTES);
    let (status, body) = tokio::task::spawn_blocking(move || {
        http(
            addr,
            "GET",
            "/v1/items/u-1",
            &[("X-Padding", &big_header)],
            "",
        )
    })
    .await
    .expect("client");
    assert_eq!(status, 431, "{body}");
    let error: Value = serde_json::from_str(&body).expect("error JSON");
    assert_eq!(error["error"]["code"], "too_large");
    running.stop().await;
}
