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
