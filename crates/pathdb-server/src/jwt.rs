//! Signed bearer tokens (JWTs, RFC 7519) from an identity provider: [`JwtVerifier`] checks a
//! token's signature against the keys of a JWK Set (a file or an `http(s)://` URL, reloaded in
//! the background) or a shared HS256 secret, then its time, issuer and audience claims, and
//! reads the role it names. It knows nothing of HTTP requests or of what a role allows: a
//! refusal is a [`JwtRefusal`], whose [`reason`](JwtRefusal::reason) is the `reason` member of
//! the API's 401.
//!
//! What a token must not be able to choose: the algorithm family of the key that checks it (a
//! JWK Set key checks only algorithms of its own family, and only its own `alg` when it names
//! one; HMAC only with the configured secret, so an RSA public key is never an HMAC secret), and
//! where keys come from (the header's `jku`, `jwk` and `x5u` are ignored). `alg: none` is
//! refused.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::{Duration, Instant};

/// How long one JWK Set fetch from a URL may take, connection included.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest JWK Set body read from a URL.
const MAX_JWKS_BYTES: u64 = 1 << 20;
/// RSA keys shorter than this many bits are skipped (RFC 7518 section 3.3 asks for 2048).
const MIN_RSA_BITS: usize = 2048;

/// Where the keys come from and what a token must claim.
#[derive(Clone, Debug)]
pub struct JwtConfig {
    /// A JWK Set (`{"keys": [...]}`): a file path, or an `http://` or `https://` URL. Its RSA,
    /// EC (P-256, P-384) and OKP (Ed25519) signing keys are trusted; symmetric (`oct`) keys and
    /// keys whose `use` is not `sig` are skipped.
    pub jwks: Option<String>,
    /// A file holding a shared secret for HS256/HS384/HS512 tokens (for development: anyone
    /// who can check such a token can also make one). One trailing newline is not part of the
    /// secret.
    pub secret_file: Option<PathBuf>,
    /// When set, the `iss` a token must have.
    pub issuer: Option<String>,
    /// When set, the audience a token must name in `aud` (a string, or an array holding it);
    /// when unset, `aud` is not checked.
    pub audience: Option<String>,
    /// The claim that names the token's role. A dotted name (`realm.role`) is a path into
    /// nested objects, unless the token has a top-level claim of that exact name.
    pub role_claim: String,
    /// How often the JWK Set (and the secret file) is read again. A token naming an unknown
    /// `kid` also makes it read again, at most once per a tenth of this (and per second).
    /// [`Duration::ZERO`] turns the background reload off.
    pub refresh: Duration,
    /// The clock skew allowed when checking `exp` and `nbf` (whole seconds count).
    pub leeway: Duration,
}

impl Default for JwtConfig {
    /// No keys yet, no issuer or audience, role in `role`, refresh every 60 s, 30 s leeway.
    fn default() -> JwtConfig {
        JwtConfig {
            jwks: None,
            secret_file: None,
            issuer: None,
            audience: None,
            role_claim: "role".to_owned(),
            refresh: Duration::from_secs(60),
            leeway: Duration::from_secs(30),
        }
    }
}

/// Why a [`JwtVerifier`] could not load its keys.
#[derive(Debug, thiserror::Error)]
pub enum JwtSetupError {
    /// Neither [`JwtConfig::jwks`] nor [`JwtConfig::secret_file`] is set.
    #[error("JWT verification needs a JWK Set (jwks) or a shared secret file (secret_file)")]
    NoKeys,
    /// The JWK Set file could not be read.
    #[error("cannot read the JWK Set file {path}")]
    ReadJwks {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The JWK Set could not be fetched from its URL (or its body read).
    #[error("cannot fetch the JWK Set from {url}")]
    FetchJwks {
        /// The URL.
        url: String,
        /// The cause.
        source: ureq::Error,
    },
    /// The JWK Set is not JSON.
    #[error("the JWK Set from {from} is not JSON")]
    ParseJwks {
        /// The file or URL.
        from: String,
        /// The cause.
        source: serde_json::Error,
    },
    /// The JWK Set is JSON but not a usable set of keys.
    #[error("the JWK Set from {from} {problem}")]
    InvalidJwks {
        /// The file or URL.
        from: String,
        /// What is wrong, as the end of a sentence ("has no `keys` array").
        problem: String,
    },
    /// The secret file could not be read.
    #[error("cannot read the JWT secret file {path}")]
    ReadSecret {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The secret file is empty (or holds only a newline).
    #[error("the JWT secret file {path} is empty")]
    EmptySecret {
        /// The file.
        path: PathBuf,
    },
    /// The background reload thread could not be started.
    #[error("cannot start the JWK Set reload thread")]
    Thread(#[source] std::io::Error),
}

/// Why a token was refused: the `reason` of a 401 (see [`JwtRefusal::reason`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JwtRefusal {
    /// `exp` is past (beyond the leeway).
    Expired,
    /// `nbf` is still ahead (beyond the leeway).
    NotYetValid,
    /// `iss` is missing or not the configured issuer.
    WrongIssuer,
    /// `aud` is missing or does not name the configured audience.
    WrongAudience,
    /// The `kid` names no trusted key (even after reading the keys again), or the token names
    /// none and more than one key could check it.
    UnknownKey,
    /// The header's `alg` is `none`, unknown, HMAC without a configured secret, or not one the
    /// chosen key may be used with.
    AlgorithmNotAllowed,
    /// The signature does not match the header and claims.
    BadSignature,
    /// Not a JWT: not three base64url parts, a header or claims that are not JSON objects, a
    /// `crit` header, or no (or a non-integer) `exp`.
    Malformed,
    /// The role claim is missing, not a string, or empty.
    NoRole,
}

impl JwtRefusal {
    /// The machine-readable reason: `expired`, `not_yet_valid`, `wrong_issuer`,
    /// `wrong_audience`, `unknown_key`, `algorithm_not_allowed`, `bad_signature`, `malformed`
    /// or `no_role`.
    pub fn reason(self) -> &'static str {
        match self {
            JwtRefusal::Expired => "expired",
            JwtRefusal::NotYetValid => "not_yet_valid",
            JwtRefusal::WrongIssuer => "wrong_issuer",
            JwtRefusal::WrongAudience => "wrong_audience",
            JwtRefusal::UnknownKey => "unknown_key",
            JwtRefusal::AlgorithmNotAllowed => "algorithm_not_allowed",
            JwtRefusal::BadSignature => "bad_signature",
            JwtRefusal::Malformed => "malformed",
            JwtRefusal::NoRole => "no_role",
        }
    }

    /// A sentence for people, for the 401's `message`.
    pub fn message(self) -> &'static str {
        match self {
            JwtRefusal::Expired => "the token has expired",
            JwtRefusal::NotYetValid => "the token is not valid yet (its nbf is ahead)",
            JwtRefusal::WrongIssuer => "the token was not issued by the trusted issuer",
            JwtRefusal::WrongAudience => "the token is not meant for this server (aud)",
            JwtRefusal::UnknownKey => {
                "the token was signed with a key this server does not know (kid)"
            }
            JwtRefusal::AlgorithmNotAllowed => {
                "the token's signing algorithm is not allowed for its key"
            }
            JwtRefusal::BadSignature => "the token's signature does not match its contents",
            JwtRefusal::Malformed => "the token is not a well-formed JWT with an integer exp claim",
            JwtRefusal::NoRole => "the token names no role",
        }
    }
}

impl std::fmt::Display for JwtRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

/// A token that passed: its claims and the role it names.
#[derive(Clone, Debug)]
pub struct Verified {
    /// Every claim of the token.
    pub claims: Map<String, Value>,
    /// The role claim's value (see [`JwtConfig::role_claim`]).
    pub role: String,
    /// When the token expires (`exp`), in microseconds since the epoch.
    pub expires_at: Option<i64>,
}

impl Verified {
    /// A claim by name; a dotted name (`org.id`) is a path into nested objects, unless a
    /// top-level claim has that exact name.
    pub fn claim(&self, dotted: &str) -> Option<&Value> {
        claim_at(&self.claims, dotted)
    }
}

/// Checks tokens against the configured keys; cloning it is cheap (the clones share the keys).
/// A thread reloads the keys every [`JwtConfig::refresh`] until the last clone is dropped.
#[derive(Clone)]
pub struct JwtVerifier {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys = self.inner.keys();
        f.debug_struct("JwtVerifier")
            .field("jwks", &self.inner.config.jwks)
            .field("keys", &keys.trusted.len())
            .field("secret", &keys.secret.is_some())
            .finish_non_exhaustive()
    }
}

/// What the clones of a [`JwtVerifier`] share.
struct Inner {
    config: JwtConfig,
    /// Where the JWK Set comes from.
    source: Option<JwksSource>,
    /// The claims checks every token passes; `algorithms` is set per token.
    validation: Validation,
    /// The keys now in use, swapped whole by a reload.
    keys: RwLock<Arc<Keys>>,
    /// Held while keys are loaded, so reloads do not overlap: when the last load finished.
    loaded: Mutex<Instant>,
    /// Dropped with the last clone, which wakes the reload thread to stop.
    _stop: mpsc::Sender<()>,
}

/// A JWK Set's location.
enum JwksSource {
    File(PathBuf),
    Url { url: String, agent: ureq::Agent },
}

/// The keys of one load.
struct Keys {
    /// From the JWK Set.
    trusted: Vec<TrustedKey>,
    /// From the secret file.
    secret: Option<DecodingKey>,
}

/// One JWK Set key and the algorithms it may check.
struct TrustedKey {
    kid: Option<String>,
    algorithms: Vec<Algorithm>,
    key: DecodingKey,
}

impl JwtVerifier {
    /// Loads the keys and starts the thread that reloads them every [`JwtConfig::refresh`].
    ///
    /// # Errors
    /// No key source is configured, the first load fails (an unreadable or unreachable JWK Set,
    /// one with no usable key, an empty secret), or the thread cannot start.
    pub fn new(config: JwtConfig) -> Result<JwtVerifier, JwtSetupError> {
        if config.jwks.is_none() && config.secret_file.is_none() {
            return Err(JwtSetupError::NoKeys);
        }
        let source = config.jwks.as_ref().map(|jwks| {
            if jwks.starts_with("http://") || jwks.starts_with("https://") {
                let agent = ureq::Agent::config_builder()
                    .timeout_global(Some(FETCH_TIMEOUT))
                    .build()
                    .into();
                JwksSource::Url {
                    url: jwks.clone(),
                    agent,
                }
            } else {
                JwksSource::File(PathBuf::from(jwks))
            }
        });
        let keys = load_keys(source.as_ref(), config.secret_file.as_deref())?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.leeway = config.leeway.as_secs();
        validation.validate_nbf = true;
        let mut required = vec!["exp"];
        if let Some(issuer) = &config.issuer {
            validation.set_issuer(&[issuer]);
            required.push("iss");
        }
        match &config.audience {
            Some(audience) => {
                validation.set_audience(&[audience]);
                required.push("aud");
            }
            None => validation.validate_aud = false,
        }
        validation.set_required_spec_claims(&required);
        let refresh = config.refresh;
        let (stop, stopped) = mpsc::channel();
        let inner = Arc::new(Inner {
            config,
            source,
            validation,
            keys: RwLock::new(Arc::new(keys)),
            loaded: Mutex::new(Instant::now()),
            _stop: stop,
        });
        if !refresh.is_zero() {
            let weak = Arc::downgrade(&inner);
            std::thread::Builder::new()
                .name("pathdb-jwks".into())
                .spawn(move || reload_every(&weak, refresh, &stopped))
                .map_err(JwtSetupError::Thread)?;
        }
        Ok(JwtVerifier { inner })
    }

    /// Whether `token` has the shape of a JWT: three non-empty base64url parts separated by
    /// two dots. Cheap (no decoding), to tell JWTs from other bearer tokens.
    pub fn looks_like_jwt(token: &str) -> bool {
        let mut parts = 0;
        for part in token.split('.') {
            parts += 1;
            if parts > 3
                || part.is_empty()
                || !part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return false;
            }
        }
        parts == 3
    }

    /// Checks `token`: its header, the signature with the key it picks, `exp` (required),
    /// `nbf`, `iss` and `aud`, then reads the role claim.
    ///
    /// This is CPU work (an RSA-2048 check is the costly part), except when the token names a
    /// `kid` that no key has: then the keys are read again first (the JWK Set file, or a fetch
    /// of up to 10 s from its URL) unless they were read less than a tenth of
    /// [`JwtConfig::refresh`] (or a second) ago. Call it where blocking for that is acceptable.
    ///
    /// # Errors
    /// The [`JwtRefusal`] that says why the token is refused.
    pub fn verify(&self, token: &str) -> Result<Verified, JwtRefusal> {
        // The header first, so that `alg: none` (whose signature is empty) is refused as such.
        let header = TokenHeader::parse(token)?;
        let algorithm =
            Algorithm::from_str(&header.alg).map_err(|_| JwtRefusal::AlgorithmNotAllowed)?;
        if !JwtVerifier::looks_like_jwt(token) {
            return Err(JwtRefusal::Malformed);
        }
        let mut keys = self.inner.keys();
        let index = if algorithm.family() == AlgorithmFamily::Hmac {
            None
        } else {
            match pick_key(&keys, algorithm, header.kid.as_deref()) {
                Err(JwtRefusal::UnknownKey) if header.kid.is_some() => {
                    self.inner.reload_for_unknown_kid();
                    keys = self.inner.keys();
                    Some(pick_key(&keys, algorithm, header.kid.as_deref())?)
                }
                picked => Some(picked?),
            }
        };
        let key = match index {
            Some(index) => &keys.trusted[index].key,
            // HMAC: only with the configured secret, never with a JWK Set key.
            None => keys
                .secret
                .as_ref()
                .ok_or(JwtRefusal::AlgorithmNotAllowed)?,
        };
        let mut validation = self.inner.validation.clone();
        validation.algorithms = vec![algorithm];
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation)
            .map_err(|e| refusal_of(e.kind()))?
            .claims;
        let role = match claim_at(&claims, &self.inner.config.role_claim) {
            Some(Value::String(role)) if !role.is_empty() => role.clone(),
            _ => return Err(JwtRefusal::NoRole),
        };
        let expires_at = claims
            .get("exp")
            .and_then(Value::as_i64)
            .map(|exp| exp.saturating_mul(1_000_000));
        Ok(Verified {
            claims,
            role,
            expires_at,
        })
    }

    /// Loads the keys again now (the background thread does this every
    /// [`JwtConfig::refresh`]). On failure the keys in use stay.
    ///
    /// # Errors
    /// As for [`JwtVerifier::new`]'s first load.
    pub fn reload(&self) -> Result<(), JwtSetupError> {
        self.inner.reload()
    }
}

impl Inner {
    /// The keys now in use.
    fn keys(&self) -> Arc<Keys> {
        self.keys
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Loads the keys and, if that works, puts them in use.
    fn reload(&self) -> Result<(), JwtSetupError> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        self.load_locked(&mut loaded)
    }

    fn load_locked(&self, loaded: &mut Instant) -> Result<(), JwtSetupError> {
        let keys = load_keys(self.source.as_ref(), self.config.secret_file.as_deref())?;
        *self.keys.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(keys);
        *loaded = Instant::now();
        Ok(())
    }

    /// Reloads for a token whose `kid` no key has, unless the keys were loaded within the
    /// last tenth of the refresh period (at least a second): tokens with made-up `kid`s must
    /// not turn into a stream of fetches. A caller that waited here for another's reload sees
    /// its keys.
    fn reload_for_unknown_kid(&self) {
        let Some(source) = &self.source else { return };
        let min_interval = (self.config.refresh / 10).max(Duration::from_secs(1));
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if loaded.elapsed() < min_interval {
            return;
        }
        if let Err(e) = self.load_locked(&mut loaded) {
            // Not again before the interval is over, failed or not.
            *loaded = Instant::now();
            tracing::warn!(jwks = %source.name(), error = %ErrorChain(&e),
                "could not reload the JWK Set for a token with an unknown kid; keeping the keys in use");
        }
    }
}

/// The reload thread's loop: every `refresh` until the verifier is gone.
fn reload_every(inner: &Weak<Inner>, refresh: Duration, stopped: &mpsc::Receiver<()>) {
    // Nothing is ever sent: the sender's drop (with the last clone) ends the wait at once.
    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(refresh) {
        let Some(inner) = inner.upgrade() else { return };
        if let Err(e) = inner.reload() {
            let jwks = inner.source.as_ref().map(JwksSource::name);
            tracing::warn!(jwks = jwks.as_deref().unwrap_or("-"), error = %ErrorChain(&e),
                "could not reload the JWT keys; keeping the keys in use");
        }
    }
}

/// An error and its sources, `: `-separated, for a log line.
struct ErrorChain<'a>(&'a dyn std::error::Error);

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

impl JwksSource {
    /// The file or URL, for messages.
    fn name(&self) -> String {
        match self {
            JwksSource::File(path) => path.display().to_string(),
            JwksSource::Url { url, .. } => url.clone(),
        }
    }

    /// The JWK Set's text.
    fn read(&self) -> Result<String, JwtSetupError> {
        match self {
            JwksSource::File(path) => {
                std::fs::read_to_string(path).map_err(|source| JwtSetupError::ReadJwks {
                    path: path.clone(),
                    source,
                })
            }
            JwksSource::Url { url, agent } => {
                let fetch_error = |source| JwtSetupError::FetchJwks {
                    url: url.clone(),
                    source,
                };
                let mut response = agent.get(url).call().map_err(fetch_error)?;
                response
                    .body_mut()
                    .with_config()
                    .limit(MAX_JWKS_BYTES)
                    .read_to_string()
                    .map_err(fetch_error)
            }
        }
    }
}

/// Reads the JWK Set and the secret.
fn load_keys(
    source: Option<&JwksSource>,
    secret_file: Option<&std::path::Path>,
) -> Result<Keys, JwtSetupError> {
    let trusted = match source {
        Some(source) => parse_jwks(&source.read()?, &source.name())?,
        None => Vec::new(),
    };
    let secret = match secret_file {
        Some(path) => Some(read_secret(path)?),
        None => None,
    };
    Ok(Keys { trusted, secret })
}

/// The secret file's contents, less one trailing newline.
fn read_secret(path: &std::path::Path) -> Result<DecodingKey, JwtSetupError> {
    let mut secret = std::fs::read(path).map_err(|source| JwtSetupError::ReadSecret {
        path: path.to_owned(),
        source,
    })?;
    if secret.ends_with(b"\r\n") {
        secret.truncate(secret.len() - 2);
    } else if secret.ends_with(b"\n") {
        secret.truncate(secret.len() - 1);
    }
    // `from_secret` refuses only an empty secret.
    DecodingKey::from_secret(&secret).map_err(|_| JwtSetupError::EmptySecret {
        path: path.to_owned(),
    })
}

/// The usable keys of a JWK Set; a key that cannot be used is skipped with a warning (one odd
/// key from an identity provider must not stop the others), but a set with none is an error.
fn parse_jwks(text: &str, from: &str) -> Result<Vec<TrustedKey>, JwtSetupError> {
    let invalid = |problem: &str| JwtSetupError::InvalidJwks {
        from: from.to_owned(),
        problem: problem.to_owned(),
    };
    let set: Value = serde_json::from_str(text).map_err(|source| JwtSetupError::ParseJwks {
        from: from.to_owned(),
        source,
    })?;
    let Some(jwks) = set.get("keys").and_then(Value::as_array) else {
        return Err(invalid("has no `keys` array"));
    };
    let mut trusted: Vec<TrustedKey> = Vec::with_capacity(jwks.len());
    for (n, jwk) in jwks.iter().enumerate() {
        match parse_jwk(jwk) {
            Ok(key) => {
                if key.kid.is_some() && trusted.iter().any(|other| other.kid == key.kid) {
                    tracing::warn!(
                        jwks = from,
                        key = n,
                        kid = key.kid.as_deref(),
                        "skipping a JWK whose kid an earlier key has"
                    );
                } else {
                    trusted.push(key);
                }
            }
            Err(why) => {
                let kid = jwk.get("kid").and_then(Value::as_str);
                tracing::warn!(jwks = from, key = n, kid, "skipping a JWK: {why}");
            }
        }
    }
    if trusted.is_empty() {
        return Err(invalid(
            "has no usable signing key (RSA of 2048 bits or more, EC P-256 or P-384, Ed25519)",
        ));
    }
    Ok(trusted)
}

/// One JWK as a key and the algorithms it may check, or why it cannot be used.
fn parse_jwk(jwk: &Value) -> Result<TrustedKey, String> {
    let member = |name: &str| -> Result<Option<&str>, String> {
        match jwk.get(name) {
            None => Ok(None),
            Some(Value::String(value)) => Ok(Some(value)),
            Some(_) => Err(format!("`{name}` is not a string")),
        }
    };
    let required = |name: &str| member(name)?.ok_or_else(|| format!("no `{name}`"));
    let bytes = |name: &str| {
        URL_SAFE_NO_PAD
            .decode(required(name)?.trim_end_matches('='))
            .map_err(|_| format!("`{name}` is not base64url"))
    };
    if !jwk.is_object() {
        return Err("not an object".to_owned());
    }
    if let Some(usage) = member("use")?
        && usage != "sig"
    {
        return Err(format!("its use is {usage:?}, not \"sig\""));
    }
    if let Some(ops) = jwk.get("key_ops")
        && !ops
            .as_array()
            .is_some_and(|ops| ops.iter().any(|op| op == "verify"))
    {
        return Err("its key_ops do not include \"verify\"".to_owned());
    }
    let kty = required("kty")?;
    let (family, key): (&[Algorithm], DecodingKey) = match kty {
        "RSA" => {
            let modulus = bytes("n")?;
            let exponent = bytes("e")?;
            let significant = modulus.iter().skip_while(|b| **b == 0).count();
            if significant * 8 < MIN_RSA_BITS {
                return Err(format!("its RSA modulus is under {MIN_RSA_BITS} bits"));
            }
            (
                AlgorithmFamily::Rsa.algorithms(),
                DecodingKey::from_rsa_raw_components(&modulus, &exponent),
            )
        }
        "EC" => {
            let (algorithms, size): (&[Algorithm], usize) = match required("crv")? {
                "P-256" => (&[Algorithm::ES256], 32),
                "P-384" => (&[Algorithm::ES384], 48),
                other => return Err(format!("its curve {other:?} is not supported")),
            };
            if bytes("x")?.len() != size || bytes("y")?.len() != size {
                return Err("its x or y has the wrong length for its curve".to_owned());
            }
            let key = DecodingKey::from_ec_components(required("x")?, required("y")?)
                .map_err(|e| format!("its x or y is invalid: {e}"))?;
            (algorithms, key)
        }
        "OKP" => {
            if required("crv")? != "Ed25519" {
                return Err("only the OKP curve Ed25519 is supported".to_owned());
            }
            if bytes("x")?.len() != 32 {
                return Err("its x is not 32 bytes".to_owned());
            }
            let key = DecodingKey::from_ed_components(required("x")?)
                .map_err(|e| format!("its x is invalid: {e}"))?;
            (&[Algorithm::EdDSA], key)
        }
        "oct" => {
            return Err(
                "symmetric (oct) keys are not taken from a JWK Set; use the secret file".to_owned(),
            );
        }
        other => return Err(format!("its kty {other:?} is not supported")),
    };
    let algorithms = match member("alg")? {
        None => family.to_vec(),
        Some(alg) => match Algorithm::from_str(alg) {
            Ok(algorithm) if family.contains(&algorithm) => vec![algorithm],
            _ => return Err(format!("its alg {alg:?} does not suit a {kty} key")),
        },
    };
    Ok(TrustedKey {
        kid: member("kid")?.map(str::to_owned),
        algorithms,
        key,
    })
}

/// The JWK Set key that checks a token signed with `algorithm` (not HMAC): the one `kid`
/// names, or without a `kid` the only key that may check `algorithm`.
fn pick_key(keys: &Keys, algorithm: Algorithm, kid: Option<&str>) -> Result<usize, JwtRefusal> {
    match kid {
        Some(kid) => {
            let index = keys
                .trusted
                .iter()
                .position(|key| key.kid.as_deref() == Some(kid))
                .ok_or(JwtRefusal::UnknownKey)?;
            if keys.trusted[index].algorithms.contains(&algorithm) {
                Ok(index)
            } else {
                Err(JwtRefusal::AlgorithmNotAllowed)
            }
        }
        None => {
            let mut fitting = keys
                .trusted
                .iter()
                .enumerate()
                .filter(|(_, key)| key.algorithms.contains(&algorithm))
                .map(|(index, _)| index);
            match (fitting.next(), fitting.next()) {
                (Some(index), None) => Ok(index),
                (None, _) => Err(JwtRefusal::AlgorithmNotAllowed),
                (Some(_), Some(_)) => Err(JwtRefusal::UnknownKey),
            }
        }
    }
}

/// What [`JwtVerifier::verify`] reads of a token's header before choosing a key.
struct TokenHeader {
    alg: String,
    kid: Option<String>,
}

impl TokenHeader {
    /// The header of a token of three parts (the last may be empty).
    fn parse(token: &str) -> Result<TokenHeader, JwtRefusal> {
        let mut parts = token.split('.');
        let encoded = parts.next().unwrap_or_default();
        if parts.count() != 2 {
            return Err(JwtRefusal::Malformed);
        }
        let json = URL_SAFE_NO_PAD
            .decode(encoded)
            .map_err(|_| JwtRefusal::Malformed)?;
        let Ok(Value::Object(mut header)) = serde_json::from_slice(&json) else {
            return Err(JwtRefusal::Malformed);
        };
        // Extensions that must be understood (RFC 7515 section 4.1.11): none are.
        if header.contains_key("crit") {
            return Err(JwtRefusal::Malformed);
        }
        let Some(Value::String(alg)) = header.remove("alg") else {
            return Err(JwtRefusal::Malformed);
        };
        let kid = match header.remove("kid") {
            None => None,
            Some(Value::String(kid)) => Some(kid),
            Some(_) => return Err(JwtRefusal::Malformed),
        };
        Ok(TokenHeader { alg, kid })
    }
}

/// The refusal for an error of `jsonwebtoken::decode`.
fn refusal_of(kind: &ErrorKind) -> JwtRefusal {
    match kind {
        ErrorKind::InvalidSignature => JwtRefusal::BadSignature,
        ErrorKind::ExpiredSignature => JwtRefusal::Expired,
        ErrorKind::ImmatureSignature => JwtRefusal::NotYetValid,
        ErrorKind::InvalidIssuer => JwtRefusal::WrongIssuer,
        ErrorKind::InvalidAudience => JwtRefusal::WrongAudience,
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => {
            JwtRefusal::AlgorithmNotAllowed
        }
        ErrorKind::MissingRequiredClaim(claim) | ErrorKind::InvalidClaimFormat(claim) => {
            match claim.as_str() {
                "iss" => JwtRefusal::WrongIssuer,
                "aud" => JwtRefusal::WrongAudience,
                _ => JwtRefusal::Malformed,
            }
        }
        // A key that cannot check the signature (an odd RSA exponent, a point off the curve)
        // has not shown the token to be signed by it.
        ErrorKind::InvalidRsaKey(_)
        | ErrorKind::InvalidEcdsaKey
        | ErrorKind::InvalidEddsaKey
        | ErrorKind::InvalidKeyFormat => JwtRefusal::BadSignature,
        _ => JwtRefusal::Malformed,
    }
}

/// A claim by exact name, else by a dotted path into nested objects.
fn claim_at<'a>(claims: &'a Map<String, Value>, dotted: &str) -> Option<&'a Value> {
    if let Some(value) = claims.get(dotted) {
        return Some(value);
    }
    let mut names = dotted.split('.');
    let mut value = claims.get(names.next()?)?;
    for name in names {
        value = value.as_object()?.get(name)?;
    }
    Some(value)
}

#[cfg(test)]
mod test;
