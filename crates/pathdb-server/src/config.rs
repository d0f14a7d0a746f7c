//! Server settings: a TOML file, environment variables and flags, in increasing precedence.

use crate::auth::Scope;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The default listen address.
pub const DEFAULT_ADDR: &str = "127.0.0.1:7070";

/// `pathdb serve` settings.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Listen address.
    pub addr: Option<SocketAddr>,
    /// Database file.
    pub db: Option<PathBuf>,
    /// Access tokens.
    #[serde(default)]
    pub tokens: Vec<TokenConfig>,
    /// Web origins (`https://app.example:8443`) whose pages may call the API from a browser,
    /// besides the server's own; see [`crate::AllowedOrigins`].
    #[serde(default)]
    pub cors_origins: Vec<String>,
    /// Roles made at start where no role of the name exists (docs/access.md); a role changed
    /// or deleted at runtime is left as it is.
    #[serde(default)]
    pub roles: Vec<RoleConfig>,
    /// Signed tokens (JWTs) from an identity provider.
    #[serde(default)]
    pub jwt: Option<JwtSettings>,
}

/// A role to seed at start.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleConfig {
    /// Its name.
    pub name: String,
    /// Its rules.
    pub rules: Vec<pathdb_store::Rule>,
    /// For people.
    #[serde(default)]
    pub description: Option<String>,
}

/// How JWTs are verified (`[jwt]` in the config file, or the `serve --jwt-*` flags).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JwtSettings {
    /// A JWK Set: a file, or an `http://` or `https://` URL.
    pub jwks: Option<String>,
    /// A file holding an HS256 secret (development).
    pub secret_file: Option<PathBuf>,
    /// The required `iss`.
    pub issuer: Option<String>,
    /// The required `aud`.
    pub audience: Option<String>,
    /// The claim naming the role (default `role`).
    pub role_claim: Option<String>,
    /// Seconds between reloads of the JWK Set (default 60).
    pub refresh_seconds: Option<u64>,
}

impl JwtSettings {
    /// The verifier these settings describe (`None`: no JWK Set and no secret).
    ///
    /// # Errors
    /// The keys could not be loaded.
    pub fn verifier(&self) -> Result<Option<crate::jwt::JwtVerifier>, ConfigError> {
        if self.jwks.is_none() && self.secret_file.is_none() {
            return Ok(None);
        }
        let mut config = crate::jwt::JwtConfig {
            jwks: self.jwks.clone(),
            secret_file: self.secret_file.clone(),
            issuer: self.issuer.clone(),
            audience: self.audience.clone(),
            ..crate::jwt::JwtConfig::default()
        };
        if let Some(claim) = &self.role_claim {
            config.role_claim = claim.clone();
        }
        if let Some(seconds) = self.refresh_seconds {
            config.refresh = std::time::Duration::from_secs(seconds);
        }
        if config.audience.is_none() {
            tracing::warn!(
                "JWTs are accepted without an audience check (--jwt-audience): tokens the identity provider issued to other applications work here too"
            );
        }
        if config
            .jwks
            .as_deref()
            .is_some_and(|j| j.starts_with("http://"))
        {
            tracing::warn!(
                "the JWK Set is fetched over plain http: whoever sits on the path can replace the keys"
            );
        }
        Ok(Some(crate::jwt::JwtVerifier::new(config)?))
    }
}

/// One access token. Its `Debug` leaves the secret out, so settings can be logged.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// The secret sent as `Authorization: Bearer <token>`.
    pub token: String,
    /// `read`, `read-write` or `admin`: a built-in role (give this or `role`).
    #[serde(default)]
    pub scope: Option<Scope>,
    /// A role by name (give this or `scope`).
    #[serde(default)]
    pub role: Option<String>,
    /// The values of the role's variables (`{ team = 7 }`).
    #[serde(default)]
    pub vars: serde_json::Map<String, serde_json::Value>,
}

impl std::fmt::Debug for TokenConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenConfig")
            .field("token", &"<redacted>")
            .field("scope", &self.scope)
            .field("role", &self.role)
            .field("vars", &self.vars)
            .finish()
    }
}

/// Why the settings could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid TOML for these settings.
    #[error("invalid config file {path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: toml::de::Error,
    },
    /// `PATHDB_TOKENS` is malformed.
    #[error("invalid PATHDB_TOKENS (expected token=scope,...): {0}")]
    Env(String),
    /// Tokens must not be empty.
    #[error("a token cannot be empty")]
    EmptyToken,
    /// A CORS origin is not `http://` or `https://` followed by a host and optional port.
    #[error(transparent)]
    InvalidOrigin(#[from] crate::InvalidOrigin),
    /// A token with neither or both of `scope` and `role`.
    #[error("token {0}: give one of scope or role")]
    TokenRole(usize),
    /// The JWT keys could not be loaded.
    #[error(transparent)]
    Jwt(#[from] crate::jwt::JwtSetupError),
}

impl ServerConfig {
    /// Reads a TOML file.
    ///
    /// # Errors
    /// The file is unreadable or invalid.
    pub fn from_file(path: &Path) -> Result<ServerConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.into(),
            source,
        })?;
        toml::from_str(&text).map_err(|source| ConfigError::Parse {
            path: path.into(),
            source,
        })
    }

    /// Adds tokens from `PATHDB_TOKENS`-style text: `secret=read-write,other=read,boss=admin`.
    ///
    /// # Errors
    /// Malformed text.
    pub fn add_env_tokens(&mut self, text: &str) -> Result<(), ConfigError> {
        for (n, entry) in text
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .enumerate()
        {
            // The entry is not quoted in the error: without its '=' it may be a bare secret.
            let (token, scope) = entry
                .split_once('=')
                .ok_or_else(|| ConfigError::Env(format!("entry {} has no '=scope'", n + 1)))?;
            let scope: Scope = scope.parse().map_err(ConfigError::Env)?;
            self.tokens.push(TokenConfig {
                token: token.to_owned(),
                scope: Some(scope),
                role: None,
                vars: serde_json::Map::new(),
            });
        }
        Ok(())
    }

    /// The allowed web origins.
    ///
    /// # Errors
    /// [`ConfigError::InvalidOrigin`].
    pub fn allowed_origins(&self) -> Result<crate::AllowedOrigins, ConfigError> {
        Ok(crate::AllowedOrigins::new(&self.cors_origins)?)
    }

    /// The configured tokens, each with its role.
    ///
    /// # Errors
    /// An empty token, a token with neither or both of scope and role.
    pub fn configured_tokens(&self) -> Result<Vec<crate::ConfiguredToken>, ConfigError> {
        self.tokens
            .iter()
            .enumerate()
            .map(|(n, t)| {
                if t.token.is_empty() {
                    return Err(ConfigError::EmptyToken);
                }
                let role = match (&t.scope, &t.role) {
                    (Some(scope), None) => scope.role().to_owned(),
                    (None, Some(role)) => role.clone(),
                    _ => return Err(ConfigError::TokenRole(n + 1)),
                };
                Ok(crate::ConfiguredToken {
                    token: t.token.clone(),
                    role,
                    vars: t.vars.clone(),
                })
            })
            .collect()
    }
}

/// Makes each of `roles` that does not exist yet in `store`; returns the names made.
///
/// # Errors
/// An invalid role, storage failures.
pub fn seed_roles<B: pathdb_store::backend::Backend>(
    store: &pathdb_store::Store<B>,
    roles: &[RoleConfig],
) -> Result<Vec<String>, pathdb_store::Error> {
    let mut made = Vec::new();
    for role in roles {
        let value = pathdb_store::Role {
            rules: role.rules.clone(),
            description: role.description.clone(),
        };
        match store.put_role(
            &role.name,
            &value,
            Some(pathdb_store::Condition::MustNotExist),
        ) {
            Ok(_) => made.push(role.name.clone()),
            // Made before, perhaps changed since: the database's copy stands.
            Err(pathdb_store::Error::RoleConditionFailed { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(made)
}

#[cfg(test)]
mod test;
