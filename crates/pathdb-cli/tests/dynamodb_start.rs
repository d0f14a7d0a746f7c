//! `pathdb serve --backend dynamodb` checks at start that the endpoint implements
//! `TransactWriteItems` (every PathDB write is one) and refuses one that does not, exiting
//! non-zero with a message naming the operation: against a stand-in that answers every request
//! as dynalite answers `TransactWriteItems` (always run), and against dynalite itself when
//! `PATHDB_DYNALITE_ENDPOINT` names one (`scripts/dynamodb-local.sh start dynalite`).

use crate::pathdb_command;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};

/// A DynamoDB endpoint that knows no operation: every request is answered 400
/// `UnknownOperationException`, as dynalite answers `TransactWriteItems`. Lives as long as the
/// test process.
fn endpoint_without_transactions() -> String {
    loopback_endpoint(answer_unknown_operation)
}

/// A loopback port whose every connection `handle` takes, on a thread of its own; its URL. Lives
/// as long as the test process.
fn loopback_endpoint(handle: impl Fn(TcpStream) + Clone + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
    let url = format!("http://{}", listener.local_addr().expect("bound address"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let handle = handle.clone();
            std::thread::spawn(move || handle(stream));
        }
    });
    url
}

/// Answers each request on `stream` (HTTP/1.1, kept alive) until the client closes it.
fn answer_unknown_operation(stream: TcpStream) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0;
        let mut lines = 0;
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            lines += 1;
            if let Some((name, value)) = line.split_once(':')
                && name.trim().eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        if lines == 0 {
            return;
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let body = r#"{"__type":"com.amazon.coral.service#UnknownOperationException"}"#;
        let answer = format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Type: application/x-amz-json-1.0\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// `pathdb serve --backend dynamodb` on `endpoint`: it must exit by itself (it never listens).
fn serve(endpoint: &str) -> Output {
    serve_command(endpoint).output().expect("pathdb runs")
}

/// The command [`serve`] runs.
fn serve_command(endpoint: &str) -> Command {
    let mut command = pathdb_command();
    command
        .args([
            "serve",
            "--backend",
            "dynamodb",
            "--addr",
            "127.0.0.1:0",
            "--table",
            "pathdb-start-check",
            "--endpoint",
            endpoint,
            "--region",
            "us-east-1",
        ])
        .env("RUST_LOG", "warn");
    command
}

fn assert_refused(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(4),
        "exit status 4 (unavailable); stderr: {stderr}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("listening on"),
        "it must not listen"
    );
    assert!(
        stderr.contains("does not implement TransactWriteItems"),
        "{stderr}"
    );
}

#[test]
fn serve_refuses_an_endpoint_without_transact_write_items() {
    assert_refused(&serve(&endpoint_without_transactions()));
}

#[test]
fn serve_refuses_dynalite() {
    let Ok(endpoint) = std::env::var("PATHDB_DYNALITE_ENDPOINT") else {
        eprintln!(
            "skipped: PATHDB_DYNALITE_ENDPOINT is not set (scripts/dynamodb-local.sh start dynalite)"
        );
        return;
    };
    assert_refused(&serve(&endpoint));
}

/// A loopback port that counts the connections it accepts, answering nothing.
fn counting_endpoint() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&count);
    let url = loopback_endpoint(move |_stream| {
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    });
    (url, count)
}

#[test]
fn no_credentials_is_said_plainly_and_not_retried() {
    // A new user's first try: a local endpoint and no AWS variables. The SDK's chain ends at the
    // instance metadata service (disabled here, so that the test asks no address off this
    // machine) and fails; PathDB must say what is missing, at once, without sending anything.
    let (endpoint, connections) = counting_endpoint();
    let home = tempfile::tempdir().expect("a temporary HOME");
    let missing = home.path().join("none");
    let mut create_table = pathdb_command();
    create_table.args([
        "dynamodb",
        "create-table",
        "--table",
        "t",
        "--endpoint",
        &endpoint,
        "--region",
        "us-east-1",
    ]);
    for mut command in [create_table, serve_command(&endpoint)] {
        let args: Vec<_> = command.get_args().map(|a| a.to_owned()).collect();
        for name in [
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "AWS_PROFILE",
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        ] {
            command.env_remove(name);
        }
        let out = command
            .env("HOME", home.path())
            .env("AWS_CONFIG_FILE", &missing)
            .env("AWS_SHARED_CREDENTIALS_FILE", &missing)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("RUST_LOG", "warn")
            .output()
            .expect("pathdb runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert!(
            stderr.contains("no AWS credentials")
                && stderr.contains("AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x"),
            "{args:?}: {stderr}"
        );
        assert!(
            !stderr.contains("gave up after"),
            "{args:?} retried: {stderr}"
        );
    }
    assert_eq!(
        connections.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "nothing is sent without credentials"
    );
}
