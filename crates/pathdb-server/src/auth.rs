//! Who a request is and what it may do: the bearer token resolved to an [`Access`] (a role's
//! rules bound to the token's variables, docs/access.md). With no token configured and no JWT
//! issuer the server runs in local-only mode: no authentication, and it refuses to bind anything
//! but loopback.
//!
//! A bearer token is one of three kinds, told apart by its form:
//! - a token from the config file or `PATHDB_TOKENS`, with a built-in scope or a role and
//!   variables: compared with each configured one in constant time;
//! - an issued token (`pdb_<id>_<secret>`, `POST /v1/tokens`): found by its id in the database,
//!   its hash compared; kept in a cache for [`REVALIDATE`], so that a revocation or a role's
//!   change made on another server sharing the database takes effect within that bound (on this
//!   server at once: its own writes drop the cache's entries);
//! - a JWT (`a.b.c`), when the server verifies them (`crate::jwt`): its role claim picks the
//!   role, its claims bind the variables.
//!
//! Resolving a role or an issued token may need a store read. On a backend whose point reads
//! never block (redb, memory) it is done right in the check; on others the check leaves the
//! request [`Pending`], and `crate::gate::Lookups` reads on the blocking pool before the handler
//! runs. A handler that found no [`Access`] answers 500: nothing is ever let through unresolved.

use crate::error::ApiError;
use crate::jwt::{JwtRefusal, JwtVerifier};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pathdb_keys::KeyPath;
use pathdb_store::{CompiledRule, Grant, Op, Rule, StoredRole, TokenInfo};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// How long a resolved issued token, a JWT's role or a stored role is used before it is read
/// again: the bound within which a revocation or a role's change made on another server
/// sharing the database takes effect here.
pub const REVALIDATE: Duration = Duration::from_secs(1);
/// Most verified JWTs kept (the cache is emptied when it would hold more).
const MAX_CACHED_JWTS: usize = 10_000;

/// A built-in role, as the config file's `scope` names it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Reads only: the `read` role.
    Read,
    /// Reads and writes: the `read-write` role.
    ReadWrite,
    /// Reads, writes, and definitions, roles and tokens: the `admin` role.
    Admin,
}

impl Scope {
    /// The built-in role's name.
    pub fn role(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::ReadWrite => "read-write",
            Scope::Admin => "admin",
        }
    }
}

impl std::str::FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Scope, String> {
        match s {
            "read" => Ok(Scope::Read),
            "read-write" | "rw" => Ok(Scope::ReadWrite),
            "admin" => Ok(Scope::Admin),
            other => Err(format!(
                "unknown token scope {other:?} (read, read-write or admin)"
            )),
        }
    }
}

/// How a request proved who it is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Via {
    /// Local-only mode: no authentication.
    Open,
    /// A token from the config file or `PATHDB_TOKENS`.
    Config,
    /// A token issued with `POST /v1/tokens`.
    Issued,
    /// A JWT.
    Jwt,
}

impl Via {
    /// Its name in `/v1/session`.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Open => "open",
            Via::Config => "config",
            Via::Issued => "token",
            Via::Jwt => "jwt",
        }
    }
}

/// Who a request is and what it may do: put in the request's extensions by the token check,
/// asked by every handler about each path it touches. Cloning it is cheap.
#[derive(Clone, Debug)]
pub struct Access(Arc<Principal>);

/// What [`Access`] holds.
#[derive(Debug)]
pub struct Principal {
    /// The role's rules bound to the variables.
    pub grant: Grant,
    /// The role's name.
    pub role: String,
    /// The role's rules as written.
    pub rules: Vec<Rule>,
    /// The variables bound (an issued token's, a configured token's, a JWT's claims).
    pub vars: Map<String, Value>,
    /// How the request proved who it is.
    pub via: Via,
    /// An issued token's id.
    pub token_id: Option<String>,
}

impl Access {
    /// Anyone, in local-only mode: everything.
    pub fn open() -> Access {
        static OPEN: std::sync::OnceLock<Access> = std::sync::OnceLock::new();
        OPEN.get_or_init(Access::everything).clone()
    }

    fn everything() -> Access {
        Access(Arc::new(Principal {
            grant: Grant::everything(&[Op::Read, Op::Write, Op::Admin]),
            role: "admin".into(),
            rules: vec![Rule {
                path: "/**".into(),
                allow: vec![Op::Read, Op::Write, Op::Admin],
            }],
            vars: Map::new(),
            via: Via::Open,
            token_id: None,
        }))
    }

    /// What it is.
    pub fn principal(&self) -> &Principal {
        &self.0
    }

    /// Whether `op` is allowed on `path`.
    pub fn may(&self, op: Op, path: &KeyPath) -> bool {
        self.0.grant.allows(op, path)
    }

    /// 403 `forbidden` unless `op` is allowed on `path`.
    ///
    /// # Errors
    /// As above.
    pub fn need(&self, op: Op, path: &KeyPath) -> Result<(), ApiError> {
        if self.may(op, path) {
            Ok(())
        } else {
            Err(ApiError::forbidden(op, Some(path), None))
        }
    }

    /// 403 `forbidden` unless `op` is allowed on every path of `prefix`'s subtree.
    ///
    /// # Errors
    /// As above.
    pub fn need_subtree(&self, op: Op, prefix: &KeyPath) -> Result<(), ApiError> {
        if self.0.grant.covers_subtree(op, prefix) {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                op,
                Some(prefix),
                Some("on the whole subtree"),
            ))
        }
    }

    /// 403 `forbidden` unless the request may administer the database (definitions, roles,
    /// tokens, backups).
    ///
    /// # Errors
    /// As above.
    pub fn need_admin(&self) -> Result<(), ApiError> {
        if self.0.grant.everywhere(Op::Admin) {
            Ok(())
        } else {
            Err(ApiError::forbidden(Op::Admin, None, None))
        }
    }

    /// The refusal of a request that its method and route alone refuse, before its handler
    /// looks at paths (and before its body is read or its media type checked): a write by a
    /// token that may write nowhere, an administration without admin. The handlers check each
    /// path as well; this keeps the answer of earlier builds' scopes.
    pub fn refuse_early(&self, method: &Method, route: &str) -> Option<ApiError> {
        let admin = route.starts_with("/v1/roles")
            || route.starts_with("/v1/tokens")
            || route == "/v1/backup"
            || route == "/v1/archive"
            || (matches!(*method, Method::PUT | Method::DELETE | Method::POST)
                && route.starts_with("/v1/namespaces/"));
        if admin && !self.everywhere(Op::Admin) {
            return Some(ApiError::forbidden(Op::Admin, None, None));
        }
        let write = match *method {
            Method::GET | Method::HEAD | Method::OPTIONS => false,
            // Reads many items.
            Method::POST => route != "/v1/get",
            _ => true,
        };
        if write && !self.0.grant.anywhere(Op::Write) {
            return Some(
                ApiError::forbidden(Op::Write, None, None).with_message("this token may only read"),
            );
        }
        None
    }

    /// `error` without the paths of items this token may not read ([`ApiError::hiding`]).
    pub fn hide(&self, error: ApiError) -> ApiError {
        if self.everywhere(Op::Read) {
            return error;
        }
        error.hiding(|path| {
            path.parse::<KeyPath>()
                .is_ok_and(|path| self.may(Op::Read, &path))
        })
    }

    /// What a filter may decide on for this token: `None` when it may read every path, else the
    /// check the store makes of each item a filter, a count or a filtered feed would read (it
    /// fails the request rather than decide on an item the token may not read).
    pub fn readable(&self) -> Option<pathdb_store::Readable> {
        if self.everywhere(Op::Read) {
            return None;
        }
        let access = self.clone();
        Some(pathdb_store::Readable(Arc::new(move |path| {
            access.may(Op::Read, path)
        })))
    }

    /// Whether `op` is allowed on every path.
    pub fn everywhere(&self, op: Op) -> bool {
        self.0.grant.everywhere(op)
    }

    /// Whether `op` may be allowed on `path` or somewhere below it.
    pub fn reaches(&self, op: Op, path: &KeyPath) -> bool {
        self.0.grant.reaches(op, path)
    }

    /// Whether `op` is allowed on every direct child of `parent`.
    pub fn covers_children(&self, op: Op, parent: &KeyPath) -> bool {
        self.0.grant.covers_children(op, parent)
    }

    /// Whether `op` is allowed on every path of `prefix`'s subtree.
    pub fn covers_subtree(&self, op: Op, prefix: &KeyPath) -> bool {
        self.0.grant.covers_subtree(op, prefix)
    }
}

/// One token from the config file or `PATHDB_TOKENS`: its role and variables.
#[derive(Clone)]
pub struct ConfiguredToken {
    /// The secret.
    pub token: String,
    /// The role (a built-in one for a `scope`).
    pub role: String,
    /// The variables its role's rules are bound to.
    pub vars: Map<String, Value>,
}

/// What the token check reads from the database: implemented by the store (see
/// [`crate::app`]), behind a trait so that the check needs no backend type.
pub trait AccessSource: Send + Sync {
    /// The role `name`.
    ///
    /// # Errors
    /// Storage failures.
    fn role(&self, name: &str) -> Result<Option<StoredRole>, pathdb_store::Error>;
    /// The issued token whose whole text is `presented`.
    ///
    /// # Errors
    /// Storage failures.
    fn find_token(&self, presented: &str) -> Result<Option<TokenInfo>, pathdb_store::Error>;
    /// Records that the token `id` was used this minute.
    fn touch_token(&self, id: &str);
    /// Whether reads never block (so the check may read right away).
    fn fast(&self) -> bool;
}

impl<B: pathdb_store::backend::Backend> AccessSource for pathdb_store::Store<B> {
    fn role(&self, name: &str) -> Result<Option<StoredRole>, pathdb_store::Error> {
        pathdb_store::Store::role(self, name)
    }
    fn find_token(&self, presented: &str) -> Result<Option<TokenInfo>, pathdb_store::Error> {
        pathdb_store::Store::find_token(self, presented)
    }
    fn touch_token(&self, id: &str) {
        let store = self.clone();
        let id = id.to_owned();
        // Off the request: one small write a minute per token, best effort.
        let touch = move || {
            if let Err(e) = store.touch_token(&id) {
                tracing::debug!(error = %e, "could not record a token's last use");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(touch)),
            Err(_) => touch(),
        }
    }
    fn fast(&self) -> bool {
        self.backend().fast_point_reads()
    }
}

/// A resolved issued token, as cached.
struct CachedToken {
    /// The whole token, compared in constant time with the presented one.
    token: Box<[u8]>,
    access: Access,
    /// When the entry must be read again ([`REVALIDATE`] after it was read).
    stale_at: Instant,
    /// When the token expires, on the monotonic clock (one clock read per request serves all
    /// three deadlines).
    expires: Option<Instant>,
    /// When its next use is to be recorded: the start of the minute after the last recorded.
    touch_due: Instant,
}

/// A role, as cached (`None`: no such role).
struct CachedRole {
    role: Option<CompiledRole>,
    read_at: Instant,
}

/// A verified JWT, as cached (by its whole text).
struct CachedJwt {
    access: Access,
    expires_at: Option<i64>,
    read_at: Instant,
}

/// The server's tokens, JWT verifier and the caches of what they resolve to. Its `Debug` shows
/// how many tokens there are, never the tokens. Cloning it is cheap (the caches are shared).
#[derive(Clone, Default)]
pub struct Auth {
    /// The configured tokens, each with its access made once when its role is a built-in one
    /// (a custom role is read from the database, and may change).
    configured: Arc<Vec<(ConfiguredToken, Option<Access>)>>,
    /// Whether a configured token has the form of an issued one (`pdb_<id>_...`): then a
    /// presented token of that form is compared with the configured ones too.
    issued_form_configured: bool,
    jwt: Option<JwtVerifier>,
    source: Option<Arc<dyn AccessSource>>,
    caches: Arc<Caches>,
}

#[derive(Default)]
struct Caches {
    /// Counts the forgets ([`Auth::forget_role`], [`Auth::forget_token`]): a resolution that read
    /// the store before one does not cache what it read (it may be what was just revoked).
    forgets: std::sync::atomic::AtomicU64,
    tokens: RwLock<HashMap<String, CachedToken, foldhash::fast::RandomState>>,
    roles: RwLock<HashMap<String, CachedRole, foldhash::fast::RandomState>>,
    jwts: Mutex<HashMap<Box<str>, CachedJwt, foldhash::fast::RandomState>>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("tokens", &self.configured.len())
            .field("jwt", &self.jwt.is_some())
            .finish_non_exhaustive()
    }
}

/// Why a request was refused before its handler.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Refusal {
    /// No bearer token: 401.
    MissingToken,
    /// A bearer token that is no token of this server's: 401.
    UnknownToken,
    /// An issued token past its expiry: 401.
    ExpiredToken,
    /// A JWT refused, and why: 401.
    Jwt(JwtRefusal),
    /// The database could not be read to resolve the token: 503.
    Unavailable(String),
}

impl Refusal {
    /// The refusal as an error (a 401's `WWW-Authenticate` is added by its response).
    pub fn error(self) -> ApiError {
        let unauthorized = |message: &str, reason| {
            ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
                .with_reason(Some(reason))
        };
        match self {
            Refusal::MissingToken => unauthorized("missing bearer token", "missing"),
            Refusal::UnknownToken => unauthorized("unknown token", "unknown_token"),
            Refusal::ExpiredToken => unauthorized("the token has expired", "expired"),
            Refusal::Jwt(refusal) => unauthorized(refusal.message(), refusal.reason()),
            Refusal::Unavailable(message) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                format!("could not resolve the token: {message}"),
            )
            .retry_after(1),
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut response = self.error().into_response();
        // RFC 9110 requires `WWW-Authenticate` on a 401: it names the scheme to use.
        if response.status() == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// A request whose token needs a store read that the check may not do itself (see the module's
/// docs): `crate::gate::Lookups` does it.
#[derive(Clone, Copy, Debug)]
pub struct Pending;

/// What the check made of a request's token.
pub enum Resolution {
    /// Who it is.
    Granted(Access),
    /// Refused.
    Refused(Refusal),
    /// A store read is needed, which may block.
    Pending,
}

impl Auth {
    /// Tokens and their built-in scopes; empty means local-only mode.
    pub fn new(tokens: HashMap<String, Scope>) -> Auth {
        Auth::configured(
            tokens
                .into_iter()
                .map(|(token, scope)| ConfiguredToken {
                    token,
                    role: scope.role().to_owned(),
                    vars: Map::new(),
                })
                .collect(),
            None,
        )
    }

    /// Configured tokens and a JWT verifier; with neither, local-only mode.
    pub fn configured(tokens: Vec<ConfiguredToken>, jwt: Option<JwtVerifier>) -> Auth {
        let issued_form_configured = tokens
            .iter()
            .any(|t| pathdb_store::token_id_of(&t.token).is_some());
        Auth {
            issued_form_configured,
            configured: Arc::new(
                tokens
                    .into_iter()
                    .map(|token| {
                        let access = builtin_role(&token.role).map(|role| {
                            access_of(&role, &token.role, token.vars.clone(), Via::Config, None)
                        });
                        (token, access)
                    })
                    .collect(),
            ),
            jwt,
            source: None,
            caches: Arc::default(),
        }
    }

    /// The same, reading roles and issued tokens from `source` (the app's store).
    pub fn with_source(&self, source: Arc<dyn AccessSource>) -> Auth {
        Auth {
            source: Some(source),
            ..self.clone()
        }
    }

    /// Whether requests must authenticate.
    pub fn enabled(&self) -> bool {
        !self.configured.is_empty() || self.jwt.is_some()
    }

    /// Forgets what the caches hold about the role `name` (after this server changed it).
    pub fn forget_role(&self, name: &str) {
        self.caches
            .forgets
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if let Ok(mut roles) = self.caches.roles.write() {
            roles.remove(name);
        }
        // Tokens and JWTs carry their role's grant: drop those of this role.
        if let Ok(mut tokens) = self.caches.tokens.write() {
            tokens.retain(|_, t| t.access.0.role != name);
        }
        if let Ok(mut jwts) = self.caches.jwts.lock() {
            jwts.retain(|_, t| t.access.0.role != name);
        }
    }

    /// Forgets the issued token `id` (after this server revoked it).
    pub fn forget_token(&self, id: &str) {
        self.caches
            .forgets
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if let Ok(mut tokens) = self.caches.tokens.write() {
            tokens.remove(id);
        }
    }

    /// Whether resolving `authorization` means verifying a JWT not cached (a signature check,
    /// and perhaps a fetch of the key set): work for the blocking pool, not an async worker.
    pub fn verifies_jwt(&self, authorization: Option<&HeaderValue>) -> bool {
        if self.jwt.is_none() {
            return false;
        }
        let Some(token) = authorization.and_then(bearer) else {
            return false;
        };
        if token.bytes().filter(|b| *b == b'.').count() != 2 {
            return false;
        }
        self.caches.jwts.lock().map_or(true, |jwts| {
            jwts.get(token)
                .is_none_or(|cached| cached.read_at.elapsed() >= REVALIDATE)
        })
    }

    /// Resolves the request's `Authorization` header; `may_block`: whether store reads may be
    /// done whatever the backend (on the blocking pool).
    pub fn resolve(&self, authorization: Option<&HeaderValue>, may_block: bool) -> Resolution {
        if !self.enabled() {
            return Resolution::Granted(Access::open());
        }
        // The scheme is case-insensitive (RFC 9110 section 11.1).
        let Some(token) = authorization.and_then(bearer) else {
            return Resolution::Refused(Refusal::MissingToken);
        };
        let may_read = may_block || self.source.as_ref().is_some_and(|s| s.fast());
        let issued = pathdb_store::token_id_of(token);
        if let Some((configured, access)) = self.configured_token(token, issued.is_some()) {
            if let Some(access) = access {
                return Resolution::Granted(access.clone());
            }
            return self.resolve_role(
                &configured.role,
                configured.vars.clone(),
                Via::Config,
                None,
                may_read,
            );
        }
        if let Some(id) = issued {
            return self.resolve_issued(id, token, may_read);
        }
        // Three dot-separated parts, the signature possibly empty (`alg: none`, refused there).
        if let Some(jwt) = &self.jwt
            && (JwtVerifier::looks_like_jwt(token) || token.split('.').count() == 3)
        {
            return self.resolve_jwt(jwt, token, may_block, may_read);
        }
        Resolution::Refused(Refusal::UnknownToken)
    }

    /// The configured token `presented` is. Every configured token is compared, each in
    /// constant time, and the loop does not stop at a match, so the time taken does not tell
    /// how much of a guess was right or which token it resembled. (A token's length can still
    /// show; tokens should be long random strings.)
    fn configured_token(
        &self,
        presented: &str,
        issued_form: bool,
    ) -> Option<&(ConfiguredToken, Option<Access>)> {
        // An issued token's form, where no configured token has it: none of them.
        if issued_form && !self.issued_form_configured {
            return None;
        }
        let mut found = None;
        for configured in self.configured.iter() {
            if same_secret(configured.0.token.as_bytes(), presented.as_bytes()) {
                found = Some(configured);
            }
        }
        found
    }

    fn resolve_issued(&self, id: &str, token: &str, may_read: bool) -> Resolution {
        let now = Instant::now();
        if let Ok(tokens) = self.caches.tokens.read()
            && let Some(cached) = tokens.get(id)
            && now < cached.stale_at
        {
            if !same_secret(&cached.token, token.as_bytes()) {
                return Resolution::Refused(Refusal::UnknownToken);
            }
            if cached.expires.is_some_and(|t| now >= t) {
                return Resolution::Refused(Refusal::ExpiredToken);
            }
            let access = cached.access.clone();
            if now >= cached.touch_due {
                drop(tokens);
                self.touched(id);
            }
            return Resolution::Granted(access);
        }
        if !may_read {
            return Resolution::Pending;
        }
        let Some(source) = &self.source else {
            return Resolution::Refused(Refusal::UnknownToken);
        };
        let forgets = self
            .caches
            .forgets
            .load(std::sync::atomic::Ordering::SeqCst);
        let info = match source.find_token(token) {
            Ok(Some(info)) => info,
            Ok(None) => return Resolution::Refused(Refusal::UnknownToken),
            Err(e) => return Resolution::Refused(Refusal::Unavailable(e.to_string())),
        };
        let access = match self.resolve_role(
            &info.role,
            info.vars.clone(),
            Via::Issued,
            Some(info.id.clone()),
            true,
        ) {
            Resolution::Granted(access) => access,
            other => return other,
        };
        let (wall, now) = (now_micros(), Instant::now());
        let at = |micros: i64| {
            let ahead = u64::try_from(micros.saturating_sub(wall)).unwrap_or(0);
            now.checked_add(Duration::from_micros(ahead)).unwrap_or(now)
        };
        let expires = info.expires_at.map(|t| at(t.0));
        // A use in a minute after the one recorded is recorded now.
        let recorded = info.last_used_at.map_or(i64::MIN, |t| t.0);
        let touch_due = if recorded >= minute_of(wall) {
            at(minute_of(wall) + MINUTE)
        } else {
            now
        };
        let unchanged = || {
            self.caches
                .forgets
                .load(std::sync::atomic::Ordering::SeqCst)
                == forgets
        };
        if let Ok(mut tokens) = self.caches.tokens.write()
            && unchanged()
        {
            tokens.insert(
                info.id.clone(),
                CachedToken {
                    token: token.as_bytes().into(),
                    access: access.clone(),
                    stale_at: now + REVALIDATE,
                    expires,
                    touch_due,
                },
            );
        }
        if expires.is_some_and(|t| now >= t) {
            return Resolution::Refused(Refusal::ExpiredToken);
        }
        if now >= touch_due {
            self.touched(&info.id);
        }
        Resolution::Granted(access)
    }

    /// Records the token `id`'s use in this minute, once: the next is due when the next minute
    /// starts.
    fn touched(&self, id: &str) {
        let wall = now_micros();
        let next = Instant::now()
            + Duration::from_micros(u64::try_from(minute_of(wall) + MINUTE - wall).unwrap_or(0));
        if let Ok(mut tokens) = self.caches.tokens.write()
            && let Some(cached) = tokens.get_mut(id)
        {
            if Instant::now() < cached.touch_due {
                return;
            }
            cached.touch_due = next;
        }
        if let Some(source) = &self.source {
            source.touch_token(id);
        }
    }

    /// A JWT: from the cache, else verified, which may block (a key set refetched for an
    /// unknown key id), so only where `may_block`.
    fn resolve_jwt(
        &self,
        jwt: &JwtVerifier,
        token: &str,
        may_block: bool,
        may_read: bool,
    ) -> Resolution {
        let now = now_micros();
        if let Ok(jwts) = self.caches.jwts.lock()
            && let Some(cached) = jwts.get(token)
            && cached.read_at.elapsed() < REVALIDATE
        {
            if cached.expires_at.is_some_and(|t| t <= now) {
                return Resolution::Refused(Refusal::Jwt(JwtRefusal::Expired));
            }
            return Resolution::Granted(cached.access.clone());
        }
        if !may_block {
            return Resolution::Pending;
        }
        let verified = match jwt.verify(token) {
            Ok(verified) => verified,
            Err(refusal) => return Resolution::Refused(Refusal::Jwt(refusal)),
        };
        let access = match self.resolve_role(
            &verified.role,
            verified.claims.clone(),
            Via::Jwt,
            None,
            may_read,
        ) {
            Resolution::Granted(access) => access,
            other => return other,
        };
        if let Ok(mut jwts) = self.caches.jwts.lock() {
            if jwts.len() >= MAX_CACHED_JWTS {
                jwts.clear();
            }
            jwts.insert(
                token.into(),
                CachedJwt {
                    access: access.clone(),
                    expires_at: verified.expires_at,
                    read_at: Instant::now(),
                },
            );
        }
        Resolution::Granted(access)
    }

    /// The access of role `name` bound to `vars`. A role that does not exist grants nothing
    /// (its tokens stay, and work again if a role of that name is made).
    fn resolve_role(
        &self,
        name: &str,
        vars: Map<String, Value>,
        via: Via,
        token_id: Option<String>,
        may_read: bool,
    ) -> Resolution {
        let role = match self.role(name, may_read) {
            Ok(Some(role)) => role,
            Ok(None) => return Resolution::Pending,
            Err(refusal) => return Resolution::Refused(refusal),
        };
        Resolution::Granted(match role {
            Some(role) => access_of(&role, name, vars, via, token_id),
            // A role that does not exist grants nothing.
            None => Access(Arc::new(Principal {
                grant: Grant::default(),
                role: name.to_owned(),
                rules: Vec::new(),
                vars,
                via,
                token_id,
            })),
        })
    }

    /// The role `name`, compiled: `Ok(None)` when a store read is needed that may not be done
    /// here; `Ok(Some(None))` when there is no such role.
    fn role(&self, name: &str, may_read: bool) -> Result<Option<Option<CompiledRole>>, Refusal> {
        if let Some(role) = builtin_role(name) {
            return Ok(Some(Some(role)));
        }
        if let Ok(roles) = self.caches.roles.read()
            && let Some(cached) = roles.get(name)
            && cached.read_at.elapsed() < REVALIDATE
        {
            return Ok(Some(cached.role.clone()));
        }
        if !may_read {
            return Ok(None);
        }
        let Some(source) = &self.source else {
            return Ok(Some(None));
        };
        let forgets = self
            .caches
            .forgets
            .load(std::sync::atomic::Ordering::SeqCst);
        let stored = source
            .role(name)
            .map_err(|e| Refusal::Unavailable(e.to_string()))?;
        let role = stored.map(|stored| {
            // A stored role compiled when it was written; one that no longer does (a later
            // build's stricter rules) grants nothing rather than failing every request.
            let compiled = stored.role.compile().unwrap_or_default();
            Arc::new((stored, compiled))
        });
        if let Ok(mut roles) = self.caches.roles.write()
            && self
                .caches
                .forgets
                .load(std::sync::atomic::Ordering::SeqCst)
                == forgets
        {
            roles.insert(
                name.to_owned(),
                CachedRole {
                    role: role.clone(),
                    read_at: Instant::now(),
                },
            );
        }
        Ok(Some(role))
    }
}

/// A compiled role.
type CompiledRole = Arc<(StoredRole, Vec<CompiledRule>)>;

/// The built-in role `name`, compiled once.
fn builtin_role(name: &str) -> Option<CompiledRole> {
    static BUILTIN: std::sync::OnceLock<Vec<CompiledRole>> = std::sync::OnceLock::new();
    let all = BUILTIN.get_or_init(|| {
        pathdb_store::BUILTIN_ROLES
            .iter()
            .filter_map(|(name, _)| pathdb_store::builtin_role(name))
            .map(|stored| {
                let compiled = stored.role.compile().unwrap_or_default();
                Arc::new((stored, compiled))
            })
            .collect()
    });
    all.iter().find(|role| role.0.name == name).cloned()
}

/// What `role` bound to `vars` allows.
fn access_of(
    role: &CompiledRole,
    name: &str,
    vars: Map<String, Value>,
    via: Via,
    token_id: Option<String>,
) -> Access {
    let (stored, compiled) = role.as_ref();
    Access(Arc::new(Principal {
        grant: Grant::new(compiled, &|name| lookup(&vars, name)),
        role: name.to_owned(),
        rules: stored.role.rules.clone(),
        vars,
        via,
        token_id,
    }))
}

/// A variable's value: a member of `vars`, dotted names reaching into objects (`org.id`).
fn lookup(vars: &Map<String, Value>, name: &str) -> Option<Value> {
    if let Some(value) = vars.get(name) {
        return Some(value.clone());
    }
    let mut parts = name.split('.');
    let mut value = vars.get(parts.next()?)?;
    for part in parts {
        value = value.get(part)?;
    }
    Some(value.clone())
}

fn now_micros() -> i64 {
    pathdb_store::Timestamp::now().0
}

/// The token of an `Authorization: Bearer <token>` value (the scheme is case-insensitive, RFC
/// 9110 section 11.1).
fn bearer(value: &HeaderValue) -> Option<&str> {
    // One pass over the bytes: visible ASCII (a token never has more).
    let (scheme, token) = value.to_str().ok()?.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// A minute, in microseconds: a token's last use is recorded to the minute.
const MINUTE: i64 = 60_000_000;

/// The start of the minute of `micros`.
fn minute_of(micros: i64) -> i64 {
    micros - micros.rem_euclid(MINUTE)
}

/// Whether a presented secret is the cached one, in time that depends on the length only:
/// eight bytes at a time, every byte compared (subtle's `ct_eq` goes a byte at a time, a tenth
/// of a get's checks).
fn same_secret(known: &[u8], presented: &[u8]) -> bool {
    if known.len() != presented.len() {
        return false;
    }
    let (known_words, known_rest) = known.as_chunks::<8>();
    let (presented_words, presented_rest) = presented.as_chunks::<8>();
    let mut diff = 0u64;
    for (a, b) in known_words.iter().zip(presented_words) {
        diff |= u64::from_ne_bytes(*a) ^ u64::from_ne_bytes(*b);
    }
    for (a, b) in known_rest.iter().zip(presented_rest) {
        diff |= u64::from(a ^ b);
    }
    bool::from(diff.ct_eq(&0))
}

#[cfg(test)]
mod test;
