use super::*;

fn auth() -> Auth {
    Auth::new(HashMap::from([
        ("correct-horse-battery".to_owned(), Scope::ReadWrite),
        ("reader-token-0001".to_owned(), Scope::Read),
    ]))
}

fn bearer(token: &str) -> HeaderValue {
    HeaderValue::from_str(&format!("Bearer {token}")).unwrap()
}

fn role_of(auth: &Auth, token: &str) -> Option<String> {
    match auth.resolve(Some(&bearer(token)), false) {
        Resolution::Granted(access) => Some(access.principal().role.clone()),
        _ => None,
    }
}

#[test]
fn only_the_exact_token_matches() {
    let auth = auth();
    assert_eq!(
        role_of(&auth, "correct-horse-battery").as_deref(),
        Some("read-write")
    );
    assert_eq!(role_of(&auth, "reader-token-0001").as_deref(), Some("read"));
    for guess in [
        "c",
        "correct-horse-batter",
        "correct-horse-batterz",
        "correct-horse-batteryy",
        "CORRECT-HORSE-BATTERY",
        "reader-token-0002",
        "pdb_00000000000000000000_secret",
    ] {
        assert_eq!(role_of(&auth, guess), None, "{guess:?}");
    }
}

#[test]
fn a_request_without_a_bearer_token_is_refused() {
    let auth = auth();
    for header in [None, Some(HeaderValue::from_static("Basic abc"))] {
        assert!(matches!(
            auth.resolve(header.as_ref(), false),
            Resolution::Refused(Refusal::MissingToken)
        ));
    }
    // The scheme is case-insensitive.
    let lower = HeaderValue::from_static("bearer reader-token-0001");
    assert!(matches!(
        auth.resolve(Some(&lower), false),
        Resolution::Granted(_)
    ));
}

#[test]
fn built_in_roles_grant_what_the_scopes_did() {
    let auth = auth();
    let path: KeyPath = "/user-7/post-1".parse().unwrap();
    let Resolution::Granted(reader) = auth.resolve(Some(&bearer("reader-token-0001")), false)
    else {
        panic!("resolves")
    };
    assert!(reader.may(Op::Read, &path) && !reader.may(Op::Write, &path));
    assert!(reader.need_admin().is_err());
    let Resolution::Granted(writer) = auth.resolve(Some(&bearer("correct-horse-battery")), false)
    else {
        panic!("resolves")
    };
    assert!(writer.may(Op::Write, &path) && writer.need_admin().is_err());
    assert!(Access::open().need_admin().is_ok());
}

#[test]
fn dotted_variables_reach_into_claims() {
    let vars = serde_json::json!({"org": {"id": 7}, "sub": "alice"});
    let vars = vars.as_object().unwrap();
    assert_eq!(lookup(vars, "org.id"), Some(serde_json::json!(7)));
    assert_eq!(lookup(vars, "sub"), Some(serde_json::json!("alice")));
    assert_eq!(lookup(vars, "org.name"), None);
}

#[test]
fn debug_never_shows_a_token() {
    let text = format!("{:?}", auth());
    assert!(
        !text.contains("horse") && !text.contains("reader-token"),
        "{text}"
    );
    assert!(text.contains('2'), "says how many: {text}");
}
