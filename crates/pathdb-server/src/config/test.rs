use super::*;

#[test]
fn secrets_stay_out_of_debug_and_errors() {
    let mut config: ServerConfig = toml::from_str(
        r#"
        cors_origins = ["http://localhost:3000"]
        [[tokens]]
        token = "toml-secret-1"
        scope = "read"
        "#,
    )
    .expect("config");
    config
        .add_env_tokens("env-secret-2=read-write")
        .expect("env tokens");
    let text = format!("{config:?}");
    assert!(!text.contains("secret"), "{text}");
    assert!(text.contains("localhost:3000"), "{text}");
    // A malformed entry may be a bare secret: the error does not repeat it.
    let error = config
        .add_env_tokens("env-secret-3")
        .expect_err("no scope")
        .to_string();
    assert!(!error.contains("secret"), "{error}");
    assert_eq!(config.allowed_origins().map(|_| ()).ok(), Some(()));
}

#[test]
fn cors_origins_are_checked() {
    let config: ServerConfig =
        toml::from_str(r#"cors_origins = ["localhost:3000"]"#).expect("config");
    assert!(matches!(
        config.allowed_origins(),
        Err(ConfigError::InvalidOrigin(_))
    ));
}

#[test]
fn tokens_take_a_scope_or_a_role_with_variables() {
    let config: ServerConfig = toml::from_str(
        r#"
        [[tokens]]
        token = "a"
        scope = "admin"
        [[tokens]]
        token = "b"
        role = "member"
        vars = { team = 7 }
        [[roles]]
        name = "member"
        rules = [{ path = "/team-{team}/**", allow = ["read", "write"] }]
        [jwt]
        issuer = "https://id.example"
        "#,
    )
    .expect("config");
    let tokens = config.configured_tokens().expect("tokens");
    assert_eq!(tokens[0].role, "admin");
    assert_eq!(tokens[1].role, "member");
    assert_eq!(tokens[1].vars["team"], 7);
    assert_eq!(config.roles[0].rules[0].path, "/team-{team}/**");
    // Issuer alone names no keys: no verifier.
    assert!(config.jwt.as_ref().unwrap().verifier().unwrap().is_none());
    let both: ServerConfig = toml::from_str(
        r#"
        [[tokens]]
        token = "c"
        scope = "read"
        role = "member"
        "#,
    )
    .expect("config");
    assert!(matches!(
        both.configured_tokens(),
        Err(ConfigError::TokenRole(1))
    ));
}
