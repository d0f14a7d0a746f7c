//! Roles and issued tokens (access/, written by write/access.rs).

use crate::access::roles::{self, Role, StoredRole};
use crate::access::tokens::{self, NewToken, TokenInfo};
use crate::backend::Backend;
use crate::model::error::{Condition, Error};
use crate::model::item::Timestamp;
use crate::store::Store;
use crate::write::access;

impl<B: Backend> Store<B> {
    /// The role `name`: a built-in one, or as stored now.
    ///
    /// # Errors
    /// Storage failures.
    pub fn role(&self, name: &str) -> Result<Option<StoredRole>, Error> {
        roles::read(&self.db.backend.reader()?, name)
    }

    /// Every role, the built-in ones included, by name.
    ///
    /// # Errors
    /// Storage failures.
    pub fn roles(&self) -> Result<Vec<StoredRole>, Error> {
        roles::list(&self.db.backend.reader()?)
    }

    /// Creates or replaces the role `name`, if `condition` holds for the one stored; returns it
    /// and whether it is new. Its rules apply to every token of the role from the next time the
    /// token's grant is read (a server caches it briefly: docs/access.md).
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] (the name, a rule), [`Error::BuiltinRole`],
    /// [`Error::RoleConditionFailed`], storage failures.
    pub fn put_role(
        &self,
        name: &str,
        role: &Role,
        condition: Option<Condition>,
    ) -> Result<(StoredRole, bool), Error> {
        access::put_role(&self.db, name, role, condition)
    }

    /// Deletes the role `name` if `condition` holds; returns it (`None`: there was none). Its
    /// tokens stay but allow nothing while no role has the name.
    ///
    /// # Errors
    /// [`Error::BuiltinRole`], [`Error::RoleConditionFailed`], storage failures.
    pub fn delete_role(
        &self,
        name: &str,
        condition: Option<Condition>,
    ) -> Result<Option<StoredRole>, Error> {
        access::delete_role(&self.db, name, condition)
    }

    /// Issues a token; returns it as listed and its whole text, which is shown only here (only
    /// its hash is stored).
    ///
    /// # Errors
    /// [`Error::InvalidRequest`] (variables, an expiry in the past), [`Error::UnknownRole`],
    /// storage failures.
    pub fn create_token(&self, token: &NewToken) -> Result<(TokenInfo, String), Error> {
        access::create_token(&self.db, token)
    }

    /// Every issued token not revoked (expired ones included), by id, without secrets.
    ///
    /// # Errors
    /// Storage failures.
    pub fn tokens(&self) -> Result<Vec<TokenInfo>, Error> {
        tokens::list(&self.db.backend.reader()?)
    }

    /// The issued token `id`, without its secret.
    ///
    /// # Errors
    /// Storage failures.
    pub fn token(&self, id: &str) -> Result<Option<TokenInfo>, Error> {
        tokens::read(&self.db.backend.reader()?, id)
    }

    /// The issued token whose whole text is `presented`, if it is one and not revoked. An expired
    /// one is returned too: see [`TokenInfo::expired`].
    ///
    /// # Errors
    /// Storage failures.
    pub fn find_token(&self, presented: &str) -> Result<Option<TokenInfo>, Error> {
        tokens::find(&self.db.backend.reader()?, presented)
    }

    /// Revokes the token `id`; whether there was one to revoke.
    ///
    /// # Errors
    /// Storage failures.
    pub fn revoke_token(&self, id: &str) -> Result<bool, Error> {
        access::revoke_token(&self.db, id)
    }

    /// Records that the token `id` was used now, to the minute: one write per token per minute
    /// at most; nothing for a revoked token.
    ///
    /// # Errors
    /// Storage failures.
    pub fn touch_token(&self, id: &str) -> Result<(), Error> {
        let now = self.db.now();
        let minute = Timestamp(now - now.rem_euclid(60_000_000));
        access::touch_token(&self.db, id, minute)
    }

    /// The current time of the store's clock.
    pub fn now(&self) -> Timestamp {
        Timestamp(self.db.now())
    }
}
