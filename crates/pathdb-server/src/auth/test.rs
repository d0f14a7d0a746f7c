use super::*;

fn auth() -> Auth {
    Auth::new(HashMap::from([
        ("correct-horse-battery".to_owned(), Scope::ReadWrite),
        ("reader-token-0001".to_owned(), Scope::Read),
    ]))
}

#[test]
fn only_the_exact_token_matches() {
    let auth = auth();
    assert_eq!(
        auth.scope_of("correct-horse-battery"),
        Some(Scope::ReadWrite)
    );
    assert_eq!(auth.scope_of("reader-token-0001"), Some(Scope::Read));
    for guess in [
        "",
        "c",
        "correct-horse-batter",
        "correct-horse-batterz",
        "correct-horse-battery ",
        "correct-horse-batteryy",
        "CORRECT-HORSE-BATTERY",
        "reader-token-0002",
    ] {
        assert_eq!(auth.scope_of(guess), None, "{guess:?}");
    }
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
