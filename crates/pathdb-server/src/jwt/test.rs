use super::*;
use jsonwebtoken::EncodingKey;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};

fn fixture_path(name: &str) -> String {
    format!("{}/tests/fixtures/jwt/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixture_path(name)).expect("fixture")
}

fn rsa_a() -> EncodingKey {
    EncodingKey::from_rsa_pem(&fixture("rsa-a.key.pem")).expect("rsa-a")
}

fn rsa_b() -> EncodingKey {
    EncodingKey::from_rsa_pem(&fixture("rsa-b.key.pem")).expect("rsa-b")
}

fn secret(bytes: &[u8]) -> EncodingKey {
    EncodingKey::from_secret(bytes).expect("secret")
}

fn ec() -> EncodingKey {
    EncodingKey::from_ec_pem(&fixture("ec-p256.key.pem")).expect("ec-p256")
}

fn now() -> i64 {
    jsonwebtoken::get_current_timestamp() as i64
}

/// Claims that pass every check of [`config`].
fn claims() -> Value {
    json!({"exp": now() + 600, "role": "member", "iss": "https://id.example", "aud": "pathdb"})
}

/// `claims()` with `changes` merged in (a null removes the claim).
fn claims_with(changes: Value) -> Value {
    let mut claims = claims();
    for (name, value) in changes.as_object().expect("object") {
        match value {
            Value::Null => claims.as_object_mut().expect("object").remove(name),
            value => claims
                .as_object_mut()
                .expect("object")
                .insert(name.clone(), value.clone()),
        };
    }
    claims
}

/// A token with this header and claims, signed as the header's `alg` says (through
/// jsonwebtoken's signer, so any header can be made).
fn sign_raw(header: &Value, claims: &Value, key: &EncodingKey, algorithm: Algorithm) -> String {
    let message = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = jsonwebtoken::crypto::sign(message.as_bytes(), key, algorithm).expect("sign");
    format!("{message}.{signature}")
}

/// A token signed with `encode`.
fn sign(algorithm: Algorithm, kid: Option<&str>, key: &EncodingKey, claims: &Value) -> String {
    let mut header = jsonwebtoken::Header::new(algorithm);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, key).expect("encode")
}

fn rs256_a(claims: &Value) -> String {
    sign(Algorithm::RS256, Some("rsa-a"), &rsa_a(), claims)
}

fn config(jwks: &str) -> JwtConfig {
    JwtConfig {
        jwks: Some(jwks.to_owned()),
        issuer: Some("https://id.example".to_owned()),
        audience: Some("pathdb".to_owned()),
        leeway: Duration::ZERO,
        refresh: Duration::from_secs(3600),
        ..JwtConfig::default()
    }
}

fn verifier(jwks_fixture: &str) -> JwtVerifier {
    JwtVerifier::new(config(&fixture_path(jwks_fixture))).expect("verifier")
}

/// A JWK Set file holding the keys of these fixture sets.
fn jwks_file(dir: &tempfile::TempDir, name: &str, sets: &[&str]) -> PathBuf {
    let path = dir.path().join(name);
    write_jwks(&path, sets);
    path
}

fn write_jwks(path: &std::path::Path, sets: &[&str]) {
    std::fs::write(path, jwks_text(sets)).expect("write jwks");
}

fn jwks_text(sets: &[&str]) -> String {
    let mut keys = Vec::new();
    for set in sets {
        let set: Value = serde_json::from_slice(&fixture(set)).expect("fixture json");
        keys.extend(set["keys"].as_array().expect("keys").iter().cloned());
    }
    json!({ "keys": keys }).to_string()
}

#[test]
fn accepts_a_token_of_a_key_by_kid() {
    let verifier = verifier("jwks-a.json");
    let exp = now() + 600;
    let token = rs256_a(&claims_with(json!({"exp": exp, "org": {"id": 7}})));
    let verified = verifier.verify(&token).expect("accepted");
    assert_eq!(verified.role, "member");
    assert_eq!(verified.expires_at, Some(exp * 1_000_000));
    assert_eq!(verified.claim("org.id"), Some(&json!(7)));
    assert_eq!(verified.claim("iss"), Some(&json!("https://id.example")));
    assert_eq!(verified.claim("org.name"), None);
}

#[test]
fn accepts_es256_and_picks_the_only_key_of_the_family_without_kid() {
    let verifier = verifier("jwks-a-ec.json");
    let es = sign(Algorithm::ES256, None, &ec(), &claims());
    assert_eq!(verifier.verify(&es).expect("es256").role, "member");
    let es = sign(Algorithm::ES256, Some("ec-p256"), &ec(), &claims());
    assert!(verifier.verify(&es).is_ok());
    let rs = sign(Algorithm::RS256, None, &rsa_a(), &claims());
    assert!(verifier.verify(&rs).is_ok());
}

#[test]
fn a_token_without_kid_is_refused_when_several_keys_could_check_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = jwks_file(&dir, "ab.json", &["jwks-a.json", "jwks-b.json"]);
    let verifier = JwtVerifier::new(config(&path.display().to_string())).expect("verifier");
    let token = sign(Algorithm::RS256, None, &rsa_a(), &claims());
    assert_eq!(verifier.verify(&token).err(), Some(JwtRefusal::UnknownKey));
    // With its kid it is fine.
    assert!(verifier.verify(&rs256_a(&claims())).is_ok());
    let b = sign(Algorithm::RS256, Some("rsa-b"), &rsa_b(), &claims());
    assert!(verifier.verify(&b).is_ok());
}

#[test]
fn alg_none_is_not_allowed() {
    let verifier = verifier("jwks-a.json");
    for alg in ["none", "None", "NONE", "nOnE"] {
        let message = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(json!({"alg": alg}).to_string()),
            URL_SAFE_NO_PAD.encode(claims().to_string())
        );
        for token in [format!("{message}."), format!("{message}.c2ln")] {
            assert_eq!(
                verifier.verify(&token).err(),
                Some(JwtRefusal::AlgorithmNotAllowed),
                "{token}"
            );
        }
        // With a kid of a trusted key too.
        let message = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(json!({"alg": alg, "kid": "rsa-a"}).to_string()),
            URL_SAFE_NO_PAD.encode(claims().to_string())
        );
        assert_eq!(
            verifier.verify(&format!("{message}.")).err(),
            Some(JwtRefusal::AlgorithmNotAllowed)
        );
    }
}

#[test]
fn an_unknown_algorithm_is_not_allowed() {
    let verifier = verifier("jwks-a.json");
    let token = sign_raw(
        &json!({"alg": "RS1", "kid": "rsa-a"}),
        &claims(),
        &rsa_a(),
        Algorithm::RS256,
    );
    assert_eq!(
        verifier.verify(&token).err(),
        Some(JwtRefusal::AlgorithmNotAllowed)
    );
}

/// The classic confusion: HS256 with the RSA public key's PEM as the HMAC secret.
#[test]
fn hmac_with_the_rsa_public_key_as_secret_is_not_allowed() {
    let public_pem = fixture("rsa-a.pub.pem");
    let forged_key = secret(&public_pem);
    let verifier = verifier("jwks-a.json");
    for kid in [Some("rsa-a"), None] {
        let token = sign(Algorithm::HS256, kid, &forged_key, &claims());
        assert_eq!(
            verifier.verify(&token).err(),
            Some(JwtRefusal::AlgorithmNotAllowed),
            "kid {kid:?}"
        );
    }
    // Nor the PEM without its final newline, nor the DER-ish modulus: no secret, no HMAC.
    let trimmed = secret(public_pem.trim_ascii_end());
    let token = sign(Algorithm::HS256, Some("rsa-a"), &trimmed, &claims());
    assert_eq!(
        verifier.verify(&token).err(),
        Some(JwtRefusal::AlgorithmNotAllowed)
    );

    // With a secret configured, HMAC is checked with that secret only.
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "development secret, thirty-two bytes or more\n").expect("write");
    let verifier = JwtVerifier::new(JwtConfig {
        secret_file: Some(secret),
        ..config(&fixture_path("jwks-a.json"))
    })
    .expect("verifier");
    let token = sign(Algorithm::HS256, Some("rsa-a"), &forged_key, &claims());
    assert_eq!(
        verifier.verify(&token).err(),
        Some(JwtRefusal::BadSignature)
    );
}

#[test]
fn hmac_with_the_secret_file_is_accepted_without_its_trailing_newline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("secret");
    std::fs::write(&path, "development secret, thirty-two bytes or more\n").expect("write");
    let verifier = JwtVerifier::new(JwtConfig {
        secret_file: Some(path.clone()),
        ..config("unused")
    });
    // `jwks` names a file that does not exist: the first load fails.
    assert!(matches!(verifier, Err(JwtSetupError::ReadJwks { .. })));
    let verifier = JwtVerifier::new(JwtConfig {
        jwks: None,
        secret_file: Some(path.clone()),
        ..config("unused")
    })
    .expect("verifier");
    let key = secret(b"development secret, thirty-two bytes or more");
    for algorithm in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
        let token = sign(algorithm, None, &key, &claims());
        assert_eq!(verifier.verify(&token).expect("accepted").role, "member");
    }
    let with_newline = secret(b"development secret, thirty-two bytes or more\n");
    let token = sign(Algorithm::HS256, None, &with_newline, &claims());
    assert_eq!(
        verifier.verify(&token).err(),
        Some(JwtRefusal::BadSignature)
    );
    // No JWK Set: an RS256 token has no key.
    assert_eq!(
        verifier.verify(&rs256_a(&claims())).err(),
        Some(JwtRefusal::UnknownKey)
    );
    let token = sign(Algorithm::RS256, None, &rsa_a(), &claims());
    assert_eq!(
        verifier.verify(&token).err(),
        Some(JwtRefusal::AlgorithmNotAllowed)
    );
}

#[test]
fn a_key_checks_only_algorithms_of_its_family_and_its_own_alg() {
    let verifier = verifier("jwks-a-ec.json");
    // rsa-a's JWK names RS256: PS256 and RS512 by the same key are refused.
    for algorithm in [Algorithm::PS256, Algorithm::RS512] {
        let token = sign(algorithm, Some("rsa-a"), &rsa_a(), &claims());
        assert_eq!(
            verifier.verify(&token).err(),
            Some(JwtRefusal::AlgorithmNotAllowed),
            "{algorithm:?}"
        );
    }
    // An RSA signature presented under the EC key's kid.
    let token = sign(Algorithm::RS256, Some("ec-p256"), &rsa_a(), &claims());
    assert_eq!(
        verifier.verify(&token).err(),
        Some(JwtRefusal::AlgorithmNotAllowed)
    );
    // The EC key has no alg: any of its family's that fit its curve, so not ES384.
    let token = sign_raw(
        &json!({"alg": "ES384", "kid": "ec-p256"}),
        &claims(),
        &ec(),
        Algorithm::ES256,
    );
    assert_eq!(
        verifier.verify(&token).err(),
        Some(JwtRefusal::AlgorithmNotAllowed)
    );
    // EdDSA: no Ed25519 key at all.
    let token = sign_raw(&json!({"alg": "EdDSA"}), &claims(), &ec(), Algorithm::ES256);
    assert_eq!(
        verifier.verify(&token).err(),
        Some(JwtRefusal::AlgorithmNotAllowed)
    );
}

#[test]
fn a_jwk_without_alg_checks_every_algorithm_of_its_family() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut set: Value = serde_json::from_slice(&fixture("jwks-a.json")).expect("json");
    set["keys"][0].as_object_mut().expect("jwk").remove("alg");
    let path = dir.path().join("no-alg.json");
    std::fs::write(&path, set.to_string()).expect("write");
    let verifier = JwtVerifier::new(config(&path.display().to_string())).expect("verifier");
    for algorithm in [
        Algorithm::RS256,
        Algorithm::RS384,
        Algorithm::PS256,
        Algorithm::PS512,
    ] {
        let token = sign(algorithm, Some("rsa-a"), &rsa_a(), &claims());
        assert!(verifier.verify(&token).is_ok(), "{algorithm:?}");
    }
    let token = sign(Algorithm::ES256, Some("rsa-a"), &ec(), &claims());
    assert_eq!(
        verifier.verify(&token).err(),
        Some(JwtRefusal::AlgorithmNotAllowed)
    );
}

#[test]
fn an_unknown_kid_is_refused() {
    let verifier = verifier("jwks-a.json");
    let token = sign(Algorithm::RS256, Some("rsa-b"), &rsa_b(), &claims());
    assert_eq!(verifier.verify(&token).err(), Some(JwtRefusal::UnknownKey));
    // A key in the header is not trusted for being there.
    let token = sign_raw(
        &json!({"alg": "RS256", "kid": "attacker", "jku": "http://127.0.0.1:1/jwks",
            "jwk": serde_json::from_slice::<Value>(&fixture("jwks-b.json")).expect("json")["keys"][0]}),
        &claims(),
        &rsa_b(),
        Algorithm::RS256,
    );
    assert_eq!(verifier.verify(&token).err(), Some(JwtRefusal::UnknownKey));
    // rsa-b's signature under rsa-a's kid.
    let token = sign(Algorithm::RS256, Some("rsa-a"), &rsa_b(), &claims());
    assert_eq!(
        verifier.verify(&token).err(),
        Some(JwtRefusal::BadSignature)
    );
}

#[test]
fn time_claims() {
    let verifier = verifier("jwks-a.json");
    let expired = rs256_a(&claims_with(json!({"exp": now() - 5})));
    assert_eq!(verifier.verify(&expired).err(), Some(JwtRefusal::Expired));
    let early = rs256_a(&claims_with(json!({"nbf": now() + 60})));
    assert_eq!(verifier.verify(&early).err(), Some(JwtRefusal::NotYetValid));
    let started = rs256_a(&claims_with(json!({"nbf": now() - 60})));
    assert!(verifier.verify(&started).is_ok());
    // `exp` is required, and must be an integer.
    for exp in [Value::Null, json!("soon"), json!(-1)] {
        let token = rs256_a(&claims_with(json!({ "exp": exp })));
        assert_eq!(
            verifier.verify(&token).err(),
            Some(JwtRefusal::Malformed),
            "exp {exp}"
        );
    }
}

#[test]
fn leeway_allows_clock_skew() {
    let verifier = JwtVerifier::new(JwtConfig {
        leeway: Duration::from_secs(30),
        ..config(&fixture_path("jwks-a.json"))
    })
    .expect("verifier");
    let token = rs256_a(&claims_with(json!({"exp": now() - 10, "nbf": now() + 10})));
    assert!(verifier.verify(&token).is_ok());
    let token = rs256_a(&claims_with(json!({"exp": now() - 60})));
    assert_eq!(verifier.verify(&token).err(), Some(JwtRefusal::Expired));
}

#[test]
fn issuer_and_audience() {
    let verifier = verifier("jwks-a.json");
    for iss in [json!("https://other.example"), Value::Null, json!(7)] {
        let token = rs256_a(&claims_with(json!({ "iss": iss })));
        assert_eq!(
            verifier.verify(&token).err(),
            Some(JwtRefusal::WrongIssuer),
            "iss {iss}"
        );
    }
    for aud in [
        json!("other"),
        json!(["other", "another"]),
        Value::Null,
        json!(7),
    ] {
        let token = rs256_a(&claims_with(json!({ "aud": aud })));
        assert_eq!(
            verifier.verify(&token).err(),
            Some(JwtRefusal::WrongAudience),
            "aud {aud}"
        );
    }
    let token = rs256_a(&claims_with(json!({"aud": ["other", "pathdb"]})));
    assert!(verifier.verify(&token).is_ok());

    // Unset: not checked.
    let open = JwtVerifier::new(JwtConfig {
        issuer: None,
        audience: None,
        ..config(&fixture_path("jwks-a.json"))
    })
    .expect("verifier");
    let token = rs256_a(&claims_with(json!({"iss": "anyone", "aud": "anything"})));
    assert!(open.verify(&token).is_ok());
    let token = rs256_a(&claims_with(json!({"iss": null, "aud": null})));
    assert!(open.verify(&token).is_ok());
}

#[test]
fn a_tampered_token_has_a_bad_signature() {
    let verifier = verifier("jwks-a.json");
    let token = rs256_a(&claims());
    let parts: Vec<&str> = token.split('.').collect();
    let admin = URL_SAFE_NO_PAD.encode(claims_with(json!({"role": "admin"})).to_string());
    let tampered = format!("{}.{admin}.{}", parts[0], parts[2]);
    assert_eq!(
        verifier.verify(&tampered).err(),
        Some(JwtRefusal::BadSignature)
    );
    // A flipped signature bit.
    let mut signature = URL_SAFE_NO_PAD.decode(parts[2]).expect("base64");
    signature[10] ^= 1;
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        parts[1],
        URL_SAFE_NO_PAD.encode(&signature)
    );
    assert_eq!(
        verifier.verify(&tampered).err(),
        Some(JwtRefusal::BadSignature)
    );
    // Tampered and expired: the signature is checked first.
    let expired = URL_SAFE_NO_PAD.encode(claims_with(json!({"exp": now() - 5})).to_string());
    let tampered = format!("{}.{expired}.{}", parts[0], parts[2]);
    assert_eq!(
        verifier.verify(&tampered).err(),
        Some(JwtRefusal::BadSignature)
    );
}

#[test]
fn garbage_is_malformed() {
    let verifier = verifier("jwks-a.json");
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "kid": "rsa-a"}).to_string());
    let payload = URL_SAFE_NO_PAD.encode(claims().to_string());
    for token in [
        String::new(),
        "pdb_abc_def".to_owned(),
        "a.b".to_owned(),
        "a.b.c".to_owned(),
        "a.b.c.d".to_owned(),
        "..".to_owned(),
        "\u{e9}.\u{e9}.\u{e9}".to_owned(),
        format!("{header}.{payload}.sig.extra"),
        format!("{header}.{payload}."),
        format!("{header}..c2ln"),
        format!("{header}.{payload}.c2ln=="),
        format!("{header}.{payload}.!!!!"),
        format!("{}.{payload}.c2ln", URL_SAFE_NO_PAD.encode("not json")),
        format!("{}.{payload}.c2ln", URL_SAFE_NO_PAD.encode("[1, 2]")),
        format!(
            "{}.{payload}.c2ln",
            URL_SAFE_NO_PAD.encode(r#"{"kid": "rsa-a"}"#)
        ),
        format!(
            "{}.{payload}.c2ln",
            URL_SAFE_NO_PAD.encode(r#"{"alg": 256}"#)
        ),
        format!(
            "{}.{payload}.c2ln",
            URL_SAFE_NO_PAD.encode(r#"{"alg": "RS256", "kid": 1}"#)
        ),
    ] {
        assert_eq!(
            verifier.verify(&token).err(),
            Some(JwtRefusal::Malformed),
            "{token:?}"
        );
    }
    // Correctly signed, but the claims are not a JSON object.
    for claims in ["not json", "[1]", "7"] {
        let message = format!("{header}.{}", URL_SAFE_NO_PAD.encode(claims));
        let signature = jsonwebtoken::crypto::sign(message.as_bytes(), &rsa_a(), Algorithm::RS256)
            .expect("sign");
        assert_eq!(
            verifier.verify(&format!("{message}.{signature}")).err(),
            Some(JwtRefusal::Malformed),
            "{claims}"
        );
    }
    // A critical header extension nobody here understands.
    let token = sign_raw(
        &json!({"alg": "RS256", "kid": "rsa-a", "crit": ["b64"], "b64": false}),
        &claims(),
        &rsa_a(),
        Algorithm::RS256,
    );
    assert_eq!(verifier.verify(&token).err(), Some(JwtRefusal::Malformed));
}

#[test]
fn the_role_claim() {
    let verifier = verifier("jwks-a.json");
    for role in [Value::Null, json!(7), json!(["member"]), json!("")] {
        let token = rs256_a(&claims_with(json!({ "role": role })));
        assert_eq!(
            verifier.verify(&token).err(),
            Some(JwtRefusal::NoRole),
            "role {role}"
        );
    }
    let nested = JwtVerifier::new(JwtConfig {
        role_claim: "realm.role".to_owned(),
        ..config(&fixture_path("jwks-a.json"))
    })
    .expect("verifier");
    let token = rs256_a(&claims_with(json!({"realm": {"role": "editor"}})));
    assert_eq!(nested.verify(&token).expect("nested").role, "editor");
    let token = rs256_a(&claims_with(json!({"realm.role": "flat"})));
    assert_eq!(nested.verify(&token).expect("flat").role, "flat");
    let token = rs256_a(&claims_with(json!({"realm": "editor"})));
    assert_eq!(nested.verify(&token).err(), Some(JwtRefusal::NoRole));
}

#[test]
fn looks_like_jwt() {
    assert!(JwtVerifier::looks_like_jwt("eyJh.eyJz.c2ln"));
    assert!(JwtVerifier::looks_like_jwt("a-_.b.c"));
    assert!(JwtVerifier::looks_like_jwt(&rs256_a(&claims())));
    for token in [
        "",
        "a",
        "a.b",
        "a.b.",
        ".b.c",
        "a..c",
        "a.b.c.d",
        "a.b.c=",
        "a+b.c.d",
        "a/b.c.d",
        "pdb_abc_def",
        "a.b.c ",
        "a.b.\u{e9}",
    ] {
        assert!(!JwtVerifier::looks_like_jwt(token), "{token:?}");
    }
}

#[test]
fn refusal_reasons_are_the_specs() {
    let all = [
        (JwtRefusal::Expired, "expired"),
        (JwtRefusal::NotYetValid, "not_yet_valid"),
        (JwtRefusal::WrongIssuer, "wrong_issuer"),
        (JwtRefusal::WrongAudience, "wrong_audience"),
        (JwtRefusal::UnknownKey, "unknown_key"),
        (JwtRefusal::AlgorithmNotAllowed, "algorithm_not_allowed"),
        (JwtRefusal::BadSignature, "bad_signature"),
        (JwtRefusal::Malformed, "malformed"),
        (JwtRefusal::NoRole, "no_role"),
    ];
    for (refusal, reason) in all {
        assert_eq!(refusal.reason(), reason);
        assert!(!refusal.message().is_empty());
    }
}

#[test]
fn setup_errors_name_their_source() {
    let none = JwtVerifier::new(JwtConfig::default());
    assert!(matches!(none, Err(JwtSetupError::NoKeys)));

    let missing = JwtVerifier::new(config("/nonexistent/jwks.json")).expect_err("missing");
    assert!(matches!(missing, JwtSetupError::ReadJwks { .. }));
    assert!(missing.to_string().contains("/nonexistent/jwks.json"));

    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("not json", "is not JSON"),
        (r#"{"nokeys": []}"#, "no `keys` array"),
        (r#"{"keys": []}"#, "no usable signing key"),
        (
            r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}, {"kty": "RSA", "n": "AQAB", "e": "AQAB"},
                {"kty": "EC", "crv": "P-521", "x": "AA", "y": "AA"}, 7]}"#,
            "no usable signing key",
        ),
    ];
    for (n, (text, expected)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("bad-{n}.json"));
        std::fs::write(&path, text).expect("write");
        let error = JwtVerifier::new(config(&path.display().to_string())).expect_err(text);
        let message = error.to_string();
        assert!(message.contains(expected), "{message}");
        assert!(message.contains(&path.display().to_string()), "{message}");
    }

    let secret = dir.path().join("empty-secret");
    std::fs::write(&secret, "\n").expect("write");
    let empty = JwtVerifier::new(JwtConfig {
        jwks: None,
        secret_file: Some(secret),
        ..JwtConfig::default()
    });
    assert!(matches!(empty, Err(JwtSetupError::EmptySecret { .. })));

    // A URL where nothing listens (a port just freed).
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("port")
        .port();
    let url = format!("http://127.0.0.1:{port}/jwks.json");
    let error = JwtVerifier::new(config(&url)).expect_err("unreachable");
    assert!(matches!(error, JwtSetupError::FetchJwks { .. }));
    assert!(error.to_string().contains(&url));
}

#[test]
fn unusable_keys_are_skipped_and_the_rest_used() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut set: Value = serde_json::from_str(&jwks_text(&["jwks-a.json"])).expect("json");
    let keys = set["keys"].as_array_mut().expect("keys");
    keys.insert(0, json!({"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"}));
    keys.insert(
        0,
        json!({"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"}),
    );
    // A second key under rsa-a's kid (the first one wins).
    let b: Value = serde_json::from_slice(&fixture("jwks-b.json")).expect("json");
    let mut b_as_a = b["keys"][0].clone();
    b_as_a["kid"] = json!("rsa-a");
    keys.push(b_as_a);
    let path = dir.path().join("mixed.json");
    std::fs::write(&path, set.to_string()).expect("write");
    let verifier = JwtVerifier::new(config(&path.display().to_string())).expect("verifier");
    assert!(verifier.verify(&rs256_a(&claims())).is_ok());
    let token = sign(Algorithm::RS256, Some("rsa-a"), &rsa_b(), &claims());
    assert_eq!(
        verifier.verify(&token).err(),
        Some(JwtRefusal::BadSignature)
    );
    // The oct key is not an HMAC key.
    let token = sign(
        Algorithm::HS256,
        Some("hmac"),
        &secret(b"secret"),
        &claims(),
    );
    assert_eq!(
        verifier.verify(&token).err(),
        Some(JwtRefusal::AlgorithmNotAllowed)
    );
}

#[test]
fn key_rotation_in_a_file_with_reload() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = jwks_file(&dir, "jwks.json", &["jwks-a.json"]);
    let verifier = JwtVerifier::new(config(&path.display().to_string())).expect("verifier");
    let token_a = rs256_a(&claims());
    let token_b = sign(Algorithm::RS256, Some("rsa-b"), &rsa_b(), &claims());
    assert!(verifier.verify(&token_a).is_ok());

    write_jwks(&path, &["jwks-b.json"]);
    verifier.reload().expect("reload");
    assert!(verifier.verify(&token_b).is_ok());
    assert_eq!(
        verifier.verify(&token_a).err(),
        Some(JwtRefusal::UnknownKey)
    );

    // A failed reload keeps the keys in use.
    std::fs::write(&path, "{").expect("write");
    assert!(matches!(
        verifier.reload(),
        Err(JwtSetupError::ParseJwks { .. })
    ));
    assert!(verifier.verify(&token_b).is_ok());
}

#[test]
fn key_rotation_in_a_file_with_the_background_refresh() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = jwks_file(&dir, "jwks.json", &["jwks-a.json"]);
    let verifier = JwtVerifier::new(JwtConfig {
        refresh: Duration::from_millis(200),
        ..config(&path.display().to_string())
    })
    .expect("verifier");
    let token_a = rs256_a(&claims());
    let token_b = sign(Algorithm::RS256, Some("rsa-b"), &rsa_b(), &claims());
    assert!(verifier.verify(&token_a).is_ok());

    // Written to a new file and renamed, so a reload never reads half of it.
    let next = dir.path().join("jwks.json.new");
    write_jwks(&next, &["jwks-b.json"]);
    std::fs::rename(&next, &path).expect("rename");
    let deadline = Instant::now() + Duration::from_secs(10);
    // The refresh, not a refetch for the unknown kid, must bring key B: look at the keys
    // rather than verify (which could refetch).
    while verifier.inner.keys().trusted[0].kid.as_deref() != Some("rsa-b") {
        assert!(Instant::now() < deadline, "the refresh never loaded key B");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(verifier.verify(&token_b).is_ok());
    assert_eq!(
        verifier.verify(&token_a).err(),
        Some(JwtRefusal::UnknownKey)
    );
}

#[test]
fn the_reload_thread_holds_no_strong_reference() {
    let verifier = JwtVerifier::new(JwtConfig {
        refresh: Duration::from_millis(20),
        ..config(&fixture_path("jwks-a.json"))
    })
    .expect("verifier");
    let weak = Arc::downgrade(&verifier.inner);
    let clone = verifier.clone();
    drop(verifier);
    std::thread::sleep(Duration::from_millis(50));
    assert!(weak.upgrade().is_some());
    drop(clone);
    // Between its reloads the thread holds only the Weak: the keys go with the last clone.
    let deadline = Instant::now() + Duration::from_secs(5);
    while weak.upgrade().is_some() {
        assert!(
            Instant::now() < deadline,
            "the reload thread keeps the verifier alive"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A JWK Set served over HTTP, its body swappable, its requests counted.
struct JwksServer {
    url: String,
    body: Arc<Mutex<String>>,
    hits: Arc<AtomicUsize>,
}

impl JwksServer {
    fn start(body: String) -> JwksServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!(
            "http://{}/.well-known/jwks.json",
            listener.local_addr().expect("addr")
        );
        let body = Arc::new(Mutex::new(body));
        let hits = Arc::new(AtomicUsize::new(0));
        let (served, counted) = (body.clone(), hits.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                // The request's head (a GET has no body).
                let mut request = Vec::new();
                let mut buffer = [0; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buffer) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buffer[..n]),
                    }
                }
                counted.fetch_add(1, Ordering::SeqCst);
                let body = served.lock().expect("body").clone();
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes());
            }
        });
        JwksServer { url, body, hits }
    }

    fn serve(&self, body: String) {
        *self.body.lock().expect("body") = body;
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

#[test]
fn key_rotation_at_a_url_with_reload() {
    let server = JwksServer::start(jwks_text(&["jwks-a.json"]));
    let verifier = JwtVerifier::new(config(&server.url)).expect("verifier");
    assert_eq!(server.hits(), 1);
    let token_a = rs256_a(&claims());
    let token_b = sign(Algorithm::RS256, Some("rsa-b"), &rsa_b(), &claims());
    assert!(verifier.verify(&token_a).is_ok());

    server.serve(jwks_text(&["jwks-b.json"]));
    verifier.reload().expect("reload");
    assert_eq!(server.hits(), 2);
    assert!(verifier.verify(&token_b).is_ok());
    assert_eq!(
        verifier.verify(&token_a).err(),
        Some(JwtRefusal::UnknownKey)
    );
}

#[test]
fn an_unknown_kid_refetches_at_most_once_per_interval() {
    let server = JwksServer::start(jwks_text(&["jwks-a.json"]));
    // A tenth of 10 s: one refetch per second at most.
    let verifier = JwtVerifier::new(JwtConfig {
        refresh: Duration::from_secs(10),
        ..config(&server.url)
    })
    .expect("verifier");
    let token_a = rs256_a(&claims());
    let token_b = sign(Algorithm::RS256, Some("rsa-b"), &rsa_b(), &claims());
    let token_x = sign(Algorithm::RS256, Some("rsa-x"), &rsa_b(), &claims());
    server.serve(jwks_text(&["jwks-b.json"]));

    // Just loaded: no refetch yet.
    assert_eq!(
        verifier.verify(&token_b).err(),
        Some(JwtRefusal::UnknownKey)
    );
    assert_eq!(server.hits(), 1);
    assert!(verifier.verify(&token_a).is_ok());

    std::thread::sleep(Duration::from_millis(1100));
    // The unknown kid brings the new set, with one fetch.
    assert!(verifier.verify(&token_b).is_ok());
    assert_eq!(server.hits(), 2);
    // Then made-up kids do not fetch again within the interval.
    for _ in 0..5 {
        assert_eq!(
            verifier.verify(&token_x).err(),
            Some(JwtRefusal::UnknownKey)
        );
        assert_eq!(
            verifier.verify(&token_a).err(),
            Some(JwtRefusal::UnknownKey)
        );
    }
    assert_eq!(server.hits(), 2);
}
