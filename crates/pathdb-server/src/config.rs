//! Server settings: a TOML file, environment variables and flags, in increasing precedence.

use crate::auth::Scope;
use serde::Deserialize;
use std::collections::HashMap;
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
}

/// One access token. Its `Debug` leaves the secret out, so settings can be logged.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// The secret sent as `Authorization: Bearer <token>`.
    pub token: String,
    /// `read`, `read-write` or `admin` (also changes namespace definitions).
    pub scope: Scope,
}

impl std::fmt::Debug for TokenConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenConfig")
            .field("token", &"<redacted>")
            .field("scope", &self.scope)
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
                scope,
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

    /// The token table.
    ///
    /// # Errors
    /// An empty token.
    pub fn token_map(&self) -> Result<HashMap<String, Scope>, ConfigError> {
        self.tokens
            .iter()
            .map(|t| {
                if t.token.is_empty() {
                    Err(ConfigError::EmptyToken)
                } else {
                    Ok((t.token.clone(), t.scope))
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod test;
