use super::*;

#[test]
fn configured_origins_are_scheme_host_and_port() {
    for ok in [
        "http://localhost:3000",
        "https://App.Example",
        "http://127.0.0.1:8080",
        "http://[::1]:9",
    ] {
        AllowedOrigins::new([ok]).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    for bad in [
        "localhost:3000",
        "ftp://x",
        "http://",
        "http://x/",
        "http://x/path",
        "http://u@x",
        "*",
        "null",
        "http://x?q",
    ] {
        assert!(AllowedOrigins::new([bad]).is_err(), "{bad}");
    }
}

#[test]
fn allows_configured_and_same_origin_only() {
    let origins = AllowedOrigins::new(["https://app.example"]).expect("origins");
    let value = |s: &str| HeaderValue::from_str(s).expect("value");
    assert!(origins.allows(&value("https://app.example"), None));
    assert!(origins.allows(&value("https://APP.example"), None));
    assert!(!origins.allows(&value("http://app.example"), None));
    assert!(!origins.allows(&value("https://app.example.evil"), None));
    assert!(origins.allows(&value("http://127.0.0.1:7070"), Some("127.0.0.1:7070")));
    assert!(!origins.allows(&value("http://127.0.0.1:7071"), Some("127.0.0.1:7070")));
    assert!(!origins.allows(&value("null"), Some("127.0.0.1:7070")));
}

#[test]
fn loopback_hosts() {
    for host in [
        "localhost",
        "LOCALHOST:7070",
        "127.0.0.1",
        "127.0.0.1:7070",
        "127.8.9.1:1",
        "[::1]",
        "[::1]:7070",
    ] {
        assert!(is_loopback_host(host), "{host}");
    }
    for host in [
        "evil.example",
        "evil.example:7070",
        "localhost.evil.example",
        "10.0.0.1:7070",
        "[::2]:7070",
        "0.0.0.0:7070",
        "",
    ] {
        assert!(!is_loopback_host(host), "{host}");
    }
}
